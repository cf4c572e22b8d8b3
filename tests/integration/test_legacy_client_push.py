"""Against a real RocketMQ 4.9.7 broker (no server-side reset before 5.1) with a live consumer: a
spec written as the plain word `strategy: earliest` is planned, checked and applied by the client
push the plan named (the broker sends the timestamp 0 to the consumer, which commits each
queue's first offset), verified by reading back, and the consumer is handed every queue again
from its first message.

The plan keeps its spec as a typed value, parsed once when plan.json is read: the check before
writing once read the raw mapping, took the word "earliest" for per-queue targets and refused
("offline update ... stop the online consumers first"), so no 4.9.x cluster with live consumers
could be moved back to the earliest offsets.

The consumer is the sandbox's Java consumer with the 5.3.3 client (a 5.x client on a 4.9.7
broker, as after a client upgrade), slow as a real one is, started for this test only and stopped
whatever happens.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from console.domain.journal import ApplyStatus, QueueState
from console.domain.reset_paths import ResetPathKind
from console.domain.spec import Earliest
from console.rocketmq.admin import AdminClient
from console.rocketmq.topics import retry_topic
from console.sandbox.cache import cache_root
from console.sandbox.consumers import ConsumerSpec, JavaConsumer, wait_online
from console.sandbox.jars import fetch_jars
from console.sandbox.javabuild import build_consumer
from console.sandbox.legacy import LEGACY_BROKER, LegacySandbox
from console.sandbox.seed import send_patiently, wait_for_routes
from console.sandbox.toolchain import find_tools
from console.services.apply.check import check_apply
from console.services.apply.writer import Applier
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import Workspace
from console.services.plan.load import load_plan
from console.services.plan.planner import Planner
from console.services.plan.spec_files import load_spec
from console.services.read.reader import ClusterReader
from tests.integration.consumer_log import redelivered_from
from tests.support.writes import write_access

TOPIC = "v4-push"
GROUP = "v4-pusher"
QUEUES = 2
MESSAGES = 8  # per queue
#: Per message: the replay after the reset takes seconds, so the read-back sees each queue hold
#: a position between the target and where it stood (a consumer that re-reads its queues at
#: once would be back at its old position before any read-back could tell it moved).
SLEEP_MS = 800
CLUSTER = "legacy"


async def consumed_all(admin: AdminClient, addr: str, timeout: float = 90.0) -> None:
    """Wait until the group has committed every message of every queue (its lag is 0)."""
    deadline = time.monotonic() + timeout
    while True:
        held = [await admin.query_consumer_offset(addr, GROUP, TOPIC, q) for q in range(QUEUES)]
        if held == [MESSAGES] * QUEUES:
            return
        assert time.monotonic() < deadline, f"the consumer committed {held} of {MESSAGES}"
        await asyncio.sleep(1)


@pytest.fixture
async def consumer(legacy_cluster: LegacySandbox, tmp_path: Path) -> AsyncIterator[JavaConsumer]:
    """The topic and the group on the 4.9.7 broker, its messages, and a live Java consumer
    (5.3.3 client) that has consumed them all; stopped at the end."""
    legacy = legacy_cluster
    addr = legacy.broker_addr
    async with legacy.admin(timeout=10) as admin:
        await admin.create_topic(addr, TOPIC, read_queues=QUEUES, write_queues=QUEUES)
        await admin.create_topic(addr, retry_topic(GROUP), read_queues=1, write_queues=1)
        await admin.create_group(addr, GROUP)
        await wait_for_routes(admin, [TOPIC, retry_topic(GROUP)], {LEGACY_BROKER})
        for queue_id in range(QUEUES):
            for seq in range(MESSAGES):
                body = f'{{"queue": {queue_id}, "seq": {seq}}}'.encode()
                await send_patiently(admin, addr, TOPIC, queue_id, body, tags="push", keys=str(seq))
        dist = (await fetch_jars(cache_root())).distribution
        classes = await build_consumer(dist)
        java = JavaConsumer(
            ConsumerSpec(name=GROUP, group=GROUP, topics=(TOPIC,), sleep_ms=SLEEP_MS),
            java=find_tools().java,
            classpath=f"{classes}:{dist.classpath}",
            namesrv=legacy.namesrv_addr,
            run_dir=tmp_path / "run",
        )
        try:
            # A machine busy with other test streams: generous, bounded waits.
            await java.start(timeout=120)
            await wait_online(admin, {LEGACY_BROKER: addr}, [GROUP], timeout=90)
            await consumed_all(admin, addr)
            yield java
        finally:
            await java.stop()


async def test_a_plain_earliest_is_pushed_to_the_live_consumer_and_verified(
    legacy_cluster: LegacySandbox,
    consumer: JavaConsumer,
    plan_runner: SparkRunner,
    tmp_path: Path,
) -> None:
    spec_file = tmp_path / "reset.yaml"
    spec_file.write_text(
        f"scope: {{cluster: {CLUSTER}, groups: [{GROUP}], topics: [{TOPIC}]}}\nstrategy: earliest\n"
    )
    spec = load_spec(spec_file)
    assert spec.strategy == Earliest()
    workspace = Workspace(tmp_path / "ws")
    async with legacy_cluster.admin(timeout=10) as admin:
        reader = ClusterReader(admin, legacy_cluster.cluster_name)
        made = await Planner(workspace, plan_runner, reader=reader, cluster=CLUSTER).plan(spec)
        assert made.header.reset_paths[GROUP].kind is ResetPathKind.CLIENT_PUSH
        # As an apply takes it: plan.json read back from the workspace.
        plan = load_plan(workspace, made.uri, cluster=CLUSTER, now_ms=int(time.time() * 1000))
        assert plan.header.spec.strategy == Earliest()
        check = await check_apply(reader, plan)
        assert check.refusals(accept_drift=False) == ()
        (group,) = check.groups
        assert group.consumers_online == 1
        assert group.path.kind is ResetPathKind.CLIENT_PUSH, group.path
        assert group.push_timestamp == 0  # the earliest offset of every queue
        targets = {(w.row.broker, w.row.queue_id): w.target for w in check.writes}
        assert targets == {(LEGACY_BROKER, q): 0 for q in range(QUEUES)}
        seen_from = consumer.log.stat().st_size
        journal = await Applier(write_access(reader, tmp_path / "ws", CLUSTER)).apply(check)
    assert journal.status is ApplyStatus.FINISHED, journal.stopped_because
    assert {q.state for q in journal.queues} == {QueueState.VERIFIED}, [
        (q.queue_id, q.before, q.target, q.stored, q.state, q.detail) for q in journal.queues
    ]
    # The consumer was handed each queue again from its first message.
    assert await redelivered_from(consumer.log, seen_from, targets, TOPIC) == targets
