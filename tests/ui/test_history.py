"""The History screen (H): applies and undos from the workspace's journals, newest first, with
how they ended (an apply whose console died is "interrupted"); a journal that cannot be read is
named, not skipped; `m` gives the commands that resume or undo the apply under the cursor. Also
the start-up notice naming an unfinished apply."""

from __future__ import annotations

from pathlib import Path

from console.config import Config
from console.domain.journal import ApplyStatus, Journal, JournalQueue, QueueState
from console.services.journal_store import JournalStore
from console.ui.screens.dialogs import CommandsDialog
from console.ui.screens.history import HistoryScreen

from .fakes import PROD, STAGING, fake_app
from .helpers import settle, shown, text_of, toasts

T0 = 1_795_400_000_000


def journal(
    apply_id: str, *, at: int, status: ApplyStatus, verified: int, undo_of: str | None = None
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
        cluster="prod",
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
    store.write(journal(done, at=0, status=ApplyStatus.FINISHED, verified=4))
    store.write(journal(killed, at=60_000, status=ApplyStatus.RUNNING, verified=1))
    store.write(journal(undo, at=120_000, status=ApplyStatus.FINISHED, verified=4, undo_of=done))
    (store.dir / "20261124T000300000Z-apply-x-dddddd.json").write_text('{"format": 1, "apply')
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
        await pilot.press("H")
        await settle(pilot)
        assert isinstance(app.screen, HistoryScreen)
        rows = shown(app)
        assert [(r["what"], r["ref"], r["status"]) for r in rows] == [
            ("undo", undo, f"finished: 4/4 verified (undo of {done})"),
            ("apply", killed, "interrupted: 1/4 verified"),
            ("apply", done, "finished: 4/4 verified"),
        ]
        summary = text_of(app, "#history-summary")
        assert "0 snapshots · 0 plans · 2 applies · 1 undos · 0 audit lines" in summary
        assert "1 unreadable: journal 20261124T000300000Z-apply-x-dddddd" in summary
        await pilot.press("down", "m")  # the interrupted apply
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, CommandsDialog)
        assert dialog.lines[1:] == [
            f"rmq-console resume {killed} --cluster prod",
            f"rmq-console undo {killed} --cluster prod",
        ]
