"""Brokers that do not reset offsets themselves (useServerSideResetOffset=false, as on brokers
before 5.1): the live group shipping-service moved back by time through the client push (the
broker sends the new offsets to the online Java consumer, which commits them), verified, and
re-delivered from the targets; an offline group on the same brokers takes the direct-write path.
Per-queue targets for the live group (a shift) could only be written directly, which its
consumer would overwrite: `apply` refuses, naming the blocker, and writes nothing. A push whose
consumers left after the check is answered CONSUMER_NOT_ONLINE by the brokers, and the apply
writes those queues directly instead.
The client acts on a push only for the queues it holds when it comes; after the first push, and
after a broker's pause (earlier tests in the same sandbox pause broker-b), it holds fewer until
its next rebalance. The apply waits for it to hold them and pushes again when a push does not
show; tests/unit/test_client_push.py holds each such case still.
The flag is switched on the sandbox's brokers for these tests only (UPDATE_BROKER_CONFIG) and
switched back whatever happens."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from console.cli import main
from console.domain.journal import ApplyStatus, QueueState
from console.domain.plan import ResetPathKind, choose_reset_path
from console.domain.spec import Earliest, ResetSpec, Scope, ShiftBy, ToTimestamp
from console.rocketmq.admin import AdminClient
from console.sandbox.runner import Sandbox
from console.sandbox.scenario import GROUP_LIVE, TOPIC_ORDERS
from console.services.apply import Applier
from console.services.apply_check import ApplyCheck, check_apply
from console.services.broker_facts import broker_facts
from console.services.cluster import ClusterReader
from console.services.journal_store import AuditLog, JournalStore
from console.services.plan_load import load_plan
from console.services.planning import Planner
from console.services.spark_runner import SparkRunner
from console.services.workspace import Workspace
from tests.integration.consumer_log import redelivered_from
from tests.integration.test_apply import committed, new_group
from tests.integration.test_apply_online import BACK_MS
from tests.support.writes import write_access

UPDATE_BROKER_CONFIG = 25


@pytest.fixture(scope="module")
def runner(plan_runner: SparkRunner) -> SparkRunner:
    return plan_runner


async def server_side(admin: AdminClient, sandbox: Sandbox, on: bool) -> None:
    body = f"useServerSideResetOffset={'true' if on else 'false'}\n".encode()
    for addr in sandbox.broker_addrs.values():
        await admin.call(addr, UPDATE_BROKER_CONFIG, body=body)
        assert (await admin.broker_config(addr))["useServerSideResetOffset"] == str(on).lower()


@pytest.fixture
async def legacy_reset(sandbox: Sandbox) -> AsyncIterator[AdminClient]:
    async with sandbox.admin(timeout=10) as admin:
        await server_side(admin, sandbox, on=False)
        try:
            yield admin
        finally:
            await server_side(admin, sandbox, on=True)


async def plan_for(
    sandbox: Sandbox, admin: AdminClient, runner: SparkRunner, ws: Workspace, spec: ResetSpec
) -> ApplyCheck:
    reader = ClusterReader(admin, sandbox.cluster_name)
    made = await Planner(ws, runner, reader=reader, cluster="sandbox").plan(spec)
    plan = load_plan(ws, made.uri, cluster="sandbox", now_ms=int(time.time() * 1000))
    return await check_apply(reader, plan)


async def test_the_client_push_and_the_direct_write_on_brokers_without_server_side_reset(
    sandbox: Sandbox, legacy_reset: AdminClient, runner: SparkRunner, tmp_path: Path
) -> None:
    admin = legacy_reset
    reader = ClusterReader(admin, sandbox.cluster_name)
    applier = Applier(write_access(reader, tmp_path / "ws", "sandbox"))
    ws = Workspace(tmp_path / "ws")

    # The online group, back by time: the broker pushes the time to its clients.
    standing = []
    for addr in sandbox.broker_addrs.values():
        spans = await admin.consume_time_span(addr, TOPIC_ORDERS, GROUP_LIVE)
        standing += [s.consume_timestamp for s in spans.values() if s.consume_timestamp > 0]
    ts = min(standing) - BACK_MS
    spec = ResetSpec(Scope("sandbox", (GROUP_LIVE,), topics=(TOPIC_ORDERS,)), ToTimestamp(ts))
    check = await plan_for(sandbox, admin, runner, ws, spec)
    (group,) = check.groups
    assert group.path.kind is ResetPathKind.CLIENT_PUSH, group.path
    assert group.push_timestamp == ts
    targets = {(w.row.broker, w.row.queue_id): w.target for w in check.writes}
    log = sandbox.consumers[GROUP_LIVE].log
    seen_from = log.stat().st_size
    journal = await applier.apply(check)
    assert journal.status is ApplyStatus.FINISHED
    assert {q.state for q in journal.queues} == {QueueState.VERIFIED}, [
        (q.broker, q.queue_id, q.before, q.target, q.stored, q.state, q.detail)
        for q in journal.queues
    ]
    assert await redelivered_from(log, seen_from, targets, TOPIC_ORDERS) == targets

    # An offline group on the same brokers: written directly, nobody to push to.
    offline, before = await new_group(sandbox, admin)
    spec = ResetSpec(Scope("sandbox", (offline,), topics=(TOPIC_ORDERS,)), ShiftBy(-3))
    check = await plan_for(sandbox, admin, runner, ws, spec)
    (group,) = check.groups
    assert group.path.kind is ResetPathKind.OFFLINE_UPDATE, group.path
    journal = await applier.apply(check)
    assert {q.state for q in journal.queues} == {QueueState.VERIFIED}
    assert await committed(sandbox, admin, offline) == {k: v - 3 for k, v in before.items()}


async def test_shifting_a_live_group_is_refused_and_a_push_nobody_hears_is_written_directly(
    sandbox: Sandbox,
    legacy_reset: AdminClient,
    runner: SparkRunner,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    admin = legacy_reset
    ws = Workspace(tmp_path / "ws")
    config = tmp_path / "config.yaml"
    cluster = sandbox.config_entry("sandbox")
    config.write_text(yaml.safe_dump({"clusters": [cluster], "workspace": str(tmp_path / "ws")}))
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config))

    # The live group, every queue shifted back: no timestamp to push, and a direct write would
    # be overwritten by the consumer's next commit. Refused before anything is written.
    spec = ResetSpec(Scope("sandbox", (GROUP_LIVE,), topics=(TOPIC_ORDERS,)), ShiftBy(-3))
    check = await plan_for(sandbox, admin, runner, ws, spec)
    (group,) = check.groups
    assert group.path.kind is ResetPathKind.OFFLINE_UPDATE, group.path
    assert group.consumers_online > 0
    planned = {(r.broker, r.queue_id): r.current for r in check.plan.changed}
    plan_id = check.plan.header.plan_id
    # The command runs its own event loop: on a thread of its own, as from a shell.
    apply = ["apply", plan_id, "--cluster", "sandbox", "--confirm", GROUP_LIVE]
    assert await asyncio.to_thread(main, apply) == 2
    err = capfd.readouterr().err
    assert f"refused: group {GROUP_LIVE}: offline update: stop the" in err
    assert "online consumer(s) first" in err
    assert "nothing was written" in err
    assert JournalStore(tmp_path / "ws").all() == []
    assert list(AuditLog(tmp_path / "ws").read()) == []
    now = await committed(sandbox, admin, GROUP_LIVE)
    # The consumer only moves its offsets forward; a shift by -3 would have gone back.
    assert all((now[k] or 0) >= (v or 0) for k, v in planned.items()), (planned, now)

    # An offline group checked while a consumer was online (the client push, to the earliest
    # offsets), whose consumer left before the writes: each broker answers the push with
    # CONSUMER_NOT_ONLINE and the queues are written directly. Had a push been taken, nobody
    # would have committed the targets and the read-back would not verify them.
    offline, _ = await new_group(sandbox, admin)
    spec = ResetSpec(Scope("sandbox", (offline,), topics=(TOPIC_ORDERS,)), Earliest())
    check = await plan_for(sandbox, admin, runner, ws, spec)
    (group,) = check.groups
    facts = await broker_facts(admin, sandbox.broker_addrs)
    push = choose_reset_path(
        list(facts.values()), consumers_online=1, broadcasting=False, per_queue=False
    )
    assert push.kind is ResetPathKind.CLIENT_PUSH, push
    seen_online = replace(group, path=push, consumers_online=1, push_timestamp=0)
    reader = ClusterReader(admin, sandbox.cluster_name)
    applier = Applier(write_access(reader, tmp_path / "ws", "sandbox"))
    journal = await applier.apply(replace(check, groups=(seen_online,)))
    assert journal.status is ApplyStatus.FINISHED, journal.stopped_because
    assert {q.state for q in journal.queues} == {QueueState.VERIFIED}
    assert "pushed to the online clients" not in {q.detail for q in journal.queues}
    targets = {(w.row.broker, w.row.queue_id): w.target for w in check.writes}
    assert await committed(sandbox, admin, offline) == targets
