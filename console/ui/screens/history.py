"""History: what the workspace remembers, newest first — snapshots, plans, applies and undos
(with how they ended), and the audit log. Read from files in a worker; `m` on a row shows the
commands that apply a plan, or resume or undo an apply."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from console.ui.messages import HistoryRead
from console.ui.screens.base import ConsoleScreen
from console.ui.widgets.dataview import DataView
from console.ui.widgets.tablemodel import Column, Row, cell

if TYPE_CHECKING:
    from console.services.history import History, HistoryEntry

COLUMNS = (
    Column("when", "WHEN", "when (UTC)"),
    Column("what", "WHAT", "snapshot, plan, apply or undo"),
    Column("status", "STATUS", "what it holds or how it ended"),
    Column("groups", "GROUPS", "groups"),
    Column("cluster", "CLUSTER", "cluster"),
    Column("ref", "ID", "id"),
)


def history_rows(entries: tuple[HistoryEntry, ...]) -> list[Row]:
    return [
        Row(
            f"{e.what}|{e.ref}",
            (
                cell(e.at_ms, _when(e.at_ms)),
                cell(e.what),
                cell(e.status),
                cell(", ".join(e.groups)),
                cell(e.cluster),
                cell(e.ref),
            ),
        )
        for e in entries
    ]


def _when(at_ms: int) -> str:
    return datetime.fromtimestamp(at_ms / 1000, UTC).strftime("%m-%d %H:%M:%S")


def summary_line(history: History) -> str:
    counts: dict[str, int] = {}
    for e in history.entries:
        counts[e.what] = counts.get(e.what, 0) + 1
    plural = {"snapshot": "snapshots", "plan": "plans", "apply": "applies", "undo": "undos"}
    parts = [f"{counts.get(w, 0)} {many}" for w, many in plural.items()]
    parts.append(f"{history.audit_lines} audit lines")
    line = " · ".join(parts)
    if history.problems:
        line += f" · {len(history.problems)} unreadable: {history.problems[0]}"
    return line


class HistoryScreen(ConsoleScreen):
    crumb = "history"
    BINDINGS = [Binding("r", "reload", "Reload", id="history_reload")]

    def __init__(self) -> None:
        super().__init__(None)
        self.history: History | None = None

    def compose_body(self) -> ComposeResult:
        yield Static(Text("reading the workspace…"), id="history-summary")
        yield DataView("history", COLUMNS, id="history")

    def on_mount(self) -> None:
        self.query_one(DataView).focus_table()
        self.action_reload()

    def action_reload(self) -> None:
        self.status.update_state(busy=True)
        self.load()

    @work(thread=True, exclusive=True, group="history", exit_on_error=False)
    def load(self) -> None:
        from console.services.history import read_history
        from console.services.workspace import Workspace

        history = read_history(Workspace(self.console.config.workspace_path))
        self.post_message(HistoryRead(history))

    def on_history_read(self, message: HistoryRead) -> None:
        self.history = message.history
        self.query_one(DataView).set_rows(history_rows(message.history.entries))
        self.query_one("#history-summary", Static).update(Text(summary_line(message.history)))
        self.status.update_state(busy=False)

    def mqadmin_lines(self) -> list[str]:
        key = self.query_one(DataView).current_key
        if self.history is None or key is None:
            return ["# choose a plan or an apply first"]
        for e in self.history.entries:
            if f"{e.what}|{e.ref}" == key:
                return (
                    [f"# {e.what} {e.ref}", *e.commands] if e.commands else [f"# {e.what} {e.ref}"]
                )
        return []
