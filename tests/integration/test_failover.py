"""Failover on a real cluster in controller mode (fixture `controller_cluster`: a name server, a
standalone controller, one broker set of two replicas the controller elects a master among).

The requests the console asks of a controller and its replicas answer as the README says; reads
through a kill -9 of the master are exact or marked, never wrong with exit 0, and exact once the
controller has elected the other replica; `brokers` shows each replica's role, epoch and place in
the SyncStateSet, and the controller.

Writes across a switch: an apply waits until the other replica holds it, and the reset holds
through a kill of its master; undo then writes the before-image on the new master; a replica
that did not copy in time is named, `verify` finds the queues a switch rolled back, and `resume`
writes them again on the new master, proven on the replica.

The tests kill, pause and restart the replicas: they run in this file's order, and each starts
with both replicas running and in sync (which one is master changes). A replica a test killed
is started again by the next test that needs it, not by the one that killed it.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from console.config import ClusterConfig, Config
from console.domain.gaps import Why
from console.domain.journal import ApplyStatus, Journal, QueueState
from console.domain.offsets import GroupOffsets
from console.domain.spec import ResetSpec, Scope, ShiftBy
from console.errors import Refused
from console.rocketmq.admin import AdminClient
from console.rocketmq.controller import OPEN_END
from console.rocketmq.errors import RocketMQError
from console.rocketmq.models import MessageQueue
from console.sandbox.controller_cluster import (
    CONTROLLER,
    FAILOVER_TOPIC,
    QUEUES,
    ControllerSandbox,
    wait_offsets,
)
from console.services.apply.check import ApplyCheck, check_apply
from console.services.apply.intents import UndoApply
from console.services.apply.journal_actions import UndoIntent
from console.services.apply.session import ApplySession
from console.services.apply.writer import Applier
from console.services.infra.journal_store import AuditLog, JournalStore
from console.services.infra.spark_jobs import JobProgress
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import Workspace
from console.services.plan.load import LoadedPlan, load_plan
from console.services.plan.planner import Planner
from console.services.read.reader import ClusterReader
from tests.support.replica_sets import QueueKey, read_queues, run, seeded
from tests.support.writes import confirm_every_name, write_access

#: How long a replica that rejoins may take to catch up and be back in the SyncStateSet.
REJOIN_S = 120.0
#: How long a replica may take to copy a group's offsets from its master (every 10 s).
COPY_S = 30.0


@pytest.fixture
def cli(
    controller_cluster: ControllerSandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    config = tmp_path / "config.yaml"
    cluster = {"name": "failover", "namesrv": controller_cluster.namesrv_addr}
    config.write_text(
        yaml.safe_dump({"clusters": [cluster], "workspace": str(tmp_path / "ws"), "timeout": 3})
    )
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config))
    return config


@pytest.fixture
def both_replicas(controller_cluster: ControllerSandbox) -> Iterator[ControllerSandbox]:
    """Both replicas run and are in sync when a test starts: a replica the test before killed
    is started again here, when a test needs it (the last kill of the file costs no restart)."""
    sb = controller_cluster
    asyncio.run(both_in_sync(sb))
    yield sb
    # A process left paused answers nothing to the next test, and does not stop at the end.
    for name in (*sb.replicas(sb.brokers[0]), CONTROLLER):
        if sb.running(name):
            sb.resume(name)


async def both_in_sync(sb: ControllerSandbox) -> None:
    """Start the replicas that are down again; wait until both are in the SyncStateSet."""
    for replica in sb.replicas(sb.brokers[0]):
        if not sb.running(replica):
            await sb.start_replica(replica, REJOIN_S)
    await sb.wait_in_sync(sb.brokers[0], REJOIN_S)


async def test_the_controller_and_the_replicas_answer_as_the_readme_says(
    both_replicas: ControllerSandbox,
) -> None:
    sb = both_replicas
    broker = sb.brokers[0]
    master = await sb.master_of(broker)
    assert master is not None
    (other,) = [r for r in sb.replicas(broker) if r != master]
    async with sb.admin() as admin:
        said = await admin.controller_metadata(sb.controller_addr)
        assert (said.is_leader, said.leader_id, said.leader_addr) == (
            True,
            "n0",
            sb.controller_addr,
        )
        assert said.peers == (f"n0:{sb.controller_addr}",)
        sets = await admin.replica_sets(sb.controller_addr, [broker, "no-such-broker"])
        assert list(sets) == [broker]  # a set the controller does not know is left out
        known = sets[broker]
        assert known.master_addr == sb.addr_of(master)
        assert {r.addr for r in known.in_sync} == {sb.addr_of(master), sb.addr_of(other)}
        assert all(r.alive for r in known.replicas)
        # The controller's ids are its own; the name server lists the master as 0.
        assert known.master_id == known.replica_at(sb.addr_of(master)).broker_id  # type: ignore[union-attr]
        info = await admin.cluster_info()
        listed = info.brokers[broker].addrs
        assert listed[0] == sb.addr_of(master)
        (other_id,) = [i for i, a in listed.items() if a == sb.addr_of(other)]
        assert other_id == known.replica_at(sb.addr_of(other)).broker_id  # type: ignore[union-attr]
        for replica, role in ((master, 0), (other, other_id)):
            epochs = await admin.epoch_cache(sb.addr_of(replica))
            assert (epochs.broker, epochs.broker_id) == (broker, role)
            assert epochs.epochs[-1].end_offset == OPEN_END
            assert epochs.last_epoch == known.master_epoch
        status = await admin.ha_status(sb.addr_of(other))
        assert not status.master


def test_brokers_shows_each_replica_its_epoch_the_sync_state_set_and_the_controller(
    both_replicas: ControllerSandbox, cli: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    sb = both_replicas
    broker = sb.brokers[0]
    master = asyncio.run(sb.master_of(broker))
    assert master is not None
    code, out, err = run(capfd, "brokers", "--cluster", "failover", "--json")
    assert (code, err) == (0, "")
    rows = {r["addr"]: r for r in json.loads(out)}
    assert set(rows) == {sb.addr_of(r) for r in sb.replicas(broker)}
    for addr, row in rows.items():
        assert row["role"] == ("MASTER" if addr == sb.addr_of(master) else "SLAVE")
        facts = row["replication"]
        assert facts["controller"] == sb.controller_addr
        assert (facts["in_sync"], facts["alive"]) == (True, True)
        assert facts["epoch"] == facts["master_epoch"] >= 1
    code, out, err = run(capfd, "brokers", "--cluster", "failover")
    assert code == 0, err
    assert out.splitlines()[0].split()[-2:] == ["EPOCH", "SYNC-STATE-SET"]
    assert f"controller {sb.controller_addr} (leader n0 at {sb.controller_addr})" in out
    assert f"{broker}: master {sb.addr_of(master)}, epoch" in out


def exact(offsets: GroupOffsets, want: dict[QueueKey, tuple[int, int | None]]) -> bool:
    return not offsets.gaps and not offsets.from_slave and read_queues(offsets) == want


async def read_through_a_kill(sb: ControllerSandbox, old: str) -> tuple[float, list[str]]:
    """Read as the console does (routes kept for a second, connections kept open) before the
    master is killed and until a read is exact again: how long that took, and how each read
    between was marked. A reader that keeps its routes for a minute reads the elected master at
    once too: a master that is gone makes it ask the name server again."""
    assert sb.seed is not None
    group, want = sb.seed.group, seeded(sb.seed)
    async with (
        AdminClient([sb.namesrv_addr], timeout=2.0) as admin,
        AdminClient([sb.namesrv_addr], timeout=2.0) as other,
    ):
        reader = ClusterReader(admin, routes_ttl=1.0)
        keeper = ClusterReader(other, routes_ttl=60.0)
        assert exact(await reader.group_offsets(group), want)
        assert exact(await keeper.group_offsets(group), want)
        sb.kill(old)
        killed = time.monotonic()
        seen: list[str] = []
        while True:
            got = await reader.group_offsets(group)
            if exact(got, want):
                took = time.monotonic() - killed
                break
            # Never a wrong number given as the answer: what is not the master's is marked.
            assert got.gaps or got.from_slave, read_queues(got)
            seen.append("; ".join(g.line() for g in got.gaps) or f"from {got.from_slave}")
            assert time.monotonic() - killed < 60, seen
            await asyncio.sleep(0.1)
        kept = await keeper.group_offsets(group)
        assert exact(kept, want), (kept.from_slave, kept.gaps)
        return took, seen


def test_reads_through_a_kill_of_the_master_are_exact_or_marked_then_exact(
    both_replicas: ControllerSandbox, cli: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    sb = both_replicas
    assert sb.seed is not None
    broker = sb.brokers[0]
    old = asyncio.run(sb.master_of(broker))
    assert old is not None
    took, seen = asyncio.run(read_through_a_kill(sb, old))
    new = asyncio.run(sb.master_of(broker))
    assert new is not None
    assert new != old
    code, out, err = run(capfd, "lag", "-g", sb.seed.group, "--cluster", "failover", "--json")
    assert (code, err) == (0, ""), (took, seen)
    document = json.loads(out)
    assert document["from_slave"] == []
    assert {
        (q["topic"], q["broker"], q["queue_id"]): (q["max_offset"], q["committed"])
        for q in document["queues"]
    } == seeded(sb.seed)
    # The replica killed is known to the controller, down, outside the SyncStateSet.
    code, out, err = run(capfd, "brokers", "--cluster", "failover", "--json")
    assert code == 1
    rows = {r["addr"]: r for r in json.loads(out)}
    assert (rows[sb.addr_of(new)]["role"], rows[sb.addr_of(new)]["status"]) == ("MASTER", "UP")
    gone = rows[sb.addr_of(old)]
    assert (gone["status"], gone["role"], gone["replication"]["in_sync"]) == ("DOWN", "-", False)
    assert "known to the controller, not registered with the name server" in err
    epoch = rows[sb.addr_of(new)]["replication"]["master_epoch"]
    # Restarted on its store, it rejoins as a replica of the new master's epoch.
    asyncio.run(sb.start_replica(old, REJOIN_S))
    code, out, err = run(capfd, "brokers", "--cluster", "failover", "--json")
    assert (code, err) == (0, "")
    rows = {r["addr"]: r for r in json.loads(out)}
    assert rows[sb.addr_of(old)]["role"] == "SLAVE"
    assert rows[sb.addr_of(old)]["replication"]["epoch"] == epoch


def test_a_read_from_a_replica_while_no_master_is_elected_is_partial_and_says_why(
    both_replicas: ControllerSandbox, cli: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The controller paused, then the master killed: the name server lists the other replica
    alone, and nobody elects it until the controller answers again."""
    sb = both_replicas
    assert sb.seed is not None
    broker = sb.brokers[0]
    master = asyncio.run(sb.master_of(broker))
    assert master is not None
    (other,) = [r for r in sb.replicas(broker) if r != master]
    # A replica started again holds the group's queues once it has copied them (every 10 s).
    asyncio.run(holds_the_seed(sb, other))
    sb.pause(CONTROLLER)
    try:
        sb.kill(master)
        asyncio.run(sb.wait_unlisted(broker, sb.addr_of(master)))
        code, out, err = run(capfd, "lag", "-g", sb.seed.group, "--cluster", "failover", "--json")
    finally:
        sb.resume(CONTROLLER)
    document = json.loads(out)
    assert (code, document["from_slave"]) == (1, [broker]), err
    assert {
        (q["topic"], q["broker"], q["queue_id"]): (q["max_offset"], q["committed"])
        for q in document["queues"]
    } == seeded(sb.seed), (document["missing"], err)
    assert str(Why.NO_MASTER) in {m["why"] for m in document["missing"]}
    assert f"read from replica {sb.addr_of(other)} while {broker} has no master" in err
    assert asyncio.run(sb.wait_master(broker, not_on=master)) == other


async def holds_the_seed(sb: ControllerSandbox, replica: str) -> None:
    """Until `replica` answers the seeded group's stats (what a read from it asks) with every
    seeded queue at its committed offset."""
    assert sb.seed is not None
    want = {mq: c for mq, c in sb.seed.committed.items() if mq.broker_name == sb.brokers[0]}
    deadline = time.monotonic() + COPY_S
    async with sb.admin() as admin:
        while True:
            try:
                stats = await admin.consume_stats(sb.addr_of(replica), sb.seed.group)
            except RocketMQError as exc:
                held: object = str(exc)
            else:
                held = {mq: q.consumer_offset for mq, q in stats.queues.items()}
            if held == want:
                return
            assert time.monotonic() < deadline, (replica, held)
            await asyncio.sleep(0.5)


@pytest.fixture(scope="module")
def runner(plan_runner: SparkRunner) -> SparkRunner:
    return plan_runner


async def group_at(
    sb: ControllerSandbox, admin: AdminClient, at: int, *, copied: bool = True
) -> str:
    """A group of its own committed at `at` on every queue of the seeded topic; with `copied`,
    held by every replica too (each copies it from the master within 10 s)."""
    broker = sb.brokers[0]
    group = f"failover-apply-{uuid.uuid4().hex[:8]}"
    master = await sb.master_of(broker)
    assert master is not None
    addr = sb.addr_of(master)
    await admin.create_group(addr, group)
    offsets = {MessageQueue(FAILOVER_TOPIC, broker, q): at for q in range(QUEUES)}
    for mq, offset in offsets.items():
        await admin.update_consumer_offset(addr, group, mq.topic, mq.queue_id, offset)
    if copied:
        await wait_offsets(sb, admin, group, offsets, COPY_S)
    return group


async def plan_shift(
    sb: ControllerSandbox, admin: AdminClient, runner: SparkRunner, root: Path, group: str
) -> LoadedPlan:
    ws = Workspace(root)
    reader = ClusterReader(admin, sb.cluster_name)
    planner = Planner(ws, runner, reader=reader, cluster="failover")
    spec = ResetSpec(Scope("failover", (group,), topics=(FAILOVER_TOPIC,)), ShiftBy(-3))
    result = await planner.plan(spec)
    return load_plan(ws, result.uri, cluster="failover", now_ms=int(time.time() * 1000))


async def held_on(sb: ControllerSandbox, admin: AdminClient, replica: str, group: str) -> list[int]:
    return [
        await admin.query_consumer_offset(sb.addr_of(replica), group, FAILOVER_TOPIC, q) or -1
        for q in range(QUEUES)
    ]


def test_an_apply_waits_until_the_replicas_hold_it_survives_a_kill_and_undoes_on_the_new_master(
    both_replicas: ControllerSandbox,
    runner: SparkRunner,
    cli: Path,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    sb = both_replicas
    broker = sb.brokers[0]
    root = tmp_path / "ws"
    waits: list[str] = []

    async def apply() -> tuple[str, str, Journal]:
        async with AdminClient([sb.namesrv_addr], timeout=3.0) as admin:
            # The apply's own wait is for the replica to copy what it wrote: what the replica
            # held before does not matter here.
            group = await group_at(sb, admin, 8, copied=False)
            plan = await plan_shift(sb, admin, runner, root, group)
            master = await sb.master_of(broker)
            assert master is not None
            reader = ClusterReader(admin, sb.cluster_name)
            check = await check_apply(reader, plan)
            journal = await Applier(write_access(reader, root, "failover")).apply(
                check, on_progress=lambda p: waits.append(p.waiting or "")
            )
            # Believed once every replica answers it: the other replica holds it already.
            for replica in sb.replicas(broker):
                assert await held_on(sb, admin, replica, group) == [5] * QUEUES
            return group, master, journal

    group, master, journal = asyncio.run(apply())
    assert journal.status is ApplyStatus.FINISHED
    assert {q.state for q in journal.queues} == {QueueState.VERIFIED}
    assert any(w.startswith("waiting for the replicas to copy 4 queue(s)") for w in waits)
    (line,) = journal.replicas
    assert line.startswith(f"{broker}: 4 queue(s) copied by replica(s) ")
    # kill -9 of the master that wrote it: the replica elected holds the reset.
    sb.kill(master)
    asyncio.run(sb.wait_master(broker, not_on=master))
    code, out, err = run(capfd, "verify", journal.apply_id, "--cluster", "failover", "--json")
    assert code == 0, (out, err)
    found = json.loads(out)
    assert {(q["queue_id"], q["stored_now"], q["holds"]) for q in found["queues"]} == {
        (q, 5, True) for q in range(QUEUES)
    }
    assert {q["master_now"] for q in found["queues"]} != {sb.addr_of(master)}
    code, out, err = run(capfd, "lag", "-g", group, "--cluster", "failover", "--json")
    assert code == 0, err
    assert {q["committed"] for q in json.loads(out)["queues"]} == {5}
    # Undo across the switch: the killed replica rejoins as a replica of the new master; the
    # before-image is written on the master named now (not the one journaled), read back
    # there, and waited for on the replica.
    asyncio.run(both_in_sync(sb))
    new = asyncio.run(sb.master_of(broker))
    assert new is not None
    assert new != master
    undone = asyncio.run(undo(sb, runner, root, journal.apply_id))
    assert (undone.kind, undone.undo_of, undone.status) == (
        "undo",
        journal.apply_id,
        ApplyStatus.FINISHED,
    )
    assert {(q.broker_addr, q.state, q.stored) for q in undone.queues} == {
        (sb.addr_of(new), QueueState.VERIFIED, 8)
    }
    (line,) = undone.replicas
    assert line.startswith(f"{broker}: 4 queue(s) copied by replica(s) {sb.addr_of(master)}")

    async def held_everywhere() -> list[list[int]]:
        async with sb.admin() as admin:
            return [await held_on(sb, admin, r, group) for r in sb.replicas(broker)]

    assert asyncio.run(held_everywhere()) == [[8] * QUEUES] * 2


async def undo(sb: ControllerSandbox, runner: SparkRunner, root: Path, apply_id: str) -> Journal:
    """`undo APPLY_ID`, confirmed: the session the command runs, its plan made on the warm
    Spark session."""

    async def plan(
        cluster: ClusterConfig,
        config: Config,
        reader: ClusterReader,
        intent: UndoIntent,
        progress: Callable[[JobProgress], object],
    ) -> str:
        planner = Planner(Workspace(root), runner, reader=reader, cluster="failover")
        return (await planner.plan(intent.spec)).uri

    async with AdminClient([sb.namesrv_addr], timeout=3.0) as admin:
        reader = ClusterReader(admin, sb.cluster_name)
        session = ApplySession(write_access(reader, root, "failover"), UndoApply(apply_id, plan))
        result = await session.run(confirm_every_name)
    assert result.journal is not None, result.refused
    return result.journal


def test_a_replica_that_does_not_copy_in_time_is_named_and_verify_finds_the_rollback(
    both_replicas: ControllerSandbox,
    runner: SparkRunner,
    cli: Path,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The other replica paused (it copies nothing) while the apply writes: the master reads it
    back, the replica does not answer it in time, and the apply says so. The master is then
    killed and the replica elected: the write is gone, `verify` says which queues, and
    `resume` writes them again."""
    sb = both_replicas
    broker = sb.brokers[0]
    root = tmp_path / "ws"

    async def apply() -> tuple[str, str, Journal, ApplyCheck]:
        async with AdminClient([sb.namesrv_addr], timeout=3.0) as admin:
            group = await group_at(sb, admin, 9)
            plan = await plan_shift(sb, admin, runner, root, group)
            master = await sb.master_of(broker)
            assert master is not None
            (other,) = [r for r in sb.replicas(broker) if r != master]
            reader = ClusterReader(admin, sb.cluster_name)
            check = await check_apply(reader, plan)
            sb.pause(other)
            applier = Applier(write_access(reader, root, "failover"), replica_wait_s=2.0)
            return group, master, await applier.apply(check), check

    group, master, journal, check = asyncio.run(apply())
    (other,) = [r for r in sb.replicas(broker) if r != master]
    assert journal.status is ApplyStatus.NOT_COPIED
    assert {q.state for q in journal.queues} == {QueueState.VERIFIED}
    (line,) = journal.replicas
    assert line.startswith(
        f"{broker}: written on the master {sb.addr_of(master)}; replica {sb.addr_of(other)}"
    )
    assert "has not copied 4 queue(s) yet: a switch now would roll them back" in line
    assert f"rmq-console verify {journal.apply_id}" in line
    # The master killed while nobody can be elected: no apply starts.
    sb.pause(CONTROLLER)
    try:
        sb.kill(master)

        async def again() -> None:
            async with AdminClient([sb.namesrv_addr], timeout=3.0) as admin:
                reader = ClusterReader(admin, sb.cluster_name)
                with pytest.raises(Refused) as refused:
                    await Applier(write_access(reader, root, "failover")).apply(check)
                assert f"broker {broker} has no master" in " ".join(refused.value.reasons)

        asyncio.run(sb.wait_unlisted(broker, sb.addr_of(master)))
        asyncio.run(again())
    finally:
        sb.resume(other)
        sb.resume(CONTROLLER)
    assert asyncio.run(sb.wait_master(broker, not_on=master)) == other
    code, out, err = run(capfd, "verify", journal.apply_id, "--cluster", "failover")
    assert code == 1, (out, err)
    rolled = [line for line in out.splitlines() if "ROLLED BACK" in line]
    assert len(rolled) == QUEUES, out
    assert f"the master {sb.addr_of(other)} (the apply wrote on {sb.addr_of(master)})" in rolled[0]
    assert f"{QUEUES} queue(s) no longer hold what apply {journal.apply_id} wrote" in err
    assert f"`rmq-console resume {journal.apply_id}` writes them again" in err
    # Resume writes them again on the new master, and waits for the replica: the killed one,
    # started again, which has taken the rolled-back offsets from its new master by then.
    asyncio.run(both_in_sync(sb))

    async def copied_the_rollback() -> None:
        async with sb.admin() as admin:
            rolled_back = {MessageQueue(FAILOVER_TOPIC, broker, q): 9 for q in range(QUEUES)}
            await wait_offsets(sb, admin, group, rolled_back, COPY_S, replicas=[master])

    asyncio.run(copied_the_rollback())
    code, out, err = run(
        capfd, "resume", journal.apply_id, "--cluster", "failover", "--confirm", group
    )
    assert code == 0, (out, err)
    assert (
        f"{QUEUES} queue(s) the apply verified were rolled back by a switch (the master holds "
        f"the offset before the apply again): written again on the master now "
        f"({sb.addr_of(other)})"
    ) in out
    resumed = JournalStore(root).load(journal.apply_id)
    assert resumed.status is ApplyStatus.FINISHED
    assert {(q.broker_addr, q.state, q.stored) for q in resumed.queues} == {
        (sb.addr_of(other), QueueState.VERIFIED, 6)
    }
    (line,) = resumed.replicas
    assert line.startswith(f"{broker}: 4 queue(s) copied by replica(s) {sb.addr_of(master)}")
    # Each write has its line in the audit log: the apply's and the resume's.
    written = [e for e in AuditLog(root).read() if e["apply_id"] == journal.apply_id]
    assert [e["result"] for e in written] == ["verified"] * (2 * QUEUES)
    assert all("rolled back by a switch" in (e["detail"] or "") for e in written[QUEUES:])
    code, out, err = run(capfd, "verify", journal.apply_id, "--cluster", "failover")
    assert code == 0, (out, err)
    # Resumed again, nothing is rolled back: nothing to write.
    code, out, err = run(
        capfd, "resume", journal.apply_id, "--cluster", "failover", "--confirm", group
    )
    assert code == 0, (out, err)
    assert "every queue is verified; nothing to write" in out
