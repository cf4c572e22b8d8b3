"""`?`: the keys of the screen underneath (with their ids, for the keymap) and how to read it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from console.domain.readings import DEFAULT_WINDOW
from console.domain.triage import STATUS_RULES


@dataclass(frozen=True, slots=True)
class KeyHelp:
    key: str
    id: str
    description: str


WORDS = (
    ("lag", "max offset − committed offset; unknown when nothing is committed (never 0)"),
    ("in-flight", "pulled by the client − committed"),
    ("time behind", "now − store time of the first unconsumed message (the broker's own count)"),
    ("trend", "change of total lag per minute over the refresh window"),
    ("OFFLINE", "no client of the group is connected to any broker"),
    ("DOWN", "the broker does not answer, or dropped off the name server"),
)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "close", "Close", id="help_close")]

    def __init__(self, screen_name: str, keys: Sequence[KeyHelp]) -> None:
        super().__init__(classes="dialog")
        self.screen_name = screen_name
        self.keys = list(keys)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog"):
            yield Label(Text(f"Keys: {self.screen_name}"), classes="dialog-title")
            yield Static(self._keys_table(), id="help-keys")
            yield Label(
                Text("Status (per queue; the group shows its worst)"), classes="dialog-title"
            )
            yield Static(self._rules_table(), id="help-rules")
            yield Label(Text("Words"), classes="dialog-title")
            yield Static(self._words_table(), id="help-words")
            yield Label(
                Text("Remap any key in the config: keymap: {refresh: f5}. esc closes."),
                classes="dialog-hint",
            )

    def _keys_table(self) -> Text:
        return columns([(k.key, k.description, k.id) for k in self.keys])

    @staticmethod
    def _rules_table() -> Text:
        rows = [(status.value, rule) for status, rule in STATUS_RULES]
        rows.append(("", f"window: the last {DEFAULT_WINDOW} refreshes of the group"))
        return columns(rows)

    @staticmethod
    def _words_table() -> Text:
        return columns(list(WORDS))

    def action_close(self) -> None:
        self.dismiss(None)


def columns(rows: Sequence[Sequence[str]]) -> Text:
    """Rows of cells as aligned plain text (the last cell runs free)."""
    if not rows:
        return Text("")
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = [
        "  ".join([*(c.ljust(w) for c, w in zip(r, widths, strict=False)), r[-1]]).rstrip()
        for r in rows
    ]
    return Text("\n".join(lines))
