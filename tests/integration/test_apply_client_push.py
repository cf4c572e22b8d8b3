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
A push resets every queue of its topic on the broker, the ones the plan left unchanged too: a
`latest` plan that left a queue (at its end then) as it was, which got messages since, is
pushed to its end with the rest; the apply journals its before-image, verifies it, and the undo
puts it back with the others. Who is online is asked of every broker of the group's queues: a
consumer of a topic that only broker-b hosts is online, though broker-a, asked first, knows
nobody of the group; a per-queue plan for it is refused, nothing written.
The flag is switched on the sandbox's brokers for these tests only (UPDATE_BROKER_CONFIG) and
switched back whatever happens."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from console.cli import main
from console.config import Config
from console.domain.journal import ApplyStatus, QueueState
from console.domain.reset_paths import ResetPathKind, choose_reset_path
from console.domain.spec import Earliest, Latest, ResetSpec, Scope, ShiftBy, ToTimestamp
from console.rocketmq.admin import AdminClient
from console.sandbox.consumers import wait_online
from console.sandbox.runner import Sandbox
from console.sandbox.scenario import GROUP_LIVE, TOPIC_ORDERS, GroupPlan, Setup
from console.sandbox.seed import send_patiently, wait_for_routes
from console.services.apply.check import ApplyCheck, check_apply
from console.services.apply.events import untold
from console.services.apply.write_check import Confirmation, WriteCheck
from console.services.apply.write_sessions import ClusterWrites
from console.services.apply.writer import Applier
from console.services.infra.journal_store import AuditLog, JournalStore
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import Workspace
from console.services.plan.load import load_plan
from console.services.plan.planner import Planner
from console.services.read.broker_facts import broker_facts
from tests.integration.consumer_log import redelivered_from
from tests.support.groups import BACK_MS, committed, new_group
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
    reader = sandbox.reader(admin)
    made = await Planner(ws, runner, reader=reader, cluster="sandbox").plan(spec)
    plan = load_plan(ws, made.uri, cluster="sandbox", now_ms=int(time.time() * 1000))
    return await check_apply(reader, plan)


async def test_the_client_push_and_the_direct_write_on_brokers_without_server_side_reset(
    sandbox: Sandbox, legacy_reset: AdminClient, runner: SparkRunner, tmp_path: Path
) -> None:
    admin = legacy_reset
    reader = sandbox.reader(admin)
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
    reader = sandbox.reader(admin)
    applier = Applier(write_access(reader, tmp_path / "ws", "sandbox"))
    journal = await applier.apply(replace(check, groups=(seen_online,)))
    assert journal.status is ApplyStatus.FINISHED, journal.stopped_because
    assert {q.state for q in journal.queues} == {QueueState.VERIFIED}
    assert "pushed to the online clients" not in {q.detail for q in journal.queues}
    targets = {(w.row.broker, w.row.queue_id): w.target for w in check.writes}
    assert await committed(sandbox, admin, offline) == targets


# ---- a consumer that only broker-b knows --------------------------------------------------

ONLY_ON = "broker-b"
SOLE_QUEUES = 2
SOLE_MESSAGES = 3  # per queue; the consumer consumes them all


async def committed_on(
    admin: AdminClient, addr: str, group: str, topic: str, queues: int
) -> dict[int, int | None]:
    return {q: await admin.query_consumer_offset(addr, group, topic, q) for q in range(queues)}


async def wait_consumed(
    admin: AdminClient, addr: str, group: str, topic: str, wanted: dict[int, int]
) -> None:
    """Until the group has committed at least `wanted` on each of those queues (a machine
    busy with other test streams: a generous, bounded wait)."""
    deadline = time.monotonic() + 90
    while True:
        held = await committed_on(admin, addr, group, topic, len(wanted))
        if all((held[q] or 0) >= n for q, n in wanted.items()):
            return
        assert time.monotonic() < deadline, f"{group} committed {held}, waiting for {wanted}"
        await asyncio.sleep(0.5)


async def test_a_consumer_heartbeating_only_broker_b_is_online_and_stops_a_direct_write(
    sandbox: Sandbox,
    legacy_reset: AdminClient,
    runner: SparkRunner,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    admin = legacy_reset
    tag = uuid.uuid4().hex[:8]
    topic, group = f"it-b-only-{tag}", f"it-b-only-{tag}"
    addr = sandbox.broker_addrs[ONLY_ON]
    await admin.create_topic(addr, topic, read_queues=SOLE_QUEUES, write_queues=SOLE_QUEUES)
    await admin.create_group(addr, group)
    await wait_for_routes(admin, [topic], {ONLY_ON})
    for q in range(SOLE_QUEUES):
        for n in range(SOLE_MESSAGES):
            await send_patiently(admin, addr, topic, q, b"{}", tags="b-only", keys=str(n))
    consumer = await sandbox.start_consumer(
        GroupPlan(group, topic, Setup.LIVE_CONSUMER, "a consumer of a topic on broker-b only")
    )
    try:
        await wait_online(admin, {ONLY_ON: addr}, [group], timeout=90)
        await wait_consumed(
            admin, addr, group, topic, dict.fromkeys(range(SOLE_QUEUES), SOLE_MESSAGES)
        )
        reader = sandbox.reader(admin)
        brokers = await reader.brokers()
        assert list(brokers)[0] == "broker-a"  # asked first
        # broker-a hosts nothing the consumer uses: it knows no client of the group.
        assert (await admin.consumer_connections(brokers["broker-a"], group)).clients == []

        # Every queue back by one: per-queue targets, which only a direct write can move on
        # these brokers, and the consumer's next commit would overwrite.
        ws = Workspace(tmp_path / "ws")
        spec = ResetSpec(Scope("sandbox", (group,), topics=(topic,)), ShiftBy(-1))
        check = await plan_for(sandbox, admin, runner, ws, spec)
        (g,) = check.groups
        assert g.consumers_online == 1
        assert g.path.kind is ResetPathKind.OFFLINE_UPDATE
        assert "stop the 1 online consumer(s)" in (g.path.blocker or "")

        config = tmp_path / "config.yaml"
        entry = sandbox.config_entry("sandbox")
        config.write_text(yaml.safe_dump({"clusters": [entry], "workspace": str(tmp_path / "ws")}))
        monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config))
        plan_id = check.plan.header.plan_id
        apply = ["apply", plan_id, "--cluster", "sandbox", "--confirm", group]
        assert await asyncio.to_thread(main, apply) == 2
        err = capfd.readouterr().err
        assert f"refused: group {group}: offline update: stop the 1 online consumer(s)" in err
        assert "nothing was written" in err
        assert JournalStore(tmp_path / "ws").all() == []
        assert await committed_on(admin, addr, group, topic, SOLE_QUEUES) == dict.fromkeys(
            range(SOLE_QUEUES), SOLE_MESSAGES
        )
    finally:
        await consumer.stop()


# ---- a push moves every queue of its topic -------------------------------------------------

PUSHED_ON = "broker-a"
PUSHED_QUEUES = 2
#: Per message: the consumer stays behind the messages sent to it, so each queue still lags
#: when the push comes, and the push moves it.
PUSH_SLOW_MS = 500
BACKLOG = 40  # sent to queue 1 before the plan: the queue `latest` moves
LATE = 20  # sent to queue 0 after the plan, which left it (at its end then) unchanged


async def test_a_latest_push_journals_verifies_and_undoes_every_queue_it_moves(
    sandbox: Sandbox,
    legacy_reset: AdminClient,
    runner: SparkRunner,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    admin = legacy_reset
    tag = uuid.uuid4().hex[:8]
    topic, group = f"it-push-all-{tag}", f"it-push-all-{tag}"
    addr = sandbox.broker_addrs[PUSHED_ON]
    await admin.create_topic(addr, topic, read_queues=PUSHED_QUEUES, write_queues=PUSHED_QUEUES)
    await admin.create_group(addr, group)
    await wait_for_routes(admin, [topic], {PUSHED_ON})

    async def send(queue_id: int, count: int) -> None:
        for n in range(count):
            await send_patiently(admin, addr, topic, queue_id, b"{}", tags="push", keys=str(n))

    # A message on every queue, consumed: a legacy push fails whole on a queue the group never
    # committed.
    for q in range(PUSHED_QUEUES):
        await send(q, 1)
    consumer = await sandbox.start_consumer(
        GroupPlan(group, topic, Setup.LIVE_CONSUMER, "a slow consumer", sleep_ms=PUSH_SLOW_MS)
    )
    try:
        await wait_online(admin, {PUSHED_ON: addr}, [group], timeout=90)
        await wait_consumed(admin, addr, group, topic, dict.fromkeys(range(PUSHED_QUEUES), 1))
        await send(1, BACKLOG)
        ws = Workspace(tmp_path / "ws")
        reader = sandbox.reader(admin)
        spec = ResetSpec(Scope("sandbox", (group,), topics=(topic,)), Latest())
        made = await Planner(ws, runner, reader=reader, cluster="sandbox").plan(spec)
        plan = load_plan(ws, made.uri, cluster="sandbox", now_ms=int(time.time() * 1000))
        assert [r.queue_id for r in plan.changed] == [1]
        (left,) = (r for r in plan.rows if not r.changed)
        assert (left.queue_id, left.current, left.target) == (0, 1, 1)  # at its end
        # Queue 0 gets messages after the plan, and the consumer starts on them.
        await send(0, LATE)
        await wait_consumed(admin, addr, group, topic, {0: 2, 1: 0})

        config = tmp_path / "config.yaml"
        entry = sandbox.config_entry("sandbox")
        config.write_text(yaml.safe_dump({"clusters": [entry], "workspace": str(tmp_path / "ws")}))
        monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config))
        apply = ["apply", plan.header.plan_id, "--cluster", "sandbox", "--confirm", group]
        code = await asyncio.to_thread(main, [*apply, "--json"])
        out, err = capfd.readouterr()
        assert code == 0, err
        assert f"reset path for {group} (1 consumer(s) online): client push - " in err
        assert "the client push also moves 1 queue(s) the plan leaves unchanged" in err
        shown = json.loads(out)
        queues = {q["queue_id"]: q for q in shown["queues"]}
        assert set(queues) == set(range(PUSHED_QUEUES))  # the plan's unchanged queue too
        assert {q["state"] for q in queues.values()} == {str(QueueState.VERIFIED)}, queues
        maxes = {
            mq.queue_id: s.max_offset for mq, s in (await admin.topic_stats(addr, topic)).items()
        }
        # Each queue was behind where the push moved it: to the end of the queue. Queue 0's
        # before-image is where the consumer stood at the apply, not where the plan saw it.
        assert {q: (v["target"], v["stored"]) for q, v in queues.items()} == {
            q: (m, m) for q, m in maxes.items()
        }
        assert 1 < queues[0]["before"] < maxes[0]
        assert queues[1]["before"] < maxes[1]
        befores = {q: v["before"] for q, v in queues.items()}
        assert await committed_on(admin, addr, group, topic, PUSHED_QUEUES) == maxes
        audit = list(AuditLog(tmp_path / "ws").read())
        assert sorted((x["queue"], x["before"], x["result"]) for x in audit) == [
            (q, befores[q], "verified") for q in range(PUSHED_QUEUES)
        ]

        # The undo puts every queue back, the one the plan left too. Per-queue targets on
        # these brokers are written directly: the consumer is stopped first.
        await consumer.stop()
        await wait_offline(admin, addr, group)
        console = Config(
            clusters=(sandbox.cluster_config("sandbox"),),
            workspace=str(tmp_path / "ws"),
            spark_master="local[2]",  # the console's warm session: `plan_runner`'s
        )
        doors = ClusterWrites(console)

        async def typed(check: WriteCheck) -> Confirmation:
            return Confirmation((group,))

        undone = await doors.run(
            console.clusters[0],
            doors.undo(shown["apply_id"]),
            typed,
            untold,
            asyncio.Event(),
        )
        assert undone.journal is not None, undone.refused
        assert undone.exit_code == 0
        assert undone.journal.undo_of == shown["apply_id"]
        assert {(q.queue_id, q.target, q.state) for q in undone.journal.queues} == {
            (q, b, QueueState.VERIFIED) for q, b in befores.items()
        }
        assert await committed_on(admin, addr, group, topic, PUSHED_QUEUES) == befores
    finally:
        await consumer.stop()


async def wait_offline(admin: AdminClient, addr: str, group: str) -> None:
    """Until the broker lists no client of the group (a stopped consumer unregisters)."""
    deadline = time.monotonic() + 60
    while (await admin.consumer_connections(addr, group)).clients:
        assert time.monotonic() < deadline, f"{group} still online after 60 s"
        await asyncio.sleep(0.5)
