"""History's `v` on an apply: what `rmq-console verify APPLY_ID` says, as a dialog. Every queue
the apply verified, read again on its broker's master now (after a switch, the replica elected
since), worst first: rolled back by a switch, moved, not read, then holding; each broker's
replicas (which hold the write, which a switch now would roll it back to); and what was not
read at all."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

if TYPE_CHECKING:
    from console.services.apply.verify_journal import QueueNow, Verification


def verify_title(found: Verification) -> str:
    j = found.journal
    holding = sum(1 for q in found.queues if q.holds)
    parts = [f"{holding}/{len(found.queues)} hold on the master now"]
    if found.rolled_back:
        parts.append(f"{len(found.rolled_back)} rolled back by a switch or moved")
    if found.not_copied:
        parts.append(f"{found.not_copied} not copied to every replica")
    if found.unverified:
        parts.append(f"{found.unverified} the apply did not verify, not checked")
    return f"verify {j.apply_id}: " + " · ".join(parts)


def _worst_first(q: QueueNow) -> tuple[int, tuple[str, str, str, int]]:
    rank = 2 if q.holds else 1 if q.error is not None else 0
    return rank, q.queue.key


def verify_lines(found: Verification) -> list[str]:
    lines = [q.line() for q in sorted(found.queues, key=_worst_first)]
    lines += found.replicas
    lines += found.unread
    return lines


class VerifyDialog(ModalScreen[None]):
    """An apply's queues as read again now; `R` on History writes the rolled-back ones again."""

    BINDINGS = [Binding("escape,enter", "close", "Close", id="dialog_close")]

    def __init__(self, found: Verification) -> None:
        super().__init__(classes="dialog")
        self.found = found

    def compose(self) -> ComposeResult:
        found = self.found
        with Vertical(id="dialog"):
            yield Label(Text(verify_title(found)), classes="dialog-title", id="verify-title")
            with VerticalScroll():
                yield Static(Text("\n".join(verify_lines(found))), id="verify-lines")
            hint = "esc closes"
            if found.rolled_back:
                hint = (
                    f"R resumes {found.journal.apply_id}: the queues rolled back are written "
                    "again on the master now · " + hint
                )
            yield Label(Text(hint), classes="dialog-hint", id="verify-hint")

    def action_close(self) -> None:
        self.dismiss(None)
