"""Writing offsets from the console: the confirm dialog, then the result per queue. The
preview's apply, and History's undo and resume, go through both.

The confirm dialog says what will happen before anything is written, as the terminal says it
(console/services/apply/check_text.py): the cluster (in its colour), the groups, how many queues
change, how many messages and how much time of them are replayed or skipped, the reset path and
what it means for consumers online, the drift found and what blocks. The operator types the
group name; focus starts on Cancel, so a stray Enter writes nothing. The result view lists
every queue as the read-back found it (verified / not yet / failed), worst first, and under
its title what became of the write on each broker's replicas (copied, or not yet: a switch now
would roll it back).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, DataTable, Input, Label, Static

from console.domain.journal import ApplyStatus, QueueState
from console.services.apply.write_check import Confirmation
from console.ui.widgets.banner import ClusterBanner
from console.ui.widgets.textbox import TextBox

if TYPE_CHECKING:
    from console.config import ClusterConfig
    from console.domain.journal import Journal
    from console.services.apply.write_check import WriteCheck


@dataclass(frozen=True, slots=True)
class WriteSummary:
    """What a confirm dialog shows before a write, and what it asks of the operator."""

    cluster: ClusterConfig  # shown as its banner, in its colour, atop the summary
    title: str
    lines: tuple[str, ...]
    groups: tuple[str, ...]  # the names to type, sorted
    drift: bool  # queues moved since planning: writing needs the drift accepted too
    blocked: bool  # something forbids writing whatever is typed


#: How many queues that moved the dialog names (the rest are counted).
DRIFT_SHOWN = 5


def write_summary(check: WriteCheck, cluster: ClusterConfig) -> WriteSummary:
    """The confirm dialog's summary of an apply's, an undo's or a resume's check: the check's
    description (console/services/apply/check_text.py), as the terminal prints it."""
    # deferred: the write path's checks load when a write is confirmed, not with the
    # console's first frame
    from console.services.apply.check_text import describe_check

    text = describe_check(check, cluster)
    lines = list(text.facts)
    if text.drift:
        head, *moved = text.drift
        lines += [head, *moved[:DRIFT_SHOWN]]
        if len(moved) > DRIFT_SHOWN:
            lines.append(f"  … and {len(moved) - DRIFT_SHOWN} more")
    lines += [f"blocked: {b}" for b in text.blockers]
    return WriteSummary(
        cluster,
        text.title,
        tuple(lines),
        check.names,
        check.has_drift,
        bool(check.blockers),
    )


class ConfirmApplyDialog(ModalScreen[Confirmation | None]):
    """Typed confirmation of a write (an apply, an undo, a resume): the names as typed, for the
    session to check; None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="dialog_cancel")]
    #: Cancel holds the focus from the dialog's first frame. Focused later (from on_mount), it
    #: took the focus from the name box while a quick operator's keys were going into it.
    AUTO_FOCUS = "#cancel"

    def __init__(self, summary: WriteSummary) -> None:
        super().__init__(classes="dialog -write")
        self.summary = summary
        self.groups = sorted(summary.groups)

    def compose(self) -> ComposeResult:
        name = " ".join(self.groups)
        with Vertical(id="dialog"):
            yield ClusterBanner(self.summary.cluster, id="apply-banner")
            yield Label(Text(self.summary.title), classes="dialog-title")
            with VerticalScroll(id="apply-summary"):
                yield Static(Text("\n".join(self.summary.lines)), id="apply-lines")
            if self.summary.drift:
                yield Checkbox("write anyway (accept the drift)", id="accept-drift", compact=True)
            yield TextBox(placeholder=f"type {name} to confirm", id="confirm-group", compact=True)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Cancel", id="cancel", compact=True)
                yield Button("Apply", id="apply", variant="error", compact=True, disabled=True)

    @property
    def ready(self) -> bool:
        typed = self.query_one("#confirm-group", Input).value.split()
        if self.summary.blocked or sorted(typed) != self.groups:
            return False
        if self.summary.drift:
            return self.query_one("#accept-drift", Checkbox).value
        return True

    @on(Input.Changed, "#confirm-group")
    @on(Checkbox.Changed, "#accept-drift")
    def _typed(self) -> None:
        self.query_one("#apply", Button).disabled = not self.ready

    @on(Input.Submitted, "#confirm-group")
    @on(Button.Pressed, "#apply")
    def _apply(self) -> None:
        if self.ready:
            typed = tuple(self.query_one("#confirm-group", Input).value.split())
            self.dismiss(Confirmation(typed, accept_drift=self.summary.drift))

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


#: How the result view orders queues: the ones needing a look first.
_ORDER = {
    QueueState.FAILED: 0,
    QueueState.KEPT_OTHER: 1,
    QueueState.PENDING: 2,
    QueueState.WRITTEN: 3,
    QueueState.PAST_TARGET: 4,
    QueueState.NOT_YET: 5,
    QueueState.VERIFIED: 6,
}


def result_line(journal: Journal) -> str:
    counts = ", ".join(f"{journal.count(s)} {s}" for s in QueueState if journal.count(s))
    what = "apply" if journal.undo_of is None else "undo"
    line = f"{what} {journal.apply_id}: {journal.status} · {counts}"
    if journal.stopped_because:
        line += f" · stopped: {journal.stopped_because}"
    return line


class ApplyResultDialog(ModalScreen[None]):
    """Every queue of an apply as read back, worst first; the journal's path to quote."""

    BINDINGS = [Binding("escape,enter", "close", "Close", id="dialog_close")]

    def __init__(self, journal: Journal, journal_path: str) -> None:
        super().__init__(classes="dialog")
        self.journal = journal
        self.journal_path = journal_path

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text(result_line(self.journal)), classes="dialog-title", id="apply-result")
            if self.journal.replicas:
                # What became of the write on each broker's replicas: copied, or which replica
                # a switch now would roll it back to.
                yield Label(Text("\n".join(self.journal.replicas)), id="apply-replicas")
            yield DataTable(id="apply-queues", cursor_type="row", zebra_stripes=True)
            hint = f"journal {self.journal_path}"
            if self.journal.status is ApplyStatus.NOT_COPIED:
                hint += (
                    " · History (H) verifies it again (v), or rmq-console verify "
                    f"{self.journal.apply_id}"
                )
            if self.journal.unfinished:
                hint += (
                    " · History (H) resumes or undoes it, or rmq-console resume "
                    f"{self.journal.apply_id}"
                )
            yield Label(Text(hint), classes="dialog-hint", id="apply-hint")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("STATE", "GROUP", "QUEUE", "BEFORE", "TARGET", "HOLDS")
        queues = sorted(self.journal.queues, key=lambda q: (_ORDER[q.state], q.key))
        for q in queues:
            table.add_row(
                str(q.state),
                q.group,
                f"{q.topic}/{q.broker}/{q.queue_id}",
                "-" if q.before is None else str(q.before),
                str(q.target),
                "-" if q.stored is None else str(q.stored),
                key="|".join(map(str, q.key)),
            )
        table.focus()

    def action_close(self) -> None:
        self.dismiss(None)
