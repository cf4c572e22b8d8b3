"""Applying from the console against the real sandbox, as an operator does it at 80x24: a group
of the test's own, `R`, a shift-by preview, `a`; the confirm dialog starts on Cancel and opens
Apply only to the typed group name; the write goes through the journal and is read back, and the
result lists every queue verified, which is what the broker then holds. Then History (`H`), `u`
on that apply: its undo is planned, confirmed the same way, written and read back, and the
broker holds the before-image again. A read-only cluster offers no apply at all."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Button, DataTable

from console.config import ClusterConfig, Config
from console.domain.journal import Journal
from console.remote.proxy import remote_sources
from console.rocketmq.admin import AdminClient
from console.sandbox.runner import Sandbox
from console.services.infra.journal_store import AuditLog, JournalStore
from console.services.infra.spark_runner import SparkRunner
from console.ui.app import ConsoleApp, make_app
from console.ui.screens.apply import ApplyResultDialog, ConfirmApplyDialog
from console.ui.screens.history import HistoryScreen
from console.ui.screens.preview import PreviewScreen
from console.ui.themes import PROJECT_THEMES
from tests.support.console_keys import open_group, preview_shift_by, settled
from tests.support.groups import committed, new_group
from tests.ui.helpers import asked, screen_lines, status, text_of
from tests.ui.helpers import shown as rows_shown

PLAN_TIMEOUT_S = 900.0


@pytest.fixture(autouse=True)
def _warm_spark(plan_runner: SparkRunner) -> SparkRunner:
    # The consoles' previews plan on the session's warm Spark, as one console keeps one.
    return plan_runner


@pytest.fixture
async def admin(sandbox: Sandbox) -> AsyncIterator[AdminClient]:
    async with AdminClient([sandbox.namesrv_addr], timeout=10) as client:
        yield client


def console(sandbox: Sandbox, workspace: Path, *, read_only: bool = False) -> ConsoleApp:
    cluster = ClusterConfig(
        name="sandbox", namesrv=(sandbox.namesrv_addr,), read_only=read_only, colour="red"
    )
    config = Config(
        clusters=(cluster,),
        refresh_interval=3600,
        theme="rmq-dark",
        spark_master="local[2]",
        workspace=str(workspace),
    )
    return make_app(config, remote_sources(config), cluster=cluster, theme_paths=[PROJECT_THEMES])


async def previewed(pilot: Pilot[int], app: ConsoleApp, group: str) -> PreviewScreen:
    """The group opened from the groups list, `R`, shift-by -2, previewed."""
    await open_group(pilot, app, group)
    return await preview_shift_by(pilot, app, -2)


async def test_apply_from_the_preview_then_undo_from_history(
    sandbox: Sandbox, admin: AdminClient, tmp_path: Path
) -> None:
    group, before = await new_group(sandbox, admin)
    workspace = tmp_path / "ws"
    app = console(sandbox, workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await previewed(pilot, app, group)
        await pilot.press("a")
        await asked(pilot, timeout_s=PLAN_TIMEOUT_S)
        dialog = app.screen
        assert isinstance(dialog, ConfirmApplyDialog), status(app)
        assert app.focused is not None
        assert app.focused.id == "cancel"
        shown = "\n".join(screen_lines(app))
        assert "Apply to sandbox?" in shown
        assert f"{len(before)} queue(s) of {group} change" in shown
        assert f"{group} time span:" in shown
        assert "server-side reset" in shown
        apply_button = dialog.query_one("#apply", Button)
        assert apply_button.disabled
        await pilot.click("#confirm-group")
        await pilot.press(*"billing-service")  # another group's name opens nothing
        await pilot.pause()
        assert apply_button.disabled
        await pilot.press("ctrl+u", *group)
        await pilot.pause()
        assert not apply_button.disabled
        assert await committed(sandbox, admin, group) == before  # nothing written yet
        await pilot.press("enter")
        await settled(pilot)

        result = app.screen
        assert isinstance(result, ApplyResultDialog), status(app)
        table = result.query_one("#apply-queues", DataTable)
        states = {table.get_row_at(i)[0] for i in range(table.row_count)}
        assert (table.row_count, states) == (len(before), {"verified"})
        assert f"finished · {len(before)} verified" in text_of(app, "#apply-result")
        assert await committed(sandbox, admin, group) == {k: v - 2 for k, v in before.items()}
        (applied,) = JournalStore(workspace).all()
        assert isinstance(applied, Journal)
        assert applied.apply_id == result.journal.apply_id
        lines = list(AuditLog(workspace).read())
        assert sorted((x["broker"], x["queue"]) for x in lines) == sorted(before)

        # History lists the apply first (newest); `u` plans its undo on the same warm
        # Spark session and confirms it like an apply.
        await pilot.press("escape")
        await settled(pilot)
        await pilot.press("H")
        await settled(pilot)
        assert isinstance(app.screen, HistoryScreen), status(app)
        assert rows_shown(app)[0]["ref"] == applied.apply_id
        await pilot.press("u")
        await asked(pilot, timeout_s=PLAN_TIMEOUT_S)
        dialog = app.screen
        assert isinstance(dialog, ConfirmApplyDialog), (
            text_of(app, "#history-step"),
            status(app),
        )
        assert dialog.summary.title == f"Undo {applied.apply_id} on sandbox?"
        assert app.focused is not None
        assert app.focused.id == "cancel"
        assert dialog.query_one("#apply", Button).disabled
        await pilot.click("#confirm-group")
        await pilot.press(*group, "enter")
        await settled(pilot)
        undone = app.screen
        assert isinstance(undone, ApplyResultDialog), "\n".join(screen_lines(app))
        assert undone.journal.undo_of == applied.apply_id
        table = undone.query_one("#apply-queues", DataTable)
        states = {table.get_row_at(i)[0] for i in range(table.row_count)}
        assert (table.row_count, states) == (len(before), {"verified"})

    assert await committed(sandbox, admin, group) == before  # the before-image, exactly
    kinds = sorted(
        (j.kind, j.undo_of) for j in JournalStore(workspace).all() if isinstance(j, Journal)
    )
    assert kinds == [("apply", None), ("undo", applied.apply_id)]
    assert len(list(AuditLog(workspace).read())) == 2 * len(before)


async def test_a_read_only_cluster_offers_no_apply(
    sandbox: Sandbox, admin: AdminClient, tmp_path: Path
) -> None:
    group, before = await new_group(sandbox, admin)
    workspace = tmp_path / "ws"
    app = console(sandbox, workspace, read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await previewed(pilot, app, group)
        assert "READ-ONLY" in screen_lines(app)[0]
        assert screen.check_action("apply", ()) is None
        await pilot.press("a")
        await settled(pilot)
        assert app.screen is screen
    assert await committed(sandbox, admin, group) == before
    assert JournalStore(workspace).all() == []
