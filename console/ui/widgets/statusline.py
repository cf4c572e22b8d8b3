"""The line above the footer: refresh state, brokers that are down, the last error."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.widgets import Static

from console.ui import format as fmt
from console.ui.tones import style

_FIELDS = {"refreshed_at_ms", "progress", "busy", "paused", "down", "error", "note"}


class StatusLine(Static):
    def __init__(
        self, clock_ms: Callable[[], int], *, refreshes: bool = True, id: str | None = "status"
    ) -> None:
        super().__init__(id=id)
        self.refreshes = refreshes
        self._clock_ms = clock_ms
        self.refreshed_at_ms: int | None = None
        self.progress: tuple[int, int] | None = None
        self.busy = False
        self.paused = False
        self.down: tuple[str, ...] = ()
        self.error: str | None = None
        self.note = ""

    def on_mount(self) -> None:
        # Ages ("refreshed 4s ago") move on between refreshes.
        self.set_interval(1.0, self.refresh)

    def update_state(self, **changes: object) -> None:
        unknown = set(changes) - _FIELDS
        if unknown:
            raise AttributeError(f"no status field {', '.join(sorted(unknown))}")
        for name, value in changes.items():
            setattr(self, name, value)
        self.refresh()

    def render(self) -> Text:
        app = self.app
        parts: list[Text] = []
        if self.paused:
            parts.append(Text("PAUSED", style(app, "text-warning", bold=True)))
        if self.progress is not None and self.busy:
            done, total = self.progress
            parts.append(Text(f"refreshing {done}/{total}"))
        elif self.busy:
            parts.append(Text("refreshing…"))
        if self.refreshed_at_ms is not None:
            parts.append(Text(f"refreshed {fmt.age(self._clock_ms() - self.refreshed_at_ms)} ago"))
        elif self.refreshes and not self.busy:
            parts.append(Text("not refreshed yet"))
        if self.down:
            parts.append(Text(f"DOWN: {', '.join(self.down)}", style(app, "text-error", bold=True)))
        if self.note:
            parts.append(Text(self.note))
        if self.error:
            parts.append(Text(f"error: {self.error}", style(app, "text-error")))
        return Text(" · ").join(parts)
