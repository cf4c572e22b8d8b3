"""Each guided walkthrough driven in the console at 80x24 against the real sandbox, as an operator
does it: a group of the test's own, `w`, the walkthrough chosen from the list, the evidence read
from the brokers, the questions answered (an impossible answer explained and changed), then the
standard preview, the confirm dialog, the apply and its read-back; the walkthrough gathers what
the cluster shows after and writes its report. Every test ends with the broker holding the
targets and the report on disk."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from console.config import ClusterConfig, Config
from console.domain.journal import QueueState
from console.remote.proxy import remote_sources
from console.rocketmq.admin import AdminClient
from console.rocketmq.topics import retry_topic
from console.sandbox import scenario as sc
from console.sandbox.runner import Sandbox
from console.sandbox.scenario import TOPIC_ORDERS
from console.services.apply.offset_writer import OffsetWrite, OffsetWriter
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import Workspace
from console.services.read.snapshots import SnapshotStore, take_snapshot
from console.services.walkthrough.guided_run import load_walkthroughs
from console.ui.app import ConsoleApp, make_app
from console.ui.screens.apply import ApplyResultDialog, ConfirmApplyDialog
from console.ui.screens.preview import PreviewScreen
from console.ui.screens.walkthrough import WalkthroughScreen
from console.ui.themes import PROJECT_THEMES
from tests.integration.consumer_log import queue_events
from tests.support.console_keys import STEP_TIMEOUT_S, open_group, settled
from tests.support.groups import committed, group_with_retry_backlog, new_group
from tests.ui.helpers import asked, screen_lines, status


@pytest.fixture(autouse=True)
def _warm_spark(plan_runner: SparkRunner) -> SparkRunner:
    # The consoles' previews plan on the session's warm Spark, as one console keeps one.
    return plan_runner


@pytest.fixture
async def admin(sandbox: Sandbox) -> AsyncIterator[AdminClient]:
    async with AdminClient([sandbox.namesrv_addr], timeout=10) as client:
        yield client


def console(sandbox: Sandbox, workspace: Path, *, watch: float = 1.0) -> ConsoleApp:
    cluster = ClusterConfig(name="sandbox", namesrv=(sandbox.namesrv_addr,), colour="red")
    config = Config(
        clusters=(cluster,),
        refresh_interval=3600,
        theme="rmq-dark",
        spark_master="local[2]",
        workspace=str(workspace),
        walkthrough_watch=watch,
    )
    return make_app(config, remote_sources(config), cluster=cluster, theme_paths=[PROJECT_THEMES])


async def open_walkthrough(
    pilot: Pilot[int], app: ConsoleApp, group: str, name: str
) -> WalkthroughScreen:
    """The group from the groups list, `w`, the walkthrough picked from the list by keys."""
    await open_group(pilot, app, group)
    await pilot.press("w")
    await settled(pilot)
    screen = app.screen
    assert isinstance(screen, WalkthroughScreen)
    index = load_walkthroughs().names.index(name)
    await pilot.press(*["down"] * index, "enter")
    await settled(pilot)
    assert screen.run is not None
    assert screen.run.walkthrough.name == name
    assert screen.run.evidence, "the opening evidence was read"
    return screen


async def answer(pilot: Pilot[int], screen: WalkthroughScreen, text: str) -> None:
    await pilot.press("ctrl+u", *text, "enter")
    await settled(pilot)
    assert not screen.reading


async def preview_apply_report(
    pilot: Pilot[int], app: ConsoleApp, screen: WalkthroughScreen, group: str
) -> str:
    """Enter on the last step: the preview plans the walkthrough's spec; `a`, the group name
    typed, Apply; the result view; back to the walkthrough, whose report is written."""
    run = screen.run
    assert run is not None
    assert run.asked_all, [e.lines for e in run.evidence]
    assert "every step answered" in "\n".join(screen_lines(app))
    await pilot.press("enter")
    await settled(pilot)
    preview = app.screen
    assert isinstance(preview, PreviewScreen), status(app)
    assert preview.flow.result is not None, (preview.flow.error, status(app))
    await pilot.press("a")
    await asked(pilot, timeout_s=STEP_TIMEOUT_S)
    assert isinstance(app.screen, ConfirmApplyDialog), status(app)
    await pilot.click("#confirm-group")
    await pilot.press(*group, "enter")
    await settled(pilot)
    assert isinstance(app.screen, ApplyResultDialog), status(app)
    await pilot.press("escape")
    await settled(pilot)
    await pilot.press("escape")
    await settled(pilot)
    assert app.screen is screen
    assert screen.report is not None, "the report was written"
    shown = "\n".join(screen_lines(app))
    assert "verified" in shown
    return screen.report


def verified_targets(screen: WalkthroughScreen) -> dict[tuple[str, int], int]:
    run = screen.run
    assert run is not None
    assert run.journal is not None
    assert {q.state for q in run.journal.queues} == {QueueState.VERIFIED}
    return {(q.broker, q.queue_id): q.target for q in run.journal.queues if q.topic == TOPIC_ORDERS}


def report_says(path: str, *texts: str) -> str:
    report = Path(path).read_text()
    for text in ("## Evidence", "## Plan", "## Apply", "## Result", "Verified: all", *texts):
        assert text in report, (text, report)
    return report


async def test_replay_since_an_incident(
    sandbox: Sandbox, admin: AdminClient, tmp_path: Path
) -> None:
    group, before = await new_group(sandbox, admin)
    app = console(sandbox, tmp_path / "ws")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_walkthrough(pilot, app, group, "replay-since")
        await answer(pilot, screen, "23:59")  # later today: in the future
        assert screen.run is not None
        assert "since" not in screen.run.answers
        assert "in the future" in "\n".join(screen_lines(app))
        since_ms = int(time.time() * 1000) - 120_000
        await answer(pilot, screen, str(since_ms))
        per_queue = next(e for e in screen.run.evidence if e.name == "time-per-queue")
        assert "local zone" in per_queue.lines[0]
        await answer(pilot, screen, "")  # every topic
        report = await preview_apply_report(pilot, app, screen, group)
    targets = verified_targets(screen)
    for (broker, queue_id), target in targets.items():
        found = await admin.search_offset(
            sandbox.broker_addrs[broker], TOPIC_ORDERS, queue_id, since_ms
        )
        assert target == found, (broker, queue_id)
        assert target < before[(broker, queue_id)], "the queue went back: messages come again"
    assert await committed(sandbox, admin, group) == targets
    report_says(report, "Replay since an incident", "delivered again")


async def test_drain_a_flood(sandbox: Sandbox, admin: AdminClient, tmp_path: Path) -> None:
    group, before = await new_group(sandbox, admin)
    app = console(sandbox, tmp_path / "ws")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_walkthrough(pilot, app, group, "drain-flood")
        rates = next(e for e in screen.run.evidence if e.name == "rates")  # type: ignore[union-attr]
        assert "msg/s produced" in rates.lines[0]
        await answer(pilot, screen, "")  # the default: latest
        span = next(e for e in screen.run.evidence if e.name == "skip-span")  # type: ignore[union-attr]
        assert span.values["skipped"] >= len(before) * 5
        await answer(pilot, screen, TOPIC_ORDERS)
        report = await preview_apply_report(pilot, app, screen, group)
    targets = verified_targets(screen)
    assert all(targets[q] > before[q] for q in before), "every queue moved forward"
    assert await committed(sandbox, admin, group) == targets
    report_says(report, "Drain a flood", "never delivered")


async def test_give_a_shadow_consumer_productions_offsets(
    sandbox: Sandbox, admin: AdminClient, tmp_path: Path
) -> None:
    source, offsets = await new_group(sandbox, admin)
    shadow = f"it-shadow-{uuid.uuid4().hex[:8]}"
    for addr in sandbox.broker_addrs.values():
        await admin.create_group(addr, shadow)  # a consumer that has never committed
    app = console(sandbox, tmp_path / "ws")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_walkthrough(pilot, app, shadow, "shadow-from-group")
        await answer(pilot, screen, f"no-such-group-{uuid.uuid4().hex[:6]}")
        assert "no consumer group" in "\n".join(screen_lines(app))
        await answer(pilot, screen, source)
        copy = next(e for e in screen.run.evidence if e.name == "source-group")  # type: ignore[union-attr]
        assert copy.values["new_group"] is True
        await answer(pilot, screen, "")
        report = await preview_apply_report(pilot, app, screen, shadow)
    assert await committed(sandbox, admin, shadow) == offsets
    report_says(report, "created, not moved")


async def test_put_the_group_back_where_it_was(
    sandbox: Sandbox, admin: AdminClient, tmp_path: Path
) -> None:
    group, before = await new_group(sandbox, admin)
    workspace = Workspace(tmp_path / "ws")
    reader = sandbox.reader(admin)
    snap = await take_snapshot(reader, "sandbox", [group], with_times=False)
    ref = SnapshotStore(workspace).save(snap)
    moved = [
        OffsetWrite(sandbox.broker_addrs[b], group, TOPIC_ORDERS, q, offset - 3)
        for (b, q), offset in before.items()
    ]
    assert (await OffsetWriter(admin).write(moved)).ok
    app = console(sandbox, tmp_path / "ws")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_walkthrough(pilot, app, group, "put-back")
        history = next(e for e in screen.run.evidence if e.name == "history")  # type: ignore[union-attr]
        assert any(ref.snapshot_id in line for line in history.lines)
        await answer(pilot, screen, "")  # the default, 1h ago: no snapshot that old
        assert "no snapshot" in "\n".join(screen_lines(app))
        await answer(pilot, screen, ref.snapshot_id)
        report = await preview_apply_report(pilot, app, screen, group)
    assert await committed(sandbox, admin, group) == before
    report_says(report, ref.snapshot_id)


async def test_put_back_from_a_snapshot_in_history(
    sandbox: Sandbox, admin: AdminClient, tmp_path: Path
) -> None:
    """History, a snapshot row, `w`: the put-back walkthrough for its group, the snapshot
    already given; Enter takes it."""
    group, before = await new_group(sandbox, admin)
    reader = sandbox.reader(admin)
    snap = await take_snapshot(reader, "sandbox", [group], with_times=False)
    ref = SnapshotStore(Workspace(tmp_path / "ws")).save(snap)
    moved = [
        OffsetWrite(sandbox.broker_addrs[b], group, TOPIC_ORDERS, q, offset + 2)
        for (b, q), offset in before.items()
    ]
    assert (await OffsetWriter(admin).write(moved)).ok
    app = console(sandbox, tmp_path / "ws")
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot)
        await pilot.press("H")
        await settled(pilot)
        await pilot.press("slash", *ref.snapshot_id, "enter")
        await settled(pilot)
        await pilot.press("w")
        await settled(pilot)
        screen = app.screen
        assert isinstance(screen, WalkthroughScreen), status(app)
        assert screen.run is not None
        assert screen.run.walkthrough.name == "put-back"
        assert screen.group == group
        await pilot.press("enter")  # the snapshot, given by History
        await settled(pilot)
        assert screen.run.answers["back_to"].value == {"to-snapshot": ref.snapshot_id}
        report = await preview_apply_report(pilot, app, screen, group)
    assert await committed(sandbox, admin, group) == before
    report_says(report, ref.snapshot_id)


async def test_a_retry_backlog_skipped(
    sandbox: Sandbox, admin: AdminClient, tmp_path: Path
) -> None:
    group, backlog = await group_with_retry_backlog(sandbox, admin)
    app = console(sandbox, tmp_path / "ws")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_walkthrough(pilot, app, group, "retry-backlog")
        retry = next(e for e in screen.run.evidence if e.name == "retry-backlog")  # type: ignore[union-attr]
        assert retry.values["retry_lag"] == backlog
        await answer(pilot, screen, "3")  # not an option
        assert "not one of" in "\n".join(screen_lines(app))
        await answer(pilot, screen, "2")  # skip
        report = await preview_apply_report(pilot, app, screen, group)
    run = screen.run
    assert run is not None
    assert run.journal is not None
    assert {q.topic for q in run.journal.queues} == {retry_topic(group)}
    for q in run.journal.queues:
        held = await admin.query_consumer_offset(q.broker_addr, group, q.topic, q.queue_id)
        assert held == q.target == 4
    report_says(report, "Retry backlog", retry_topic(group))


async def test_skip_a_poison_message(sandbox: Sandbox, admin: AdminClient, tmp_path: Path) -> None:
    """ledger-sync, an orderly consumer, fails every delivery of a message keyed POISON: the test
    sends one to a queue of its own choosing, the walkthrough finds that queue stuck, shows the
    message, skips exactly it, and sees the consumer move past it."""
    group, broker, queue = sc.GROUP_POISON, "broker-b", 3
    addr = sandbox.broker_addrs[broker]
    log = sandbox.consumers[group].log
    seen_from = log.stat().st_size
    sent = await admin.send_message(
        addr, sc.TOPIC_LEDGER, queue, b'{"poison":"walkthrough"}', keys=f"{sc.POISON_KEY} wt"
    )
    poison = sent.queue_offset
    await admin.send_message(addr, sc.TOPIC_LEDGER, queue, b"{}", keys="behind-the-poison")
    deadline = time.monotonic() + 60
    while await admin.query_consumer_offset(addr, group, sc.TOPIC_LEDGER, queue) != poison:
        assert time.monotonic() < deadline, "ledger-sync never reached the poison message"
        await asyncio.sleep(0.5)
    mine = f"{sc.TOPIC_LEDGER}/{broker}/{queue}"

    app = console(sandbox, tmp_path / "ws", watch=6.0)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_walkthrough(pilot, app, group, "skip-poison")
        assert screen.run is not None
        found = screen.run.values()["stuck.queues"]
        assert mine in found, [e.lines for e in screen.run.evidence]
        assert all(q.startswith(f"{sc.TOPIC_LEDGER}/") for q in found)
        await answer(pilot, screen, str(found.index(mine) + 1))
        shown = next(e for e in screen.run.evidence if e.name == "message-at-committed")
        assert shown.values["offset"] == poison
        assert any(sc.POISON_KEY in line for line in shown.lines)
        report = await preview_apply_report(pilot, app, screen, group)
    run = screen.run
    assert run.journal is not None
    (written,) = run.journal.queues
    assert (written.broker, written.queue_id, written.before, written.target) == (
        broker,
        queue,
        poison,
        poison + 1,
    )
    moved = next(e for e in run.after if e.name == "moved-on")
    assert moved.values == {"online": True, "moved": 1, "not_moved": 0}, moved.lines
    events = queue_events(log, seen_from, sc.TOPIC_LEDGER, broker, queue)
    # The consumer moved on: the message after the poison one was delivered, and the poison
    # one never again after that.
    moved_on_at = events.index(("DELIVERED", poison + 1))
    assert ("DELIVERED", poison) not in events[moved_on_at:]
    report_says(report, "Skip a poison message", "The message it cannot get past")
