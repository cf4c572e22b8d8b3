"""The offset writer against the sandbox's two 5.3.3 brokers: hundreds of first commits of a new
group in parallel all land, and a commit the broker drops is reported as such."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import ResponseCode
from console.rocketmq.errors import BrokerError, ConnectError
from console.rocketmq.models import MessageQueue
from console.services.apply.offset_writer import (
    OffsetWrite,
    OffsetWriter,
    WriteOutcome,
    WriteProgress,
    WriteResult,
)
from tests.support.sends import indexed

pytestmark = pytest.mark.integration

QUEUES_PER_BROKER = 128
PREVIOUSLY_RESET = "Offset has been previously reset"


def _name(kind: str) -> str:
    return f"it-writer-{kind}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
async def admin(sandbox: Any) -> Any:
    async with AdminClient(sandbox.namesrv_addr, timeout=10) as client:
        yield client


async def _topic_and_group(admin: AdminClient, addrs: list[str], queues: int) -> tuple[str, str]:
    topic, group = _name("topic"), _name("group")
    for addr in addrs:
        await admin.create_topic(addr, topic, read_queues=queues, write_queues=queues)
        await admin.create_group(addr, group)
    return topic, group


async def test_hundreds_of_first_commits_of_a_new_group_all_land(
    admin: AdminClient, sandbox: Any
) -> None:
    brokers: dict[str, str] = dict(sandbox.broker_addrs)
    topic, group = await _topic_and_group(admin, list(brokers.values()), QUEUES_PER_BROKER)
    # A distinct offset per queue, so a value landing on the wrong queue shows too.
    writes = [
        OffsetWrite(addr, group, topic, q, 1000 * b + q)
        for b, addr in enumerate(brokers.values())
        for q in range(QUEUES_PER_BROKER)
    ]
    seen: list[WriteResult] = []
    progress: list[WriteProgress] = []
    report = await OffsetWriter(admin, on_progress=progress.append).write(
        writes, on_result=seen.append
    )
    assert report.ok, report.summary()
    assert len(report.results) == 2 * QUEUES_PER_BROKER == 256
    assert len(seen) == 256
    assert progress[-1] == WriteProgress(256, 256, 256)

    # What the brokers hold, asked afresh: each queue exactly, "never committed" on none.
    async with AdminClient(sandbox.namesrv_addr, timeout=10) as fresh:
        stored = await asyncio.gather(
            *(fresh.query_consumer_offset(w.broker_addr, group, topic, w.queue_id) for w in writes)
        )
        assert stored == [w.offset for w in writes]
        for b, (name, addr) in enumerate(brokers.items()):
            stats = await fresh.consume_stats(addr, group, topic)
            assert {mq: s.consumer_offset for mq, s in stats.queues.items()} == {
                MessageQueue(topic, name, q): 1000 * b + q for q in range(QUEUES_PER_BROKER)
            }


async def test_a_commit_dropped_for_a_pending_reset_is_kept_another_value(
    admin: AdminClient, sandbox: Any
) -> None:
    addr = sandbox.broker_addrs["broker-b"]
    topic, group = await _topic_and_group(admin, [addr], 2)
    for i in range(6):
        await admin.send_message(addr, topic, i % 2, b"x")
    await indexed(admin, addr, topic, {0: 3, 1: 3})
    writer = OffsetWriter(admin)
    first = await writer.write([OffsetWrite(addr, group, topic, q, 3) for q in (0, 1)])
    assert first.ok, first.summary()

    # A server-side reset of queue 0 to offset 1, not yet taken by any consumer (§4.3A).
    table = await admin.reset_offset(addr, group, topic, timestamp_ms=0, queue_id=0, offset=1)
    assert table == {MessageQueue(topic, "broker-b", 0): 1}
    # The wire call alone cannot tell: the broker says SUCCESS, with a remark.
    assert await admin.update_consumer_offset(addr, group, topic, 0, 2) == PREVIOUSLY_RESET

    report = await writer.write([OffsetWrite(addr, group, topic, q, 2) for q in (0, 1)])
    kept, verified = report.results
    assert kept.outcome is WriteOutcome.KEPT_OTHER
    assert (kept.stored, kept.remark, kept.error) == (1, PREVIOUSLY_RESET, None)
    assert kept.describe().endswith(f"holds 1, not 2 ({PREVIOUSLY_RESET})")
    assert verified.outcome is WriteOutcome.VERIFIED
    assert verified.stored == 2
    assert not report.ok
    assert await admin.query_consumer_offset(addr, group, topic, 0) == 1


async def test_refusals_and_an_unreachable_broker_fail_with_their_typed_errors(
    admin: AdminClient, sandbox: Any
) -> None:
    addr = sandbox.broker_addrs["broker-a"]
    topic, _ = await _topic_and_group(admin, [addr], 2)
    unknown = _name("never-created")
    dead = "127.0.0.1:1"
    results = [
        r
        async for r in OffsetWriter(admin).results(
            [
                *(OffsetWrite(addr, unknown, topic, q, 1) for q in (0, 1)),
                *(OffsetWrite(dead, unknown, topic, q, 1) for q in (0, 1)),
            ]
        )
    ]
    by_addr = {(r.write.broker_addr, r.write.queue_id): r for r in results}
    assert len(by_addr) == 4
    assert all(r.outcome is WriteOutcome.FAILED for r in results)
    for q in (0, 1):
        refused = by_addr[(addr, q)]
        assert isinstance(refused.error, BrokerError)
        assert refused.error.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
        assert refused.sent
        assert isinstance(by_addr[(dead, q)].error, ConnectError)
    assert [by_addr[(dead, q)].sent for q in (0, 1)] == [True, False]
