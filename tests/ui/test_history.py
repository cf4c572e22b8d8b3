"""The History screen (H): applies and undos from the workspace's journals, newest first, with
how they ended (an apply whose console died is "interrupted"); a journal that cannot be read is
named, not skipped; `m` gives the commands that resume or undo the apply under the cursor; `u`
and `R` undo and resume it from the console, confirmed like an apply, and not offered on a
read-only cluster. Also the start-up notice naming an unfinished apply, and the confirm
dialog's summary. The undo against the real brokers: tests/integration/test_ui_apply.py."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from textual.color import Color
from textual.widgets import Button, Checkbox, DataTable

from console.config import Config
from console.domain.journal import ApplyProgress, ApplyStatus, Journal, JournalQueue, QueueState
from console.services.apply.journal_actions import UndoCheck
from console.services.apply.resume_check import ResumeCheck
from console.services.apply.write_check import WriteCheck
from console.services.infra.journal_store import JournalStore
from console.ui.screens.apply import (
    ApplyResultDialog,
    ConfirmApplyDialog,
    write_summary,
)
from console.ui.screens.dialogs import CommandsDialog, ErrorDialog
from console.ui.screens.history import HistoryScreen
from console.ui.widgets.banner import ClusterBanner
from tests.support.checks import T0, drifted_check
from tests.support.writes import ScriptedWrites

from .fakes import PROD, STAGING, fake_app, fake_services
from .helpers import settle, shown, text_of, toasts, until


def footer_keys(app: Any) -> set[str]:
    """The keys the footer offers (a binding whose action is unavailable is dimmed there)."""
    return {key for key, active in app.screen.active_bindings.items() if active.enabled}


def journal(
    apply_id: str,
    *,
    at: int,
    status: ApplyStatus,
    verified: int,
    undo_of: str | None = None,
    cluster: str = "prod",
) -> Journal:
    queues = tuple(
        JournalQueue(
            "billing",
            "orders",
            "broker-a",
            "127.0.0.1:10911",
            q,
            100,
            90,
            QueueState.VERIFIED if q < verified else QueueState.PENDING,
        )
        for q in range(4)
    )
    return Journal(
        apply_id=apply_id,
        kind="apply" if undo_of is None else "undo",
        plan_id="p",
        plan_hash="sha256:0",
        cluster=cluster,
        paths={"billing": "server-side reset"},
        who="ops@host",
        started_at_ms=T0 + at,
        queues=queues,
        status=status,
        undo_of=undo_of,
    )


async def test_history_lists_applies_newest_first_and_names_what_to_do(tmp_path: Path) -> None:
    store = JournalStore(tmp_path / "ws")
    done = "20261124T000000000Z-apply-billing-aaaaaa"
    killed = "20261124T000100000Z-apply-billing-bbbbbb"
    undo = "20261124T000200000Z-undo-billing-cccccc"
    on = {"cluster": "staging"}
    store.write(journal(done, at=0, status=ApplyStatus.FINISHED, verified=4, **on))
    store.write(journal(killed, at=60_000, status=ApplyStatus.RUNNING, verified=1, **on))
    store.write(
        journal(undo, at=120_000, status=ApplyStatus.FINISHED, verified=4, undo_of=done, **on)
    )
    unreadable = "20261124T000300000Z-apply-x-dddddd"
    (store.dir / f"{unreadable}.json").write_text('{"format": 1, "apply')
    config = Config(
        clusters=(PROD, STAGING),
        refresh_interval=3600,
        theme="rmq-dark",
        workspace=str(tmp_path / "ws"),
    )
    app, _ = fake_app(open_cluster=None, config=config)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        # Started with an apply left part-way: the console says so, with the commands.
        shown_toasts = " ".join(" ".join(toasts(app)).split())
        assert f"rmq-console resume {killed}" in shown_toasts, shown_toasts
        assert "History (H): R resumes the apply under the cursor, u undoes it" in shown_toasts
        await pilot.press("H")
        await settle(pilot)
        assert isinstance(app.screen, HistoryScreen)
        rows = shown(app)
        assert [(r["what"], r["ref"], r["status"]) for r in rows] == [
            # Written last (its file's time): an unreadable journal keeps its row.
            (
                "unreadable",
                unreadable,
                "not a whole journal (Unterminated string starting at at line 1)",
            ),
            ("undo", undo, f"finished: 4/4 verified (undo of {done})"),
            ("apply", killed, "interrupted: 1/4 verified"),
            ("apply", done, "finished: 4/4 verified"),
        ]
        summary = text_of(app, "#history-summary")
        assert "0 snapshots · 0 plans · 2 applies · 1 undos · 0 audit lines" in summary
        assert "1 unreadable: journal 20261124T000300000Z-apply-x-dddddd" in summary
        await pilot.press("down", "down", "m")  # the interrupted apply
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, CommandsDialog)
        assert dialog.lines[1:] == [
            f"rmq-console resume {killed} --cluster staging",
            f"rmq-console undo {killed} --cluster staging",
        ]


async def test_an_apply_left_part_way_on_a_read_only_cluster_is_named_without_commands(
    tmp_path: Path,
) -> None:
    store = JournalStore(tmp_path / "ws")
    killed = "20261124T000100000Z-apply-billing-bbbbbb"
    store.write(journal(killed, at=60_000, status=ApplyStatus.RUNNING, verified=1))  # on prod
    config = Config(
        clusters=(PROD, STAGING),
        refresh_interval=3600,
        theme="rmq-dark",
        workspace=str(tmp_path / "ws"),
    )
    app, _ = fake_app(open_cluster=None, config=config)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        said = " ".join(" ".join(toasts(app)).split())
        assert (
            f"apply {killed} on prod stopped part-way (3 queue(s) not verified); cluster 'prod' "
            "is read-only (read_only: true in the config): no resume or undo from this console"
        ) in said, said
        assert "rmq-console resume" not in said
        assert "rmq-console undo" not in said


# ---- undo and resume from the console ---------------------------------------------------------


async def test_the_confirm_dialog_says_cluster_replay_skip_time_span_and_drift() -> None:
    app, _ = fake_app(open_cluster=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.push_screen(ConfirmApplyDialog(write_summary(drifted_check(), STAGING)))
        await pilot.pause()
        banner = app.screen.query_one("#apply-banner", ClusterBanner)
        assert banner.styles.background == Color.parse("green")  # staging's colour
        assert "staging" in banner.render().plain
        lines = text_of(app, "#apply-lines").splitlines()
        assert lines[:5] == [
            "cluster staging (green) · plan p-undo",
            "3 queue(s) of billing change",
            "billing: re-consume 15 · skip 20 · lag after 295",
            "billing time span: replays up to 1h00m of messages (stored since 2026-11-23 "
            "02:13:20 UTC) · skips up to 5m00s of messages · time not known on 1 queue(s)",
            "reset path for billing (offline): server-side reset - every broker runs 5.1+",
        ]
        assert lines[5:] == [
            "drift: 1 queue(s) moved since the plan was made",
            "  billing orders/broker-a/0: planned from 100, now 101 (committed by someone else)",
        ]


def verified(j: Journal, **changes: Any) -> Journal:
    queues = tuple(replace(q, state=QueueState.VERIFIED, stored=q.target) for q in j.queues)
    return replace(j, queues=queues, status=ApplyStatus.FINISHED, finished_at_ms=T0, **changes)


def history_writes(store: JournalStore) -> ScriptedWrites:
    """Undo and resume through the real session, on no cluster: the checks are made up, the
    writes are answered verified, and every call is recorded."""

    def check(kind: str, apply_id: str) -> WriteCheck:
        j = store.load(apply_id)
        if kind == "undo":
            notes = (f"undo of {apply_id}: 3 queue(s) back to their before-image",)
            return UndoCheck(j, notes, drifted_check())
        return ResumeCheck(j, (), tuple(j.unfinished), (), (), (), ())

    async def write(
        kind: str,
        checked: WriteCheck,
        on_progress: Callable[[ApplyProgress], object],
        stop: asyncio.Event,
    ) -> Journal:
        on_progress(ApplyProgress(total=4, settled=4, verified=4, stage="done"))
        if isinstance(checked, UndoCheck):
            undone = checked.undone
            return verified(
                undone, apply_id=f"{undone.apply_id}-u", kind="undo", undo_of=undone.apply_id
            )
        assert isinstance(checked, ResumeCheck)
        return verified(checked.journal)

    return ScriptedWrites(store.dir.parent, check, write)


async def test_undo_and_resume_from_history_are_confirmed_and_not_offered_when_read_only(
    tmp_path: Path,
) -> None:
    store = JournalStore(tmp_path / "ws")
    on_prod = "20261124T000000000Z-apply-billing-aaaaaa"
    done = "20261124T000100000Z-apply-billing-bbbbbb"
    killed = "20261124T000200000Z-apply-billing-cccccc"
    store.write(journal(on_prod, at=0, status=ApplyStatus.STOPPED, verified=1))
    store.write(
        journal(done, at=60_000, status=ApplyStatus.FINISHED, verified=4, cluster="staging")
    )
    store.write(
        journal(killed, at=120_000, status=ApplyStatus.STOPPED, verified=1, cluster="staging")
    )
    config = Config(
        clusters=(PROD, STAGING),
        refresh_interval=3600,
        theme="rmq-dark",
        workspace=str(tmp_path / "ws"),
    )
    actions = history_writes(store)
    app, _ = fake_app(open_cluster=None, config=config, services=fake_services(writes=actions))
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("H")
        await settle(pilot)
        history = app.screen
        assert isinstance(history, HistoryScreen)
        assert [r["ref"] for r in shown(app)] == [killed, done, on_prod]
        assert history.check_action("undo", ())
        assert history.check_action("resume", ())
        assert {"u", "R"} <= footer_keys(app)

        # prod is read-only: on its apply neither `u` nor `R` is offered, the line above the
        # table says why, and the keys do nothing; `m` gives no command the CLI would refuse.
        await pilot.press("end")
        await settle(pilot)
        assert history.check_action("undo", ()) is None
        assert history.check_action("resume", ()) is None
        assert not {"u", "R"} & footer_keys(app)
        read_only = (
            "cluster 'prod' is read-only (read_only: true in the config): no undo or resume of "
            f"apply {on_prod}"
        )
        assert text_of(app, "#history-step") == read_only
        await pilot.press("u", "R")
        await settle(pilot)
        assert app.screen is history
        await pilot.press("m")
        await settle(pilot)
        commands = app.screen
        assert isinstance(commands, CommandsDialog)
        assert commands.lines == [f"# apply {on_prod}", f"# {read_only}"]
        await pilot.press("escape")
        await settle(pilot)
        assert actions.opened == []

        # A finished apply on staging: offered again; its undo, planned and checked, confirmed
        # by typing.
        await pilot.press("up")
        await settle(pilot)
        assert history.check_action("undo", ())
        assert {"u", "R"} <= footer_keys(app)
        assert text_of(app, "#history-step") == ""
        await pilot.press("u")
        await until(pilot, lambda: isinstance(app.screen, ConfirmApplyDialog))
        dialog = app.screen
        assert isinstance(dialog, ConfirmApplyDialog), text_of(app, "#history-step")
        assert dialog.summary.title == f"Undo {done} on staging?"
        assert app.focused is not None
        assert app.focused.id == "cancel"
        lines = text_of(app, "#apply-lines")
        assert f"undo of {done}: 3 queue(s) back to their before-image" in lines
        assert "drift: 1 queue(s) moved since the plan was made" in lines
        apply_button = dialog.query_one("#apply", Button)
        await pilot.click("#confirm-group")
        await pilot.press(*"billing")
        await pilot.pause()
        assert apply_button.disabled  # the drift is not accepted yet
        dialog.query_one("#accept-drift", Checkbox).value = True
        await pilot.pause()
        assert not apply_button.disabled
        await pilot.press("enter")
        await settle(pilot)
        result = app.screen
        assert isinstance(result, ApplyResultDialog)
        assert actions.calls == [("undo", done, True)]
        table = result.query_one("#apply-queues", DataTable)
        states = {table.get_row_at(i)[0] for i in range(table.row_count)}
        assert (table.row_count, states) == (4, {"verified"})
        assert f"undo {done}-u: finished · 4 verified" in text_of(app, "#apply-result")
        await pilot.press("escape")
        await settle(pilot)

        # Resume refuses an apply with nothing left; the stopped one is confirmed, then run.
        await pilot.press("R")
        await settle(pilot)
        assert isinstance(app.screen, ErrorDialog)
        assert "every queue is verified; nothing to resume" in text_of(app, "#error-message")
        await pilot.press("escape", "home", "R")
        await until(pilot, lambda: isinstance(app.screen, ConfirmApplyDialog))
        dialog = app.screen
        assert isinstance(dialog, ConfirmApplyDialog)
        assert dialog.summary.title == f"Resume {killed} on staging?"
        assert "3 found at their target, 0 to write" in text_of(app, "#apply-lines")
        await pilot.press("enter")  # on Cancel: nothing happens
        await settle(pilot)
        assert actions.calls == [("undo", done, True)]
        assert "resume cancelled: nothing was written" in " ".join(toasts(app))
        await pilot.press("R")
        await until(pilot, lambda: isinstance(app.screen, ConfirmApplyDialog))
        await pilot.click("#confirm-group")
        await pilot.press(*"billing", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ApplyResultDialog)
        assert actions.calls[-1] == ("resume", killed, False)
        # One session each (the undo, the cancelled resume, the resume), each read twice: the
        # check, then again after the confirmation (the cancelled one only once).
        assert actions.opened == ["staging"] * 3
        assert actions.reads == [("undo", done)] * 2 + [("resume", killed)] * 3


def stoppable_resume(store: JournalStore, stopped: list[str]) -> ScriptedWrites:
    """A resume that writes one queue, then waits for the stop the console sends."""

    async def write(
        kind: str,
        checked: WriteCheck,
        on_progress: Callable[[ApplyProgress], object],
        stop: asyncio.Event,
    ) -> Journal:
        assert isinstance(checked, ResumeCheck)
        on_progress(ApplyProgress(total=3, settled=1, verified=1, stage="writing"))
        await asyncio.wait_for(stop.wait(), 30)
        stopped.append(kind)
        return replace(
            checked.journal,
            status=ApplyStatus.STOPPED,
            finished_at_ms=T0,
            stopped_because="stopped on request",
        )

    scripted = history_writes(store)
    return ScriptedWrites(scripted.root, scripted.check, write)


async def test_x_stops_a_resume_and_the_result_says_where(tmp_path: Path) -> None:
    store = JournalStore(tmp_path / "ws")
    killed = "20261124T000200000Z-apply-billing-cccccc"
    store.write(
        journal(killed, at=120_000, status=ApplyStatus.STOPPED, verified=1, cluster="staging")
    )
    config = Config(
        clusters=(PROD, STAGING),
        refresh_interval=3600,
        theme="rmq-dark",
        workspace=str(tmp_path / "ws"),
    )
    stopped: list[str] = []
    actions = stoppable_resume(store, stopped)
    app, _ = fake_app(open_cluster=None, config=config, services=fake_services(writes=actions))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("H")
        await settle(pilot)
        history = app.screen
        assert isinstance(history, HistoryScreen)
        assert history.check_action("stop", ()) is None  # nothing is being written
        await pilot.press("R")
        await until(pilot, lambda: isinstance(app.screen, ConfirmApplyDialog))

        await pilot.click("#confirm-group")
        await pilot.press(*"billing", "enter")
        for _ in range(200):
            step = text_of(app, "#history-step")
            if "writing: 1/3 answered" in step:
                break
            await pilot.pause(0.05)
        assert step == "resume: writing: 1/3 answered · 1 verified"
        assert history.check_action("stop", ())
        await pilot.press("x")
        await pilot.pause()
        assert history.check_action("stop", ()) is None  # asked once
        await settle(pilot)
        assert stopped == ["resume"]
        assert isinstance(app.screen, ApplyResultDialog)
        assert "stopped: stopped on request" in text_of(app, "#apply-result")
