"""What every console screen has: banner, breadcrumbs, notes, status line, footer, esc, mqadmin,
CSV.

`ConsoleScreen` holds the one `Worker.StateChanged` handler of the console: every worker belongs
to a screen, and a failed one becomes the app's error report. `DataScreen` adds the refresh cycle
of a screen that shows one cluster's data: check the brokers, fetch the view, post messages;
one refresh at a time, and the status line says when one takes longer than the interval.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import Worker, WorkerState

from console.domain import mqadmin
from console.redact import redact_text
from console.services.infra import export
from console.services.read.cluster_session import ClusterSession
from console.services.read.source import ClusterSource
from console.ui import format as fmt
from console.ui.messages import (
    BrokersChecked,
    LagHistoryFailed,
    RefreshFinished,
    TableExported,
)
from console.ui.screens.dialogs import CommandsDialog, SaveDialog
from console.ui.widgets.banner import ClusterBanner
from console.ui.widgets.crumbs import Crumbs
from console.ui.widgets.dataview import DataView
from console.ui.widgets.statusline import StatusLine

if TYPE_CHECKING:
    from console.ui.console_host import ConsoleHost

REFRESH_GROUP = "refresh"


class ConsoleScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "back", "Back", id="back"),
        Binding("m", "mqadmin", "mqadmin", id="mqadmin"),
    ]

    crumb = ""
    #: Whether the screen's data refreshes (the status line then says when it last did).
    REFRESHES = False

    def __init__(self, session: ClusterSession | None = None) -> None:
        super().__init__()
        self.session = session

    @property
    def console(self) -> ConsoleHost:
        return cast("ConsoleHost", self.app)

    def compose(self) -> ComposeResult:
        yield ClusterBanner(self.session.cluster if self.session else None)
        yield Crumbs()
        yield from self.compose_body()
        yield Static(id="notes")
        yield StatusLine(self.console.clock_ms, refreshes=self.REFRESHES)
        yield Footer(compact=True, show_command_palette=False)

    def compose_body(self) -> ComposeResult:
        raise NotImplementedError

    @property
    def status(self) -> StatusLine:
        return self.query_one(StatusLine)

    def on_screen_resume(self) -> None:
        crumbs = [s.crumb for s in self.app.screen_stack if isinstance(s, ConsoleScreen)]
        self.query_one(Crumbs).show(crumbs)
        self.status.update_state(paused=self.console.paused)

    def show_notes(self, lines: list[str]) -> None:
        """Lines that explain what the status line only names (why a broker refuses us, why
        groups could not be read): wrapped to the screen's width, never cut off."""
        notes = self.query_one("#notes", Static)
        notes.update(Text("\n".join(redact_text(line) for line in lines)))
        notes.display = bool(lines)

    # ---- back and mqadmin ------------------------------------------------------------------------

    def action_back(self) -> None:
        # k9s habit: the first esc drops a table's filter, the next one goes back.
        for view in self.query(DataView):
            if view.query_text and view.has_focus_within:
                view.clear_filter()
                return
        if self.console.is_root(self):
            self.notify("nothing to go back to (q quits)", timeout=2)
            return
        self.app.pop_screen()

    def mqadmin_lines(self) -> list[str]:
        raise NotImplementedError

    def action_mqadmin(self) -> None:
        lines = self.mqadmin_lines()
        if self.session is not None:
            # A TLS cluster's commands carry the JVM properties mqadmin needs to reach it.
            lines = mqadmin.with_tls(lines, self.session.cluster.tls)
        self.app.push_screen(CommandsDialog(self.crumb, lines))

    # ---- CSV -----------------------------------------------------------------------------------

    @on(DataView.SaveRequested)
    def _save_requested(self, event: DataView.SaveRequested) -> None:
        event.stop()
        view = event.view
        headers, rows = view.export()
        parts = [self.session.cluster.name] if self.session else []
        for part in (self.crumb, view.title):
            if part not in parts:
                parts.append(part)
        name = export.default_name("-".join(parts), self.console.clock())

        def chosen(path: Path | None) -> None:
            if path is not None:
                self.export_csv(path, headers, rows)

        self.app.push_screen(SaveDialog(view.title, Path.cwd() / name), chosen)

    @work(thread=True, exclusive=True, group="export", exit_on_error=False)
    def export_csv(self, path: Path, headers: list[str], rows: list[list[Any]]) -> None:
        count = export.write_csv(path, headers, rows)
        self.post_message(TableExported(path, count))

    def on_table_exported(self, message: TableExported) -> None:
        self.notify(f"saved {message.rows} rows to {message.path}", markup=False)

    # ---- the one worker handler ------------------------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if event.state is WorkerState.ERROR:
            error = worker.error
            assert error is not None
            self.worker_failed(worker.group, error)
        elif event.state is WorkerState.SUCCESS and worker.group == REFRESH_GROUP:
            self.console.clear_error()
        if worker.group == REFRESH_GROUP and event.state in (
            WorkerState.ERROR,
            WorkerState.CANCELLED,
        ):
            self.status.update_state(busy=False, progress=None)

    def worker_failed(self, group: str, error: BaseException) -> None:
        what = "Refresh failed" if group == REFRESH_GROUP else f"{group.capitalize()} failed"
        self.status.update_state(error=_one_line(error))
        self.console.report_error(what, error)


class DataScreen(ConsoleScreen):
    """A screen of one cluster's data, refreshed now, on `r`, and on the app's interval."""

    BINDINGS = [Binding("r", "refresh", "Refresh", id="refresh")]
    REFRESHES = True

    def __init__(self, session: ClusterSession) -> None:
        super().__init__(session)
        self.cluster_session = session
        self._loader: Worker[None] | None = None
        self._shown = False

    @property
    def source(self) -> ClusterSource:
        return self.cluster_session.source

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.redraw())

    def on_screen_resume(self) -> None:
        # ConsoleScreen's own handler runs too (Textual calls each class's handler in the MRO).
        self._shown = True
        self.show_brokers()
        # Back from a detail or a dialog: what this screen shows is as old as the time spent
        # away. A refresh still under way is not restarted (500 groups take a while).
        self.refresh_due()

    # ---- the refresh cycle -----------------------------------------------------------------------

    @property
    def refreshing(self) -> bool:
        return self._loader is not None and self._loader.state in (
            WorkerState.PENDING,
            WorkerState.RUNNING,
        )

    def action_refresh(self) -> None:
        if self.refreshing:
            # A second full read on top of one that has not finished only slows both down.
            started = self.status.started_at_ms
            since = "" if started is None else f" ({self._age(started)} so far)"
            self.notify(f"a refresh is under way{since}", timeout=2)
            return
        self.refresh_now()

    def refresh_now(self) -> None:
        self.status.update_state(
            busy=True,
            started_at_ms=self.console.clock_ms(),
            interval_s=self.console.config.refresh_interval,
        )
        self._loader = self.load()

    def _age(self, then_ms: int) -> str:
        return fmt.age(self.console.clock_ms() - then_ms)

    def refresh_due(self) -> None:
        """The interval elapsed: start a refresh unless one is still running (a slow cluster
        would otherwise never finish one)."""
        # The interval can fire between a push and the screen's first showing, and on a loaded
        # machine before the widgets it composed are mounted (its status line not there yet).
        if self._shown and not self.refreshing and self.query(StatusLine):
            self.refresh_now()

    @work(exclusive=True, group=REFRESH_GROUP, exit_on_error=False)
    async def load(self) -> None:
        source = self.cluster_session.source
        brokers = await source.brokers()
        notices = await source.name_server_notices()
        self.post_message(BrokersChecked(brokers, self.console.clock_ms(), notices))
        await self.fetch()
        self.post_message(RefreshFinished(self.console.clock_ms()))

    async def fetch(self) -> None:
        """Read this view's data and post it as messages."""
        raise NotImplementedError

    def on_brokers_checked(self, message: BrokersChecked) -> None:
        self.cluster_session.observe_brokers(message.brokers, message.at_ms)
        self.cluster_session.notices = message.notices
        self.show_brokers()
        self.brokers_changed()

    def show_brokers(self) -> None:
        session = self.cluster_session
        self.status.update_state(
            down=session.down,
            refused=session.refused,
            tls_refused=session.tls_refused,
            notices=session.notices,
        )

    def on_refresh_finished(self, message: RefreshFinished) -> None:
        started = self.status.started_at_ms
        self.status.update_state(
            busy=False,
            progress=None,
            refreshed_at_ms=message.at_ms,
            error=None,
            took_ms=None if started is None else message.at_ms - started,
        )

    def on_lag_history_failed(self, message: LagHistoryFailed) -> None:
        self.notify(message.problem, title="Lag history", severity="warning", markup=False)

    def brokers_changed(self) -> None:
        """Hook: the session's broker states were updated."""

    def redraw(self) -> None:
        """Hook: rebuild styled cells (the theme changed)."""


def _one_line(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return text.splitlines()[0][:200]
