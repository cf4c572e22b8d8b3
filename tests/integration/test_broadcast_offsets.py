"""The BROADCASTING group `notifications`: its Java client keeps the offsets in its own
offsets.json, which the console shows beside the brokers' min and max; with the client stopped an
apply rewrites that file, and the restarted client consumes from the new offsets."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from console.domain.journal import ApplyStatus, QueueState
from console.domain.reset_paths import ResetPathKind
from console.domain.spec import ResetSpec, Scope, ShiftBy
from console.domain.undo import undo_spec
from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import RocketMQError
from console.sandbox.runner import Sandbox
from console.sandbox.scenario import GROUP_BROADCAST, TOPIC_ORDERS
from console.services.apply.check import check_apply
from console.services.apply.writer import Applier
from console.services.infra.journal_store import JournalStore
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import Workspace
from console.services.plan.load import load_plan
from console.services.plan.planner import Planner
from tests.integration.consumer_log import redelivered_from
from tests.support.writes import write_access

#: One queue object and its offset, as the Java client writes them (read here without the
#: console's parser).
ENTRY = re.compile(
    r'"brokerName":"([^"]+)",\s*"queueId":(\d+),\s*"topic":"([^"]+)"\s*\}:(\d+)', re.MULTILINE
)
BACK = 3


def file_offsets(path: Path) -> dict[tuple[str, int], int]:
    return {
        (broker, int(q)): int(offset)
        for broker, q, topic, offset in ENTRY.findall(path.read_text())
        if topic == TOPIC_ORDERS
    }


def offsets_file(sandbox: Sandbox) -> Path:
    """The client's file, once it has written it (every 5 s while it runs)."""
    deadline = time.monotonic() + 60
    while True:
        found = [
            p
            for d in sandbox.client_offset_dirs
            for p in Path(d).glob(f"*/{GROUP_BROADCAST}/offsets.json")
        ]
        if found or time.monotonic() > deadline:
            (path,) = found
            return path
        time.sleep(0.5)


async def online_clients(admin: AdminClient, sandbox: Sandbox) -> set[str]:
    out: set[str] = set()
    for addr in sandbox.broker_addrs.values():
        try:
            found = await admin.consumer_connections(addr, GROUP_BROADCAST)
        except RocketMQError:  # CONSUMER_NOT_ONLINE: nobody on this broker
            continue
        out |= {c.client_id for c in found.clients}
    return out


def test_lag_shows_the_clients_own_offsets(sandbox: Sandbox, tmp_path: Path) -> None:
    path = offsets_file(sandbox)
    config = tmp_path / "config.yaml"
    config.write_text("{}\n")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "RMQ_CONSOLE_CONFIG": str(config),
        "RMQ_CONSOLE_CLIENT_OFFSETS": os.pathsep.join(sandbox.client_offset_dirs),
    }
    exe = Path(sys.executable).with_name("rmq-console")
    argv = [str(exe), "lag", "-g", GROUP_BROADCAST, "--namesrv", sandbox.namesrv_addr, "--json"]
    # The running client rewrites its file every second or so, and a loaded machine may take
    # longer than that for the whole command: compare with a read that no rewrite straddled,
    # else with the file before and after (the client's offsets only move forward).
    for _ in range(5):
        before = file_offsets(path)
        done = subprocess.run(
            argv, capture_output=True, text=True, env=env, timeout=120, check=False
        )
        after = file_offsets(path)
        if after == before:
            break
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["client_local"] is True
    assert doc["total_lag"] is None  # never the brokers' zero
    (store,) = doc["client_offsets"]
    assert store["client_id"] == path.parent.parent.name
    assert store["running"] is True
    assert store["path"] == str(path)
    assert store["error"] is None
    shown = {(q["broker"], q["queue_id"]): q for q in store["queues"] if q["topic"] == TOPIC_ORDERS}
    committed = {k: q["committed"] for k, q in shown.items()}
    if after == before:
        assert committed == before
    else:
        assert committed.keys() == before.keys() == after.keys()
        assert all(before[k] <= committed[k] <= after[k] for k in committed), (before, after)
    for q in shown.values():
        assert q["lag"] == q["max_offset"] - q["committed"] >= 0
    assert store["total_lag"] == sum(q["lag"] for q in store["queues"])

    text = subprocess.run(
        argv[:-1], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert text.returncode == 0, text.stderr
    assert f"client {store['client_id']}  RUNNING" in text.stdout
    assert "total lag 0" not in text.stdout


async def test_an_apply_rewrites_the_stopped_clients_file_and_it_resumes_from_there(
    sandbox: Sandbox, plan_runner: SparkRunner, tmp_path: Path
) -> None:
    consumer = sandbox.consumers[GROUP_BROADCAST]
    path = offsets_file(sandbox)
    dirs = sandbox.client_offset_dirs
    ws = Workspace(tmp_path / "ws")
    async with AdminClient([sandbox.namesrv_addr], timeout=10) as admin:
        reader = sandbox.reader(admin)
        planner = Planner(
            ws, plan_runner, reader=reader, cluster="sandbox", client_offset_dirs=dirs
        )
        spec = ResetSpec(
            Scope("sandbox", (GROUP_BROADCAST,), topics=(TOPIC_ORDERS,)), ShiftBy(-BACK)
        )
        # While the client runs, the plan says so and the apply refuses to touch its file.
        running = await planner.plan(spec)
        path_now = running.header.reset_paths[GROUP_BROADCAST]
        assert path_now.kind is ResetPathKind.CLIENT_FILE
        assert path_now.blocker is not None
        assert "is running" in path_now.blocker
        plan = load_plan(ws, running.uri, cluster="sandbox", now_ms=int(time.time() * 1000))
        refused = (await check_apply(reader, plan)).refusals(accept_drift=True)
        assert any("is running" in line for line in refused)

        await consumer.stop()
        try:
            # A clean shutdown unregisters at once; a missed unregister lasts until the
            # brokers expire the idle channel (120 s).
            deadline = time.monotonic() + 150
            while await online_clients(admin, sandbox):
                assert time.monotonic() < deadline, "the stopped client still shows online"
                await asyncio.sleep(0.5)
            before = file_offsets(path)
            before_text = path.read_text()
            made = await planner.plan(spec)
            assert made.header.reset_paths[GROUP_BROADCAST].blocker is None
            plan = load_plan(ws, made.uri, cluster="sandbox", now_ms=int(time.time() * 1000))
            check = await check_apply(reader, plan)
            assert check.refusals(accept_drift=False) == ()
            targets = {(w.row.broker, w.row.queue_id): w.target for w in check.writes}
            assert targets == {k: max(v - BACK, 0) for k, v in before.items()}

            journal = await Applier(write_access(reader, tmp_path / "ws", "sandbox")).apply(check)

            assert journal.status is ApplyStatus.FINISHED
            assert journal.paths == {GROUP_BROADCAST: str(ResetPathKind.CLIENT_FILE)}
            assert {q.state for q in journal.queues} == {QueueState.VERIFIED}
            assert {(q.broker, q.queue_id): q.before for q in journal.queues} == before
            assert file_offsets(path) == targets
            assert path.with_name("offsets.json.bak").read_text() == before_text

            # Undone from its journal: the file holds the before-image again.
            undo = undo_spec(journal, str(JournalStore(tmp_path / "ws").path(journal.apply_id)))
            back = await planner.plan(undo.spec)
            back_plan = load_plan(ws, back.uri, cluster="sandbox", now_ms=int(time.time() * 1000))
            back_check = await check_apply(reader, back_plan)
            assert back_check.refusals(accept_drift=False) == ()
            undone = await Applier(write_access(reader, tmp_path / "ws", "sandbox")).apply(
                back_check, kind="undo", undo_of=journal.apply_id
            )
            assert {q.state for q in undone.queues} == {QueueState.VERIFIED}
            assert file_offsets(path) == before
            # The first plan holds again (no drift), and is applied once more.
            again = await check_apply(reader, plan)
            assert again.refusals(accept_drift=False) == ()
            await Applier(write_access(reader, tmp_path / "ws", "sandbox")).apply(again)
            assert file_offsets(path) == targets
        finally:
            seen_from = consumer.log.stat().st_size
            await consumer.start()
    # The restarted client loads the rewritten file and is handed each queue from its target.
    assert await redelivered_from(consumer.log, seen_from, targets, TOPIC_ORDERS) == targets
