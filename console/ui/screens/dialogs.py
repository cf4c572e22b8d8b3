"""Dialogs: each a typed ModalScreen that answers with its result (or None when dismissed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from console.ui.widgets.textbox import TextBox


class ErrorDialog(ModalScreen[None]):
    """A failure the operator should read; the console keeps refreshing behind it."""

    BINDINGS = [Binding("escape,enter", "close", "Close", id="dialog_close")]

    def __init__(self, title: str, message: str) -> None:
        super().__init__(classes="dialog -error")
        self.title_text = title
        self.message = message

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text(self.title_text), classes="dialog-title")
            yield Static(Text(self.message), id="error-message")
            with Horizontal(classes="dialog-buttons"):
                yield Button("OK", id="ok", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#ok", Button).focus()

    @on(Button.Pressed, "#ok")
    def action_close(self) -> None:
        self.dismiss(None)


class CommandsDialog(ModalScreen[None]):
    """The mqadmin command lines equivalent to a view, to paste into a runbook or ticket."""

    BINDINGS = [
        Binding("escape,m", "close", "Close", id="dialog_close"),
        Binding("c", "copy", "Copy", id="dialog_copy"),
    ]

    def __init__(self, view: str, lines: Sequence[str]) -> None:
        super().__init__(classes="dialog")
        self.view = view
        self.lines = list(lines)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text(f"mqadmin for {self.view}"), classes="dialog-title")
            yield Static(Text("\n".join(self.lines)), id="commands")
            yield Label(Text("c copies (terminal clipboard) · esc closes"), classes="dialog-hint")

    def action_copy(self) -> None:
        self.app.copy_to_clipboard("\n".join(self.lines))
        self.notify("copied to the clipboard")

    def action_close(self) -> None:
        self.dismiss(None)


class BoundaryDialog(ModalScreen[None]):
    """The messages at one queue's boundary in full (ids, hosts, sizes), and the mqadmin
    commands that print them."""

    BINDINGS = [Binding("escape,enter", "close", "Close", id="dialog_close")]

    def __init__(self, queue: str, details: Text, commands: Sequence[str]) -> None:
        super().__init__(classes="dialog")
        self.queue = queue
        self.details = details
        self.commands = list(commands)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text(f"The reset's boundary on {self.queue}"), classes="dialog-title")
            with VerticalScroll(id="boundary-details"):
                yield Static(self.details)
                yield Static(Text("\n".join(self.commands)), id="boundary-commands")
            yield Label(Text("↑↓ scroll · esc closes"), classes="dialog-hint")

    def on_mount(self) -> None:
        self.query_one("#boundary-details").focus()

    def action_close(self) -> None:
        self.dismiss(None)


class SaveDialog(ModalScreen[Path | None]):
    """Where to save a table as CSV."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="dialog_cancel")]

    def __init__(self, what: str, default: Path) -> None:
        super().__init__(classes="dialog")
        self.what = what
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text(f"Save {self.what} as CSV"), classes="dialog-title")
            yield TextBox(str(self.default), id="path")
            yield Label(Text("enter saves · esc cancels"), classes="dialog-hint")

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        self.dismiss(Path(value) if value else None)

    def action_cancel(self) -> None:
        self.dismiss(None)
