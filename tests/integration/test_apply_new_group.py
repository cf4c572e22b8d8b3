"""A shadow consumer given production's offsets: a to-group plan onto a group that has never
consumed, over a topic of 128 queues on each broker, explains that it creates the group's
offsets rather than moving them, and every one of the 256 queues lands on the broker exactly
(brokers lose concurrent first commits of a new topic@group, fact sheet 9.1)."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest

from console.domain.journal import ApplyStatus, QueueState
from console.domain.spec import ResetSpec, Scope, ToGroup
from console.rocketmq.admin import AdminClient
from console.sandbox.runner import Sandbox
from console.services.apply.check import check_apply
from console.services.apply.offset_writer import OffsetWrite, OffsetWriter
from console.services.apply.writer import Applier
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import Workspace
from console.services.plan.load import load_plan
from console.services.plan.planner import Planner
from tests.support.sends import indexed
from tests.support.writes import write_access

QUEUES = 128  # per broker


@pytest.fixture(scope="module")
def runner(plan_runner: SparkRunner) -> SparkRunner:
    return plan_runner


async def test_a_shadow_group_is_created_with_production_offsets_on_every_queue(
    sandbox: Sandbox, runner: SparkRunner, tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:8]
    topic, production, shadow = f"it-wide-{tag}", f"it-prod-{tag}", f"it-shadow-{tag}"
    async with AdminClient([sandbox.namesrv_addr], timeout=10) as admin:
        brokers = sandbox.broker_addrs
        gate = asyncio.Semaphore(64)

        async def send(addr: str, q: int) -> None:
            async with gate:
                await admin.send_message(addr, topic, q, b"wide")

        for addr in brokers.values():
            await admin.create_topic(addr, topic, read_queues=QUEUES, write_queues=QUEUES)
            await admin.create_group(addr, production)
            await admin.create_group(addr, shadow)  # subscribed, never consumed
        await asyncio.gather(
            *(send(addr, q) for addr in brokers.values() for q in range(QUEUES) for _ in range(3))
        )
        for addr in brokers.values():
            await indexed(admin, addr, topic, dict.fromkeys(range(QUEUES), 3))
        theirs = {(b, q): 1 + q % 3 for b in brokers for q in range(QUEUES)}
        made = await OffsetWriter(admin).write(
            OffsetWrite(brokers[b], production, topic, q, o) for (b, q), o in theirs.items()
        )
        assert made.ok, made.summary()

        reader = sandbox.reader(admin)
        ws = Workspace(tmp_path / "ws")
        planner = Planner(ws, runner, reader=reader, cluster="sandbox")
        spec = ResetSpec(Scope("sandbox", (shadow,), topics=(topic,)), ToGroup(production))
        result = await planner.plan(spec)
        path = result.header.reset_paths[shadow]
        assert f"{shadow} has no offsets yet" in path.reason
        assert "created, not moved" in path.reason
        plan = load_plan(ws, result.uri, cluster="sandbox", now_ms=int(time.time() * 1000))
        assert {(r.broker, r.queue_id): (r.current, r.target) for r in plan.rows} == {
            k: (None, o) for k, o in theirs.items()
        }

        check = await check_apply(reader, plan)
        assert check.refusals(accept_drift=False) == ()
        journal = await Applier(write_access(reader, tmp_path / "ws", "sandbox")).apply(check)
        assert journal.status is ApplyStatus.FINISHED
        assert {q.state for q in journal.queues} == {QueueState.VERIFIED}
        assert len(journal.queues) == 2 * QUEUES

        landed = {
            (b, q): await admin.query_consumer_offset(brokers[b], shadow, topic, q)
            for b in brokers
            for q in range(QUEUES)
        }
    assert landed == theirs
