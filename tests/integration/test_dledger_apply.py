"""An apply on a real RocketMQ 4.9.7 broker set in DLedger mode (fixture `dledger_cluster`): its
peers elect the master themselves, so the apply waits, by default as in controller mode, until
both followers answer the new offsets at their own addresses, and only then ends finished.

It takes every peer running: one a test of tests/integration/test_dledger_failover.py killed is
started again first.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from console.domain.journal import ApplyStatus, QueueState
from console.domain.spec import ResetSpec, Scope, ShiftBy
from console.rocketmq.admin import AdminClient
from console.sandbox.dledger_cluster import DLEDGER_TOPIC, QUEUES, DLedgerSandbox
from console.services.apply.events import SessionEvent, WriteProgressed
from console.services.apply.intents import ApplyPlan
from console.services.apply.session import ApplySession
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import Workspace
from console.services.plan.load import load_plan
from console.services.plan.planner import Planner
from console.services.read.reader import ClusterReader
from tests.support.writes import confirm_every_name, write_access

#: How long a peer started again may take to boot and register with the elected master.
REJOIN_S = 120.0


async def held_on(admin: AdminClient, addr: str, group: str) -> list[int | None]:
    return [await admin.query_consumer_offset(addr, group, DLEDGER_TOPIC, q) for q in range(QUEUES)]


async def test_an_apply_waits_until_both_followers_hold_it_and_ends_finished(
    dledger_cluster: DLedgerSandbox, plan_runner: SparkRunner, tmp_path: Path
) -> None:
    sb = dledger_cluster
    for peer in sb.peers:
        if not sb.running(peer):
            await sb.start_peer(peer, REJOIN_S)
    master = await sb.master_of()
    assert master is not None
    followers = [sb.addr_of(p) for p in sb.peers if p != master]
    root = tmp_path / "ws"
    events: list[SessionEvent] = []
    async with AdminClient([sb.namesrv_addr], timeout=3.0) as admin:
        # A group of its own, committed at 8 on the master only: what the followers hold is
        # what the apply's own wait sees them copy.
        group = f"dledger-apply-{uuid.uuid4().hex[:8]}"
        await admin.create_group(sb.addr_of(master), group)
        for q in range(QUEUES):
            await admin.update_consumer_offset(sb.addr_of(master), group, DLEDGER_TOPIC, q, 8)
        reader = ClusterReader(admin, sb.cluster_name)
        ws = Workspace(root)
        spec = ResetSpec(Scope("dledger", (group,), topics=(DLEDGER_TOPIC,)), ShiftBy(-3))
        made = await Planner(ws, plan_runner, reader=reader, cluster="dledger").plan(spec)
        plan = load_plan(ws, made.uri, cluster="dledger", now_ms=int(time.time() * 1000))
        session = ApplySession(write_access(reader, root, "dledger"), ApplyPlan(plan))
        result = await session.run(confirm_every_name, events.append)
        journal = result.journal
        assert journal is not None, result.refused
        held = {addr: await held_on(admin, addr, group) for addr in followers}
    assert (journal.status, result.exit_code) == (ApplyStatus.FINISHED, 0), journal.replicas
    assert {(q.broker_addr, q.state, q.stored) for q in journal.queues} == {
        (sb.addr_of(master), QueueState.VERIFIED, 5)
    }
    # Believed once both followers answered it themselves: they hold it already.
    assert held == {addr: [5] * QUEUES for addr in followers}
    waits = [e.progress.waiting for e in events if isinstance(e, WriteProgressed)]
    assert any(
        w and w.startswith(f"waiting for the replicas to copy {QUEUES} queue(s)") for w in waits
    )
    (line,) = journal.replicas
    assert line.startswith(f"{sb.broker}: {QUEUES} queue(s) copied by replica(s) "), line
    assert all(addr in line for addr in followers), line
