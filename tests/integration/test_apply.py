"""Applying plans to the sandbox's two 5.3.3 brokers, on a group of the test's own (so the other
tests' groups keep their offsets): the plan's targets land and are read back, the journal and the
audit log hold every queue, and a commit made between planning and applying is drift that stops
the apply before anything is written — `apply` exits 2 naming it — unless accepted with
`--accept-drift`, which the journal records."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from console.cli import main
from console.domain.journal import ApplyStatus, Journal, QueueState
from console.domain.reset_paths import ResetPathKind
from console.errors import Refused
from console.locations import CACHE_ENV
from console.rocketmq.admin import AdminClient
from console.rocketmq.topics import retry_topic
from console.sandbox.mqadmin_oracle import parse_consumer_progress
from console.sandbox.runner import Sandbox
from console.sandbox.scenario import TOPIC_ORDERS
from console.sandbox.seed import wait_for_routes
from console.services.apply.check import check_apply
from console.services.apply.resume_check import check_resume
from console.services.apply.writer import Applier
from console.services.infra.journal_store import AuditLog, JournalStore
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import Workspace
from console.services.plan.load import load_plan
from console.services.read.broker_facts import broker_facts
from tests.connect import ConnectServer
from tests.integration.faults import broker_answers
from tests.support.groups import Queue, committed, fresh_group, new_group, offsets_of, shift_plan
from tests.support.writes import write_access


@pytest.fixture(scope="module")
def runner(plan_runner: SparkRunner) -> SparkRunner:
    return plan_runner


@pytest.fixture
async def admin(sandbox: Sandbox) -> AsyncIterator[AdminClient]:
    async with sandbox.admin(timeout=10) as client:
        yield client


async def offline_path(sandbox: Sandbox, admin: AdminClient) -> ResetPathKind:
    """How the brokers move a group nobody consumes: themselves (server-side reset), unless
    their offset store would forget it (5.4+ with the v2 store: a direct write)."""
    facts = await broker_facts(admin, sandbox.broker_addrs)
    if any(f.forgets_resets for f in facts.values()):
        return ResetPathKind.OFFLINE_UPDATE
    return ResetPathKind.SERVER_SIDE


async def test_a_plan_is_applied_verified_journaled_and_audited(
    sandbox: Sandbox, admin: AdminClient, runner: SparkRunner, tmp_path: Path
) -> None:
    group, before = await new_group(sandbox, admin)
    ws = Workspace(tmp_path / "ws")
    plan = await shift_plan(sandbox, admin, runner, ws, group)
    reader = sandbox.reader(admin)
    check = await check_apply(reader, plan)
    assert check.drift == ()
    assert check.blockers == ()
    (g,) = check.groups
    # 5.3.3 brokers with useServerSideResetOffset=true: the broker moves the offsets itself.
    assert g.path.kind is await offline_path(sandbox, admin)
    assert g.consumers_online == 0

    journal = await Applier(write_access(reader, tmp_path / "ws", "sandbox")).apply(check)

    assert journal.status is ApplyStatus.FINISHED
    assert {q.state for q in journal.queues} == {QueueState.VERIFIED}
    assert {(q.broker, q.queue_id): (q.before, q.target) for q in journal.queues} == {
        k: (v, v - 3) for k, v in before.items()
    }
    assert await committed(sandbox, admin, group) == {k: v - 3 for k, v in before.items()}
    assert JournalStore(tmp_path / "ws").load(journal.apply_id) == journal
    lines = list(AuditLog(tmp_path / "ws").read())
    assert len(lines) == len(before)
    assert {(x["broker"], x["queue"]): (x["before"], x["after"]) for x in lines} == {
        k: (v, v - 3) for k, v in before.items()
    }
    assert {x["result"] for x in lines} == {"verified"}
    assert {x["path"] for x in lines} == {str(g.path.kind)}


def test_drift_stops_the_apply_command_before_any_write_unless_accepted(
    sandbox: Sandbox,
    runner: SparkRunner,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / "config.yaml"
    cluster = sandbox.config_entry("sandbox")
    config.write_text(yaml.safe_dump({"clusters": [cluster], "workspace": str(tmp_path / "ws")}))
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config))

    async def plan_and_move_one() -> tuple[str, dict[Queue, int], Queue, str]:
        async with sandbox.admin(timeout=10) as admin:
            group, before = await new_group(sandbox, admin)
            plan = await shift_plan(sandbox, admin, runner, Workspace(tmp_path / "ws"), group)
            # Another client commits one queue after the plan was made.
            (broker, queue_id) = moved = sorted(before)[0]
            addr = sandbox.broker_addrs[broker]
            await admin.update_consumer_offset(
                addr, group, TOPIC_ORDERS, queue_id, before[moved] + 1
            )
            check = await check_apply(sandbox.reader(admin), plan)
            assert [(d.key[2], d.key[3], d.planned, d.now) for d in check.drift] == [
                (broker, queue_id, before[moved], before[moved] + 1)
            ]
            return group, before, moved, plan.header.plan_id

    async def offsets(group: str) -> dict[Queue, int | None]:
        async with sandbox.admin(timeout=10) as admin:
            return await committed(sandbox, admin, group)

    group, before, moved, plan_id = asyncio.run(plan_and_move_one())
    broker, queue_id = moved
    apply = ["apply", plan_id, "--cluster", "sandbox", "--confirm", group]

    assert main(apply) == 2
    out, err = capfd.readouterr()
    assert "drift: 1 queue(s) moved since the plan was made" in out
    assert "refused: 1 queue(s) moved since the plan was made (re-plan, or accept" in err
    assert f"orders/{broker}/{queue_id}: planned from {before[moved]}, now" in err
    assert "nothing was written" in err
    assert asyncio.run(offsets(group)) == {**before, moved: before[moved] + 1}
    assert JournalStore(tmp_path / "ws").all() == []  # refused before a journal was begun

    assert main([*apply, "--accept-drift", "--json"]) == 0
    shown = json.loads(capfd.readouterr().out)
    accepted = [f"{group} orders/{broker}/{queue_id}"]
    assert shown["drift_accepted"] == accepted
    assert {q["state"] for q in shown["queues"]} == {"verified"}
    assert asyncio.run(offsets(group)) == {k: v - 3 for k, v in before.items()}
    (journal,) = JournalStore(tmp_path / "ws").all()
    assert isinstance(journal, Journal)
    assert (journal.apply_id, journal.drift_accepted) == (shown["apply_id"], tuple(accepted))
    assert journal.status is ApplyStatus.FINISHED
    lines = list(AuditLog(tmp_path / "ws").read())
    assert sorted((x["broker"], x["queue"]) for x in lines) == sorted(before)


async def test_an_apply_cut_off_by_a_hung_broker_resumes_without_writing_twice(
    sandbox: Sandbox, admin: AdminClient, runner: SparkRunner, tmp_path: Path
) -> None:
    group, before = await new_group(sandbox, admin)
    ws = Workspace(tmp_path / "ws")
    plan = await shift_plan(sandbox, admin, runner, ws, group)
    hung = "broker-b"
    pid, addr = sandbox.pids()[hung], sandbox.broker_addrs[hung]
    async with sandbox.admin(timeout=2) as quick:
        reader = sandbox.reader(quick)
        check = await check_apply(reader, plan)
        assert check.refusals(accept_drift=False) == ()
        # broker-b stops answering between the check and the writes (a GC pause, a partition).
        os.kill(pid, signal.SIGSTOP)
        try:
            cut = await Applier(write_access(reader, tmp_path / "ws", "sandbox")).apply(check)
        finally:
            os.kill(pid, signal.SIGCONT)
    states = {(q.broker, q.queue_id): q.state for q in cut.queues}
    assert {s for (b, _), s in states.items() if b != hung} == {QueueState.VERIFIED}
    assert QueueState.VERIFIED not in {s for (b, _), s in states.items() if b == hung}
    assert {(q.broker, q.queue_id) for q in cut.unfinished} == {k for k in before if k[0] == hung}
    deadline = time.monotonic() + 120
    while not await broker_answers(sandbox.namesrv_addr, hung, addr):
        assert time.monotonic() < deadline, f"{hung} did not answer again within 120 s"
        await asyncio.sleep(0.5)

    store = JournalStore(tmp_path / "ws")
    assert store.unfinished() == ([cut] if cut.status is not ApplyStatus.FINISHED else [])
    reader = sandbox.reader(admin)
    again = await check_resume(reader, store.load(cut.apply_id))
    assert (again.drift, again.blockers) == ((), ())
    # Writes the paused broker took in before it froze land when it runs again: those are
    # found at their target and not written a second time.
    arrived = {(q.broker, q.queue_id) for q in again.arrived}
    written = {(w.row.broker, w.row.queue_id) for w in again.writes}
    assert arrived | written == {k for k in before if k[0] == hung}
    assert not arrived & written
    done = await Applier(write_access(reader, tmp_path / "ws", "sandbox")).resume(again)

    assert done.apply_id == cut.apply_id
    assert done.status is ApplyStatus.FINISHED
    assert {q.state for q in done.queues} == {QueueState.VERIFIED}
    assert await committed(sandbox, admin, group) == {k: v - 3 for k, v in before.items()}
    lines = list(AuditLog(tmp_path / "ws").read())
    verified = [(x["broker"], x["queue"]) for x in lines if x["result"] == "verified"]
    assert sorted(verified) == sorted(before)  # each queue verified once, none twice
    assert store.unfinished() == []


async def test_an_edited_or_foreign_plan_is_refused(
    sandbox: Sandbox, admin: AdminClient, runner: SparkRunner, tmp_path: Path
) -> None:
    group, _ = await new_group(sandbox, admin)
    ws = Workspace(tmp_path / "ws")
    plan = await shift_plan(sandbox, admin, runner, ws, group)
    now = int(time.time() * 1000)
    with pytest.raises(Refused, match="made for cluster 'sandbox', not 'prod'"):
        load_plan(ws, plan.header.plan_id, cluster="prod", now_ms=now)
    with pytest.raises(Refused, match=r"is 16 min old \(limit 15 min\)"):
        load_plan(ws, plan.header.plan_id, cluster="sandbox", now_ms=now + 16 * 60_000)
    with pytest.raises(Refused, match="no plan 'nope'"):
        load_plan(ws, "nope", cluster="sandbox", now_ms=now)
    # Rows edited by hand: one target changed, the header left as it was.
    rows_dir = Path(plan.uri.removeprefix("file://")) / "rows.parquet"
    part = next(p for p in sorted(rows_dir.glob("*.parquet")) if pq.read_table(p).num_rows)
    table = pq.read_table(part)
    targets = table.column("target").to_pylist()
    targets[0] = (targets[0] or 0) + 1
    column = pa.array(targets, type=table.schema.field("target").type)
    pq.write_table(table.set_column(table.column_names.index("target"), "target", column), part)
    with pytest.raises(Refused, match="do not match its content hash"):
        load_plan(ws, plan.header.plan_id, cluster="sandbox", now_ms=now)


def test_the_apply_command_confirms_writes_and_lists(
    sandbox: Sandbox,
    connect: ConnectServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    group, before = fresh_group(sandbox)
    config = tmp_path / "config.yaml"
    cluster = sandbox.config_entry("sandbox")
    settings = {"workspace": str(tmp_path / "ws")}
    config.write_text(yaml.safe_dump({"clusters": [cluster], **settings}))
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config))
    # `plan` and `undo` plan on the session's warm Spark Connect server, as after `spark up`.
    monkeypatch.setenv(CACHE_ENV, str(connect.cache))
    spec = tmp_path / "spec.yaml"
    scope = {"cluster": "sandbox", "groups": [group], "topics": [TOPIC_ORDERS]}
    spec.write_text(yaml.safe_dump({"scope": scope, "strategy": {"shift-by": -2}}))
    assert main(["plan", "--cluster", "sandbox", "--spec", str(spec), "--json"]) == 0
    plan_id = json.loads(capfd.readouterr().out)["plan"]["id"]

    # Not confirmed, or confirmed with another name: refused, nothing written.
    assert main(["apply", plan_id, "--cluster", "sandbox"]) == 2
    assert "confirm with --confirm" in capfd.readouterr().err
    assert main(["apply", plan_id, "--cluster", "sandbox", "--confirm", "billing-service"]) == 2
    assert f"typed 'billing-service', not '{group}'" in capfd.readouterr().err
    assert offsets_of(sandbox, group) == before

    assert main(["apply", plan_id, "--cluster", "sandbox", "--confirm", group]) == 0
    out = capfd.readouterr().out

    async def path() -> ResetPathKind:
        async with sandbox.admin(timeout=10) as admin:
            return await offline_path(sandbox, admin)

    assert str(asyncio.run(path())) in out
    assert "mqadmin resetOffsetByTime" in out  # the equivalent commands, for a ticket
    assert f"{len(before)} verified" in out
    assert offsets_of(sandbox, group) == {k: v - 2 for k, v in before.items()}
    # What the operator checks next: `lag` and mqadmin both show the targets.
    assert main(["lag", "-g", group, "--cluster", "sandbox", "--json"]) == 0
    shown = json.loads(capfd.readouterr().out)
    assert {(q["broker"], q["queue_id"]): q["committed"] for q in shown["queues"]} == {
        k: v - 2 for k, v in before.items()
    }

    async def progress_text() -> str:
        # mqadmin finds a group through its retry topic, which a consumer would have made.
        async with sandbox.admin(timeout=10) as admin:
            for addr in sandbox.broker_addrs.values():
                await admin.create_topic(addr, retry_topic(group), read_queues=1, write_queues=1)
            await wait_for_routes(admin, [retry_topic(group)], set(sandbox.broker_addrs))
        return await sandbox.mqadmin.run("consumerProgress", "-g", group)

    progress = parse_consumer_progress(asyncio.run(progress_text()))
    assert {(r.broker_name, r.queue_id): r.consumer_offset for r in progress.rows} == {
        k: v - 2 for k, v in before.items()
    }

    assert main(["history", "--cluster", "sandbox", "--json"]) == 0
    listed = json.loads(capfd.readouterr().out)
    (entry,) = listed["applies"]
    assert (entry["groups"], entry["status"], entry["verified"]) == ([group], "finished", 8)
    assert listed["audit_lines"] == len(before)
    apply_id = entry["apply_id"]

    # Undo: planned from the journal's before-images, confirmed like an apply.
    assert main(["undo", "20991231T000000000Z-apply-x-000000", "--cluster", "sandbox"]) == 2
    assert "no apply '20991231T000000000Z-apply-x-000000'" in capfd.readouterr().err
    assert main(["undo", apply_id, "--cluster", "sandbox"]) == 2
    assert "confirm with --confirm" in capfd.readouterr().err
    assert offsets_of(sandbox, group) == {k: v - 2 for k, v in before.items()}
    assert main(["undo", apply_id, "--cluster", "sandbox", "--confirm", group]) == 0
    out = capfd.readouterr().out
    assert f"undo of {apply_id}: {len(before)} queue(s) back to their before-image" in out
    assert f"{len(before)} verified" in out
    assert offsets_of(sandbox, group) == before  # exactly the before-image
    assert main(["history", "--cluster", "sandbox", "--json"]) == 0
    listed = json.loads(capfd.readouterr().out)
    first, undo = listed["applies"]
    assert first["apply_id"] == apply_id
    assert (undo["kind"], undo["undo_of"], undo["status"], undo["verified"]) == (
        "undo",
        apply_id,
        "finished",
        len(before),
    )
    assert listed["audit_lines"] == 2 * len(before)
    assert main(["resume", apply_id, "--cluster", "sandbox"]) == 0  # nothing asked, or written
    assert "every queue is verified; nothing to write" in capfd.readouterr().out

    # The same plan on a read-only cluster: refused before anything is read or written.
    cluster["read_only"] = True
    config.write_text(yaml.safe_dump({"clusters": [cluster], **settings}))
    assert main(["apply", plan_id, "--cluster", "sandbox", "--confirm", group]) == 2
    assert "read-only" in capfd.readouterr().err
    assert main(["undo", apply_id, "--cluster", "sandbox", "--confirm", group]) == 2
    assert "read-only" in capfd.readouterr().err
    assert main(["resume", apply_id, "--cluster", "sandbox", "--confirm", group]) == 2
    assert "read-only" in capfd.readouterr().err
    assert offsets_of(sandbox, group) == before
