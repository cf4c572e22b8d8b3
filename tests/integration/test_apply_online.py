"""An online group moved back by time on the server-side reset path, with its live Java consumer
running (shipping-service on the sandbox's 5.3.3 brokers): the broker moves the offsets itself,
the read-back converges (at or past each target, short of where the group was), and the
consumer's own log shows every queue's messages delivered again from exactly its target."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from console.domain.journal import ApplyStatus, QueueState
from console.domain.plan import ResetPathKind
from console.domain.spec import ResetSpec, Scope, ToTimestamp
from console.rocketmq.admin import AdminClient
from console.sandbox.runner import Sandbox
from console.sandbox.scenario import GROUP_LIVE, TOPIC_ORDERS
from console.services.apply import Applier
from console.services.apply_check import check_apply
from console.services.cluster import ClusterReader
from console.services.plan_load import load_plan
from console.services.planning import Planner
from console.services.spark_runner import SparkRunner
from console.services.workspace import Workspace
from tests.integration.consumer_log import redelivered_from
from tests.support.writes import write_access

BACK_MS = 5_000  # the reset time: this long before the oldest message the group stands at


@pytest.fixture(scope="module")
def runner(plan_runner: SparkRunner) -> SparkRunner:
    return plan_runner


async def test_an_online_group_replays_from_the_targets_on_the_server_side_path(
    sandbox: Sandbox, runner: SparkRunner, tmp_path: Path
) -> None:
    log = sandbox.consumers[GROUP_LIVE].log
    async with AdminClient([sandbox.namesrv_addr], timeout=10) as admin:
        # A time every queue has consumed past: each target lies behind the group's position.
        standing = []
        for addr in sandbox.broker_addrs.values():
            spans = await admin.consume_time_span(addr, TOPIC_ORDERS, GROUP_LIVE)
            standing += [s.consume_timestamp for s in spans.values() if s.consume_timestamp > 0]
        assert standing, "shipping-service has consumed orders"
        ts = min(standing) - BACK_MS
        reader = ClusterReader(admin, sandbox.cluster_name)
        ws = Workspace(tmp_path / "ws")
        planner = Planner(ws, runner, reader=reader, cluster="sandbox")
        spec = ResetSpec(Scope("sandbox", (GROUP_LIVE,), topics=(TOPIC_ORDERS,)), ToTimestamp(ts))
        made = await planner.plan(spec)
        plan = load_plan(ws, made.uri, cluster="sandbox", now_ms=int(time.time() * 1000))
        check = await check_apply(reader, plan)
        (group,) = check.groups
        assert group.consumers_online >= 1
        assert group.path.kind is ResetPathKind.SERVER_SIDE
        assert check.refusals(accept_drift=False) == ()  # moving forward is not drift online
        targets = {(w.row.broker, w.row.queue_id): w.target for w in check.writes}
        assert all(w.before is not None and w.target < w.before for w in check.writes)
        seen_from = log.stat().st_size

        journal = await Applier(write_access(reader, tmp_path / "ws", "sandbox")).apply(check)

    assert journal.status is ApplyStatus.FINISHED
    assert {q.state for q in journal.queues} == {QueueState.VERIFIED}, [
        (q.broker, q.queue_id, q.before, q.target, q.stored, q.state) for q in journal.queues
    ]
    for q in journal.queues:
        assert q.before is not None
        assert q.stored is not None
        assert q.target <= q.stored < q.before  # moved back, then on from the target

    # The consumer itself delivers each queue again from its target.
    assert await redelivered_from(log, seen_from, targets, TOPIC_ORDERS) == targets
