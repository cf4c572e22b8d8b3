"""The line above the footer: refresh state (and a refresh slower than the interval), brokers
that are down or refuse us, notices, the last error."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.widgets import Static

from console.ui import format as fmt
from console.ui.tones import style

_FIELDS = {
    "refreshed_at_ms",
    "progress",
    "stage",
    "busy",
    "paused",
    "down",
    "refused",
    "tls_refused",
    "error",
    "note",
    "notices",
    "started_at_ms",
    "took_ms",
    "interval_s",
}


class StatusLine(Static):
    def __init__(
        self, clock_ms: Callable[[], int], *, refreshes: bool = True, id: str | None = "status"
    ) -> None:
        super().__init__(id=id)
        self.refreshes = refreshes
        self._clock_ms = clock_ms
        self.refreshed_at_ms: int | None = None
        self.progress: tuple[int, int] | None = None
        #: what the progress counts ("refreshing", "time behind")
        self.stage = "refreshing"
        self.busy = False
        self.paused = False
        self.down: tuple[str, ...] = ()
        #: brokers that refused our credentials (not down: they answered)
        self.refused: tuple[str, ...] = ()
        #: brokers that refused our TLS (or its absence): the config's `tls:`, not a broker down
        self.tls_refused: tuple[str, ...] = ()
        self.error: str | None = None
        self.note = ""
        #: headless notices about the cluster (a name server that does not answer, ...)
        self.notices: tuple[str, ...] = ()
        #: when the refresh under way started, and how long the last one took (clock ms)
        self.started_at_ms: int | None = None
        self.took_ms: int | None = None
        #: the refresh interval: a refresh slower than this is said to be
        self.interval_s: float | None = None

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
        now = self._clock_ms()
        if self.progress is not None and self.busy:
            done, total = self.progress
            parts.append(Text(f"{self.stage} {done}/{total}"))
        elif self.busy:
            parts.append(Text("refreshing…"))
        running = self._slow(now - self.started_at_ms) if self.busy and self.started_at_ms else ""
        if running:
            parts.append(Text(f"{running} so far", style(app, "text-warning", bold=True)))
        if self.refreshed_at_ms is not None:
            parts.append(Text(f"refreshed {fmt.age(now - self.refreshed_at_ms)} ago"))
            took = self._slow(self.took_ms) if not self.busy else ""
            if took:
                parts.append(Text(f"took {took}", style(app, "text-warning")))
        elif self.refreshes and not self.busy:
            parts.append(Text("not refreshed yet"))
        if self.refused:
            refused = f"AUTH REFUSED: {', '.join(self.refused)}"
            parts.append(Text(refused, style(app, "text-error", bold=True)))
        if self.tls_refused:
            refused = f"TLS REFUSED (check tls: in the config): {', '.join(self.tls_refused)}"
            parts.append(Text(refused, style(app, "text-error", bold=True)))
        if self.down:
            parts.append(Text(f"DOWN: {', '.join(self.down)}", style(app, "text-error", bold=True)))
        for notice in self.notices:
            parts.append(Text(notice, style(app, "text-warning")))
        if self.note:
            parts.append(Text(self.note))
        if self.error:
            parts.append(Text(f"error: {self.error}", style(app, "text-error")))
        return Text(" · ").join(parts)

    def _slow(self, ms: int | None) -> str:
        """'14s > 10s interval' when a refresh took longer than the interval, else ''."""
        if ms is None or self.interval_s is None or ms <= self.interval_s * 1000:
            return ""
        return f"{fmt.age(ms)} > {fmt.age(int(self.interval_s * 1000))} interval"
