"""A broker that stops answering mid-apply (a hung JVM, a partition) stops the apply short: the
journal is "stopped", naming the broker, so `history` and the next start offer to resume it;
the other broker's queues are verified as usual. Against the sandbox with broker-b frozen
(SIGSTOP): tests/integration/test_apply_frozen_broker.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

from console.domain.journal import ApplyStatus, Journal, QueueState
from console.domain.plan import PlanHeader, PlanRow, SnapshotInfo
from console.domain.reset_paths import ResetPath, ResetPathKind
from console.domain.spec import ResetSpec, Scope, ShiftBy
from console.rocketmq.errors import BrokerError, RequestTimeout
from console.rocketmq.models import MessageQueue
from console.services.apply.check import ApplyCheck, GroupWrites, QueueWrite
from console.services.apply.session import SessionResult
from console.services.apply.writer import Applier
from console.services.infra.journal_store import JournalStore, unfinished_lines
from console.services.plan.load import LoadedPlan
from tests.support.writes import write_access

ADDRS = {"broker-a": "10.0.0.1:10911", "broker-b": "10.0.0.2:10911"}
SILENT = frozenset({ADDRS["broker-b"]})
GROUP, TOPIC = "billing", "orders"
BEFORE, TARGET = 100, 90
INVOKE_BROKER_TO_RESET_OFFSET = 222


class Brokers:
    """Resets taken, except at the addresses `silent` (no answer; `stop` is set as it gives
    none, as by an operator's ctrl-c) and `refusing` (the broker says no)."""

    def __init__(
        self,
        *,
        silent: frozenset[str] = frozenset(),
        refusing: frozenset[str] = frozenset(),
        stop: asyncio.Event | None = None,
    ) -> None:
        self.silent, self.refusing, self.stop = silent, refusing, stop
        self.stored: dict[tuple[str, int], int] = {}

    async def reset_offset(
        self, addr: str, group: str, topic: str, *, queue_id: int, offset: int, **kw: object
    ) -> dict[MessageQueue, int]:
        if addr in self.silent:
            if self.stop is not None:
                self.stop.set()
            raise RequestTimeout(addr, INVOKE_BROKER_TO_RESET_OFFSET, 3.0)
        if addr in self.refusing:
            raise BrokerError(addr, INVOKE_BROKER_TO_RESET_OFFSET, 1, "busy")
        self.stored[(addr, queue_id)] = offset
        return {}

    async def query_consumer_offset(self, addr: str, group: str, topic: str, q: int) -> int:
        return self.stored.get((addr, q), BEFORE)

    async def cluster_info(self) -> SimpleNamespace:
        return SimpleNamespace()


def server_side_check() -> ApplyCheck:
    """Two queues on each broker of a group nobody consumes, moved by the brokers themselves."""
    rows = tuple(
        PlanRow("prod", GROUP, TOPIC, b, q, 0, 200, BEFORE, TARGET, TARGET, -10, None, ())
        for b in sorted(ADDRS)
        for q in range(2)
    )
    header = PlanHeader(
        plan_id="p1",
        spec=ResetSpec(Scope("prod", (GROUP,)), ShiftBy(-10)),
        snapshot=SnapshotInfo("prod", "s1", 1),
        created_at_ms=1,
        content_hash="sha256:0",
        rows=len(rows),
        totals=(),
    )
    path = ResetPath(ResetPathKind.SERVER_SIDE, "every broker runs 5.1+")
    writes = tuple(QueueWrite(r, ADDRS[r.broker], BEFORE) for r in rows)
    group = GroupWrites(GROUP, path, path, 0, None, writes)
    return ApplyCheck(LoadedPlan("file:///p1", header, rows), (group,), (), (), ())


async def apply(tmp_path: Path, brokers: Brokers) -> Journal:
    access = write_access(SimpleNamespace(admin=brokers), tmp_path)
    stop = brokers.stop or asyncio.Event()
    return await Applier(access, verify_timeout_s=0.5).apply(server_side_check(), stop=stop)


async def test_a_broker_that_gives_no_answer_stops_the_apply_naming_it(tmp_path: Path) -> None:
    journal = await apply(tmp_path, Brokers(silent=SILENT))

    states = {(q.broker, q.queue_id): q.state for q in journal.queues}
    assert states == {
        ("broker-a", 0): QueueState.VERIFIED,
        ("broker-a", 1): QueueState.VERIFIED,
        ("broker-b", 0): QueueState.FAILED,  # sent, no answer: it may still land
        ("broker-b", 1): QueueState.PENDING,  # never sent
    }
    assert journal.status is ApplyStatus.STOPPED
    assert journal.stopped_because == (
        "broker-b did not answer, 2 of its queue(s) not verified (10.0.0.2:10911 did not "
        "answer request 222 within 3s)"
    )
    assert SessionResult(journal, "j").exit_code == 1
    assert JournalStore(tmp_path).load(journal.apply_id) == journal
    assert unfinished_lines(tmp_path) == [
        f"apply {journal.apply_id} on prod stopped part-way (2 queue(s) not verified): "
        f"rmq-console resume {journal.apply_id}, or rmq-console undo {journal.apply_id}"
    ]


async def test_a_broker_that_refuses_answers_and_the_apply_finishes(tmp_path: Path) -> None:
    journal = await apply(tmp_path, Brokers(refusing=SILENT))

    assert {q.state for q in journal.queues if q.broker == "broker-b"} == {QueueState.FAILED}
    assert (journal.status, journal.stopped_because) == (ApplyStatus.FINISHED, None)


async def test_a_stop_on_request_while_a_broker_hangs_stays_the_reason(tmp_path: Path) -> None:
    journal = await apply(tmp_path, Brokers(silent=SILENT, stop=asyncio.Event()))

    assert (journal.status, journal.stopped_because) == (ApplyStatus.STOPPED, "stopped on request")
