"""A skip with consumers online is verified only by its target read back: a consumer that never
saw the reset consumes up to the target and past it by itself. A write that was lost while the
consumer consumed past the target ends "past the target, the reset not seen", exit 1; `resume`
leaves it so (writing the target again would move the group back). Against the sandbox, with the
write dropped by an injected fault: tests/integration."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from console.domain.journal import ApplyStatus, QueueState
from console.domain.plan import PlanHeader, PlanRow, SnapshotInfo
from console.domain.reset_paths import ResetPath, ResetPathKind
from console.domain.spec import ResetSpec, Scope, ToOffset
from console.rocketmq.models import ClientConnection, ConsumerConnection, MessageQueue
from console.services.apply.check import ApplyCheck, GroupWrites, QueueWrite
from console.services.apply.resume_check import check_resume
from console.services.apply.session import SessionResult
from console.services.apply.writer import Applier
from console.services.plan.load import LoadedPlan
from tests.support.writes import write_access

ADDR, GROUP, TOPIC = "10.0.0.1:10911", "billing", "orders"
BEFORE, TARGET = 100, 120


class DroppingBroker:
    """Answers the reset with success and keeps nothing; its one consumer consumes on."""

    def __init__(self) -> None:
        self.offset = BEFORE

    async def reset_offset(self, addr: str, group: str, topic: str, **kw: object) -> dict:
        return {MessageQueue(TOPIC, "broker-a", 0): TARGET}  # what the broker says it did

    async def query_consumer_offset(self, addr: str, group: str, topic: str, q: int) -> int:
        self.offset += 7  # the consumer, which never saw the reset, consumes on
        return self.offset

    async def consumer_connections(self, addr: str, group: str) -> ConsumerConnection:
        client = ClientConnection("10.0.0.9@1", "10.0.0.9:1", "JAVA", 479)
        return ConsumerConnection([client], "CONSUME_PASSIVELY", "CLUSTERING", None)

    async def topic_stats(self, addr: str, topic: str) -> dict:
        return {MessageQueue(TOPIC, "broker-a", 0): SimpleNamespace(min_offset=0, max_offset=999)}

    async def cluster_info(self) -> SimpleNamespace:
        return SimpleNamespace()

    async def broker_config(self, addr: str) -> dict[str, str]:
        return {"useServerSideResetOffset": "true"}

    server_versions = {ADDR: 479}


def skip_check() -> ApplyCheck:
    row = PlanRow("prod", GROUP, TOPIC, "broker-a", 0, 0, 999, BEFORE, TARGET, TARGET, 20, None, ())
    header = PlanHeader(
        plan_id="p1",
        spec=ResetSpec(Scope("prod", (GROUP,)), ToOffset(TARGET)),
        snapshot=SnapshotInfo("prod", "s1", 1),
        created_at_ms=1,
        content_hash="sha256:0",
        rows=1,
        totals=(),
    )
    path = ResetPath(ResetPathKind.SERVER_SIDE, "every broker runs 5.1+")
    group = GroupWrites(GROUP, path, path, 1, None, (QueueWrite(row, ADDR, BEFORE),))
    return ApplyCheck(LoadedPlan("file:///p1", header, (row,)), (group,), (), (), ())


async def test_a_skip_read_back_only_past_its_target_is_not_verified(tmp_path: Path) -> None:
    broker = DroppingBroker()

    async def brokers() -> dict[str, str]:
        return {"broker-a": ADDR}

    reader = SimpleNamespace(admin=broker, brokers=brokers)
    access = write_access(reader, tmp_path)
    journal = await Applier(access, verify_timeout_s=0.5).apply(skip_check())

    (q,) = journal.queues
    assert q.state is QueueState.PAST_TARGET
    assert q.stored is not None
    assert q.stored > TARGET
    assert journal.status is ApplyStatus.FINISHED
    assert SessionResult(journal, "j").exit_code == 1

    # resume reads it again: still past its target, with consumers online; not written again,
    # and not called verified.
    resume = await check_resume(reader, journal)  # type: ignore[arg-type]
    assert (resume.writes, resume.arrived) == ((), ())
    assert journal.unfinished == ()
