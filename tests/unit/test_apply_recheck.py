"""The offline path checks who is online once more right before its writes: a consumer that came
online after the check (its next commit would overwrite a direct write within seconds) stops the
apply before anything is sent, and the journal says why. The brokers' side of the offline path
(and of the client push falling back to it) is proven against the sandbox in
tests/integration/test_apply_client_push.py; the moment between the check and the writes is
what a fake admin can hold still."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from console.domain.journal import ApplyStatus, QueueState
from console.domain.plan import PlanHeader, PlanRow, SnapshotInfo
from console.domain.reset_paths import ResetPath, ResetPathKind
from console.domain.spec import ResetSpec, Scope, ShiftBy
from console.rocketmq.models import ClientConnection, ConsumerConnection
from console.services.apply.check import ApplyCheck, GroupWrites, QueueWrite
from console.services.apply.writer import Applier
from console.services.infra.journal_store import AuditLog, JournalStore
from console.services.plan.load import LoadedPlan
from tests.support.writes import write_access

ADDR = "10.0.0.1:10911"
GROUP = "billing"
GET_CONSUMER_CONNECTION_LIST = 203


class LateConsumerAdmin:
    """A broker whose group has a consumer by the time the apply asks again."""

    def __init__(self, online: int) -> None:
        self.online = online
        self.commits: list[tuple[str, int, int]] = []

    async def consumer_connections(self, addr: str, group: str) -> ConsumerConnection:
        if not self.online:  # as the admin client gives the broker's CONSUMER_NOT_ONLINE
            return ConsumerConnection([], None, None, None)
        clients = [
            ClientConnection(f"10.0.0.9@{i}", "10.0.0.9:5000", "JAVA", 453)
            for i in range(self.online)
        ]
        return ConsumerConnection(clients, "CONSUME_PASSIVELY", "CLUSTERING", None)

    async def message_request_modes(self, addr: str) -> dict[tuple[str, str], str]:
        return {}  # a 4.9 broker's answer: no group set to POP

    async def cluster_info(self) -> SimpleNamespace:
        return SimpleNamespace()

    async def update_consumer_offset(
        self, addr: str, group: str, topic: str, queue_id: int, offset: int
    ) -> None:
        self.commits.append((topic, queue_id, offset))

    async def query_consumer_offset(
        self, addr: str, group: str, topic: str, queue_id: int
    ) -> int | None:
        return next((o for t, q, o in reversed(self.commits) if (t, q) == (topic, queue_id)), 100)


class Reader:
    def __init__(self, admin: LateConsumerAdmin) -> None:
        self.admin = admin
        self.proxies = ()

    async def find_proxies(
        self, brokers: object, hosts_of: object = None, names: object = None
    ) -> None:
        return None  # the brokers list no proxy

    async def brokers(self) -> dict[str, str]:
        return {"broker-a": ADDR}


def row(queue_id: int) -> PlanRow:
    return PlanRow(
        "prod", GROUP, "orders", "broker-a", queue_id, 0, 200, 100, 90, 90, -10, None, ()
    )


def offline_check() -> ApplyCheck:
    """Two queues of a group nobody consumed when the check read the cluster."""
    rows = (row(0), row(1))
    header = PlanHeader(
        plan_id="p1",
        spec=ResetSpec(Scope("prod", (GROUP,)), ShiftBy(-10)),
        snapshot=SnapshotInfo("prod", "s1", 1),
        created_at_ms=1,
        content_hash="sha256:0",
        rows=2,
        totals=(),
    )
    path = ResetPath(ResetPathKind.OFFLINE_UPDATE, "brokers without server-side reset")
    writes = tuple(QueueWrite(r, ADDR, 100) for r in rows)
    group = GroupWrites(GROUP, path, path, 0, None, writes)
    return ApplyCheck(LoadedPlan("file:///p1", header, rows), (group,), (), (), ())


async def test_a_consumer_online_since_the_check_stops_the_direct_writes(tmp_path: Path) -> None:
    admin = LateConsumerAdmin(online=1)
    applier = Applier(write_access(Reader(admin), tmp_path))

    journal = await applier.apply(offline_check())

    assert admin.commits == []  # not one direct write
    assert journal.status is ApplyStatus.STOPPED
    assert journal.stopped_because is not None
    assert "1 consumer(s) came online since the check" in journal.stopped_because
    assert {q.state for q in journal.queues} == {QueueState.PENDING}
    assert JournalStore(tmp_path).load(journal.apply_id) == journal  # the record is on disk
    assert list(AuditLog(tmp_path).read()) == []  # no queue was written


async def test_still_nobody_online_and_the_direct_writes_go(tmp_path: Path) -> None:
    admin = LateConsumerAdmin(online=0)
    applier = Applier(write_access(Reader(admin), tmp_path))

    journal = await applier.apply(offline_check())

    assert sorted(admin.commits) == [("orders", 0, 90), ("orders", 1, 90)]
    assert journal.status is ApplyStatus.FINISHED
    assert {q.state for q in journal.queues} == {QueueState.VERIFIED}
