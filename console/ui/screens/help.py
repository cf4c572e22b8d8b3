"""`?`: the keys of the screen underneath (with their ids, for the keymap) and how to read it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from console.services.triage import DEFAULT_WINDOW, STATUS_RULES


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
            yield Label(Text("Status (per queue; the group shows its worst)"), classes="dialog-title")
            yield Static(self._rules_table(), id="help-rules")
            yield Label(Text("Words"), classes="dialog-title")
            yield Static(self._words_table(), id="help-words")
            yield Label(
                Text("Remap any key in the config: keymap: {refresh: f5}. esc closes."),
                classes="dialog-hint",
            )

    def _keys_table(self) -> Table:
        table = Table.grid(padding=(0, 2))
        for k in self.keys:
            table.add_row(Text(k.key), Text(k.description), Text(k.id))
        return table

    @staticmethod
    def _rules_table() -> Table:
        table = Table.grid(padding=(0, 2))
        for status, rule in STATUS_RULES:
            table.add_row(Text(status.value), Text(rule))
        table.add_row(
            Text(""), Text(f"Window: the last {DEFAULT_WINDOW} refreshes of the group.")
        )
        return table

    @staticmethod
    def _words_table() -> Table:
        table = Table.grid(padding=(0, 2))
        for word, meaning in WORDS:
            table.add_row(Text(word), Text(meaning))
        return table

    def action_close(self) -> None:
        self.dismiss(None)
