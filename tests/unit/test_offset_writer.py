"""The offset writer's order of requests and its verdicts, on a broker model that loses racing
first commits the way RocketMQ 5.3.3 does (fact sheet §9.1). The real brokers: see
tests/integration/test_offset_writer.py."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import RequestCode, ResponseCode
from console.rocketmq.errors import BrokerError, ConnectError
from console.rocketmq.models import ClusterInfo
from console.services.apply.offset_writer import (
    OffsetWrite,
    OffsetWriter,
    WriteOutcome,
    WriteProgress,
    WriteResult,
)

PREVIOUSLY_RESET = "Offset has been previously reset"
Table = tuple[str, str, str]  # broker, topic, group


class RacyBroker:
    """ConsumerOffsetManager.commitOffset as 5.3.3 has it: get the topic@group table, and when
    there is none, make one and put it, with other requests running in between."""

    def __init__(self) -> None:
        self.tables: dict[Table, dict[int, int]] = {}
        self.pending_reset: dict[tuple[Table, int], int] = {}
        self.down: set[str] = set()
        self.busy_answers = 0  # the next n updates are refused as busy
        self.in_flight = 0
        self.most_in_flight = 0
        self.log: list[tuple[str, Table, int]] = []  # ("update" | "answer" | "query", table, q)

    async def _request(self, addr: str) -> None:
        if addr in self.down:
            raise ConnectError(addr, "connection refused")
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await asyncio.sleep(0)
        self.in_flight -= 1

    async def update_consumer_offset(
        self, addr: str, group: str, topic: str, queue_id: int, offset: int
    ) -> str | None:
        table = (addr, topic, group)
        self.log.append(("update", table, queue_id))
        await self._request(addr)
        if self.busy_answers:
            self.busy_answers -= 1
            raise BrokerError(
                addr, RequestCode.UPDATE_CONSUMER_OFFSET, ResponseCode.SYSTEM_BUSY, ""
            )
        try:
            if (table, queue_id) in self.pending_reset:
                return PREVIOUSLY_RESET
            offsets = self.tables.get(table)
            if offsets is None:
                offsets = {}
                await asyncio.sleep(0)  # another request's table may be put meanwhile ...
                self.tables[table] = offsets  # ... and this one replaces it
            offsets[queue_id] = offset
            return None
        finally:
            self.log.append(("answer", table, queue_id))

    async def cluster_info(self) -> ClusterInfo:
        """The writer asks which addresses are slaves first; this model has none."""
        return ClusterInfo(brokers={}, clusters={})

    async def query_consumer_offset(
        self, addr: str, group: str, topic: str, queue_id: int
    ) -> int | None:
        table = (addr, topic, group)
        self.log.append(("query", table, queue_id))
        await self._request(addr)
        if (table, queue_id) in self.pending_reset:
            return self.pending_reset[(table, queue_id)]
        return self.tables.get(table, {}).get(queue_id)


def writer(broker: RacyBroker, **kw: Any) -> OffsetWriter:
    return OffsetWriter(cast(AdminClient, broker), **kw)


def writes(addr: str, group: str, queues: int, topic: str = "t") -> list[OffsetWrite]:
    return [OffsetWrite(addr, group, topic, q, 100 + q) for q in range(queues)]


async def test_the_model_loses_racing_first_commits() -> None:
    """Without the writer: parallel first commits of one table lose all but one queue's offset
    (the model must show the bug, or the next tests prove nothing)."""
    broker = RacyBroker()
    await asyncio.gather(
        *(
            broker.update_consumer_offset(w.broker_addr, w.group, w.topic, w.queue_id, w.offset)
            for w in writes("a:1", "g", 8)
        )
    )
    assert len(broker.tables[("a:1", "t", "g")]) < 8


async def test_every_queue_of_new_groups_is_written_and_verified() -> None:
    broker = RacyBroker()
    batch = [
        *writes("a:1", "g1", 50),
        *writes("b:1", "g1", 50),
        *writes("a:1", "g2", 50),
        *writes("a:1", "g1", 5, "other"),
    ]
    report = await writer(broker).write(batch)
    assert report.ok, report.summary()
    assert [r.write for r in report.results] == batch  # in the order given
    assert all(r.stored == r.write.offset for r in report.results)
    for w in batch:
        assert broker.tables[w.table][w.queue_id] == w.offset


async def test_one_queue_goes_alone_until_the_broker_answered_it() -> None:
    broker = RacyBroker()
    batch = [*writes("a:1", "g1", 20), *writes("a:1", "g2", 20)]
    await writer(broker).write(batch)
    for table in {w.table for w in batch}:
        events = [(kind, q) for kind, t, q in broker.log if t == table]
        first_answer = events.index(("answer", events[0][1]))
        assert [k for k, _ in events[:first_answer]] == ["update"]
        # Read-backs start once every update of the table is answered.
        last_answer = max(i for i, (k, _) in enumerate(events) if k == "answer")
        first_query = min(i for i, (k, _) in enumerate(events) if k == "query")
        assert first_query > last_answer


async def test_requests_in_flight_are_bounded() -> None:
    broker = RacyBroker()
    await writer(broker, in_flight=7).write(
        [w for g in range(20) for w in writes("a:1", f"g{g}", 10)]
    )
    assert broker.most_in_flight == 7


async def test_a_pending_reset_is_reported_as_kept_with_the_remark() -> None:
    broker = RacyBroker()
    await writer(broker).write(writes("a:1", "g", 2))
    broker.pending_reset[(("a:1", "t", "g"), 0)] = 7
    report = await writer(broker).write(
        [OffsetWrite("a:1", "g", "t", 0, 50), OffsetWrite("a:1", "g", "t", 1, 51)]
    )
    kept, verified = report.results
    assert kept.outcome is WriteOutcome.KEPT_OTHER
    assert (kept.stored, kept.remark) == (7, PREVIOUSLY_RESET)
    assert kept.describe() == f"g on t:0 at a:1: holds 7, not 50 ({PREVIOUSLY_RESET})"
    assert verified.outcome is WriteOutcome.VERIFIED
    assert not report.ok
    assert report.summary().startswith("1 of 2 queues verified; 1 not: g on t:0")


async def test_a_refused_first_write_hands_the_lead_to_the_next_queue() -> None:
    broker = RacyBroker()
    broker.busy_answers = 2
    report = await writer(broker).write(writes("a:1", "g", 30))
    assert [r.outcome for r in report.results[:2]] == [WriteOutcome.FAILED] * 2
    error = report.results[0].error
    assert isinstance(error, BrokerError)
    assert error.code == ResponseCode.SYSTEM_BUSY
    assert all(r.outcome is WriteOutcome.VERIFIED for r in report.results[2:])
    assert broker.tables[("a:1", "t", "g")] == {q: 100 + q for q in range(2, 30)}


async def test_a_broker_that_does_not_answer_fails_its_queues_unsent() -> None:
    broker = RacyBroker()
    broker.down.add("b:1")
    report = await writer(broker).write([*writes("b:1", "g", 4), *writes("a:1", "g", 4)])
    down, up = report.results[:4], report.results[4:]
    assert all(r.outcome is WriteOutcome.FAILED for r in down)
    assert all(isinstance(r.error, ConnectError) for r in down)
    assert [r.sent for r in down] == [True, False, False, False]
    assert down[1].describe().startswith("g on t:1 at b:1: not sent: cannot connect to b:1")
    assert all(r.outcome is WriteOutcome.VERIFIED for r in up)
    assert [kind for kind, t, _ in broker.log if t[0] == "b:1"] == ["update"]


async def test_results_and_progress_come_as_they_are_known() -> None:
    broker = RacyBroker()
    seen: list[WriteResult] = []
    progress: list[WriteProgress] = []
    batch = [*writes("a:1", "g", 10), *writes("b:1", "g", 10)]
    report = await writer(broker, on_progress=progress.append).write(batch, on_result=seen.append)
    assert sorted(seen, key=lambda r: batch.index(r.write)) == list(report.results)
    assert progress[0] == WriteProgress(20, 0, 0)
    assert progress[-1] == WriteProgress(20, 20, 20)
    assert progress[-1].finished
    assert all(a.reported <= b.reported for a, b in zip(progress, progress[1:], strict=False))

    streamed = [r async for r in writer(RacyBroker()).results(batch)]
    assert sorted(r.write.queue_id + 100 * (r.write.broker_addr == "b:1") for r in streamed) == (
        list(range(10)) + list(range(100, 110))
    )


async def test_leaving_the_stream_early_stops_the_requests() -> None:
    broker = RacyBroker()
    batch = [w for g in range(20) for w in writes("a:1", f"g{g}", 50)]
    stream = writer(broker, in_flight=1).results(batch)
    async for _ in stream:
        break
    await stream.aclose()  # type: ignore[attr-defined]
    sent = sum(1 for kind, _, _ in broker.log if kind != "answer")
    await asyncio.sleep(0.01)
    assert sum(1 for kind, _, _ in broker.log if kind != "answer") == sent < 2 * len(batch)


async def test_a_queue_written_twice_is_refused_before_anything_is_sent() -> None:
    broker = RacyBroker()
    twice = [OffsetWrite("a:1", "g", "t", 3, 1), OffsetWrite("a:1", "g", "t", 3, 2)]
    with pytest.raises(ValueError, match="g on t:3 at a:1 is written twice"):
        await writer(broker).write(twice)
    assert broker.log == []
