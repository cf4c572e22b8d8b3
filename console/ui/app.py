"""The console app and `make_app`, the one way to build it (the CLI and the tests both call it).

What the app owns: the screen stack, the refresh interval and its pause, themes and the keymap,
and error reports. Data comes from a `ClusterSource` per cluster, made by the injected `connect`;
planning and writing go through the injected `ConsoleServices` (console/ui/services.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from textual import events
from textual.app import App
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.screen import Screen

from console.config import ClusterConfig, Config
from console.domain.readings import DEFAULT_WINDOW, Refreshes
from console.redact import redact_text
from console.services.infra.journal_store import unfinished_lines
from console.services.infra.workspace import Workspace
from console.services.read.cluster_session import ClusterSession
from console.services.read.lag_history import LagHistory, local_root
from console.services.read.source import SourceFactory
from console.ui.commands import ScreenActions, WalkthroughCommands
from console.ui.console_host import Clock
from console.ui.quietgc import QuietCollector
from console.ui.screens.base import ConsoleScreen, DataScreen
from console.ui.screens.help import HelpScreen, KeyHelp
from console.ui.services import ConsoleServices, cluster_services
from console.ui.themes import FALLBACK_THEME, LoadedThemes, load_themes, theme_dirs
from console.ui.typeahead import TypeAhead

#: How often the app checks whether a full garbage collection can run (see quietgc).
GC_TICK_S = 0.25


class ConsoleApp(App[int]):
    CSS_PATH = "console.tcss"
    TITLE = "rmq-console"
    COMMANDS = App.COMMANDS | {ScreenActions, WalkthroughCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", id="quit"),
        Binding("question_mark", "help", "Help", id="help"),
        Binding("p", "toggle_pause", "Pause", id="pause"),
        Binding("H", "history", "History", id="history", show=False),
    ]

    def __init__(
        self,
        config: Config,
        connect: SourceFactory,
        *,
        cluster: ClusterConfig | None,
        clock: Clock,
        themes: LoadedThemes,
        window: int,
        services: ConsoleServices,
    ) -> None:
        super().__init__()
        self.config = config
        self.connect = connect
        self.services = services
        self.start_cluster = cluster
        self.clock = clock
        self.window = window
        self.paused = False
        self._problems: list[str] = list(themes.problems)
        self._error_shown: str | None = None
        self._collector = QuietCollector()
        self._typeahead = TypeAhead()
        root = local_root(config.workspace_path)
        #: Every refresh's lag, shared by the clusters opened (one set of locks and caches).
        self.lag_history = LagHistory(root) if root is not None else None
        for theme in themes.themes:
            self.register_theme(theme)
        if config.theme in self.available_themes:
            self.theme = config.theme
        else:
            self._problems.append(f"theme {config.theme!r} not found; using {FALLBACK_THEME}")
            self.theme = FALLBACK_THEME
        self._apply_keymap(config.keymap)

    # ---- start-up ------------------------------------------------------------------------------

    def _apply_keymap(self, keymap: Mapping[str, str]) -> None:
        if not keymap:
            return  # nothing to check: the screens' modules load when first opened
        known = binding_ids()
        unknown = sorted(set(keymap) - known)
        if unknown:
            self._problems.append(
                f"keymap: unknown binding id(s) {', '.join(unknown)} (see ? for the ids)"
            )
        self.set_keymap({k: v for k, v in keymap.items() if k in known})

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded:
            later = self._typeahead.arrived(event, self.focused)  # where App.on_event hands it
            if later is not None:
                self.post_message(later)
                return
            self._collector.key_seen()
        await super().on_event(event)

    def on_key(self, event: events.Key) -> None:
        again = self._typeahead.came_back(event, self.focused)
        if again is not None:
            # Skip App's own handling (bindings, then key_ methods): the key comes back through
            # it from the widget focused now.
            event.prevent_default()
            self.post_message(again)

    def on_mount(self) -> None:
        if self.start_cluster is not None:
            self.open_cluster(self.start_cluster)
        else:
            # deferred: a screen loads when first opened, not with the console's first frame
            from console.ui.screens.clusters import ClustersScreen

            self.push_screen(ClustersScreen(self.config.clusters, self.config.source))
        self.set_interval(self.config.refresh_interval, self.refresh_tick, name="refresh")
        self._collector.install()
        self.set_interval(GC_TICK_S, self._collector.tick, name="gc")
        self.run_worker(self._offer_unfinished, thread=True, name="journals", exit_on_error=False)
        if self._problems:
            # Reported once, at start-up; the console works on with the fallbacks.
            self.notify(
                "\n".join(self._problems),
                title="Config",
                severity="warning",
                timeout=15,
                markup=False,
            )

    def _offer_unfinished(self) -> None:
        """Applies a console left part-way (killed mid-apply): named at start, with where to
        resume or undo them (History, or the commands)."""

        root = Workspace(self.config.workspace_path).local_root
        read_only = [c.name for c in self.config.clusters if c.read_only]
        lines = unfinished_lines(root, read_only=read_only) if root is not None else []
        if lines:
            lines.append(
                "History (H): R resumes the apply under the cursor, u undoes it (not on a "
                "read-only cluster)"
            )
            self.call_from_thread(
                self.notify,
                "\n".join(lines),
                title="Unfinished apply",
                severity="warning",
                timeout=30,
                markup=False,
            )

    def on_unmount(self) -> None:
        self._collector.uninstall()

    def clock_ms(self) -> int:
        return int(self.clock() * 1000)

    # ---- navigation ------------------------------------------------------------------------------

    def open_cluster(self, cluster: ClusterConfig) -> None:
        # deferred: a screen loads when first opened, not with the console's first frame
        from console.ui.screens.overview import OverviewScreen

        self.push_screen(OverviewScreen(self.session_for(cluster)))

    def session_for(self, cluster: ClusterConfig) -> ClusterSession:
        """The open session of `cluster` (a screen of it is on the stack), else a new one."""
        for screen in self.screen_stack:
            if isinstance(screen, ConsoleScreen) and screen.session is not None:
                if screen.session.cluster.name == cluster.name:
                    return screen.session
        return ClusterSession(
            cluster, self.connect(cluster), Refreshes(self.window), lag=self.lag_history
        )

    def is_root(self, screen: Screen[Any]) -> bool:
        consoles = [s for s in self.screen_stack if isinstance(s, ConsoleScreen)]
        return bool(consoles) and consoles[0] is screen

    # ---- refresh -------------------------------------------------------------------------------

    def refresh_tick(self) -> None:
        if self.paused:
            return
        # The top-most data screen refreshes even under a dialog: help open at 3 a.m. must not
        # freeze the numbers behind it.
        for screen in reversed(self.screen_stack):
            if isinstance(screen, DataScreen):
                screen.refresh_due()
                return

    def action_toggle_pause(self) -> None:
        self.paused = not self.paused
        for screen in self.screen_stack:
            if isinstance(screen, ConsoleScreen):
                screen.status.update_state(paused=self.paused)
        self.notify("refresh paused" if self.paused else "refresh resumed", timeout=2)

    # ---- help ----------------------------------------------------------------------------------

    def action_history(self) -> None:
        # deferred: a screen loads when first opened, not with the console's first frame
        from console.ui.screens.history import HistoryScreen

        if not isinstance(self.screen, HistoryScreen):
            self.push_screen(HistoryScreen())

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        keys = [
            KeyHelp(self.get_key_display(a.binding), a.binding.id or "", a.binding.description)
            for a in self.screen.active_bindings.values()
            if a.binding.description
        ]
        # The console's own actions (they have ids, so they can be remapped) before moving around.
        keys.sort(key=lambda k: not k.id)
        name = self.screen.crumb if isinstance(self.screen, ConsoleScreen) else "dialog"
        self.push_screen(HelpScreen(name, keys))

    # ---- errors --------------------------------------------------------------------------------

    def report_error(self, title: str, error: BaseException) -> None:
        """Show a failure in a dialog, once: the same failure on every refresh of a cluster
        that is down is shown again only after something succeeded in between."""
        # deferred: a screen loads when first opened, not with the console's first frame
        from console.ui.screens.dialogs import ErrorDialog

        text = redact_text(str(error)) or type(error).__name__
        if text == self._error_shown:
            return
        self._error_shown = text
        if not isinstance(self.screen, ErrorDialog):
            self.push_screen(ErrorDialog(title, text))

    def clear_error(self) -> None:
        self._error_shown = None


def binding_ids() -> set[str]:
    """Every binding id the console declares, for checking the config's keymap."""
    # deferred: the screens load here only for a keymap to check; else when first opened, not
    # with the console's first frame
    from console.ui.screens.apply import ApplyResultDialog, ConfirmApplyDialog
    from console.ui.screens.clusters import ClustersScreen
    from console.ui.screens.dialogs import CommandsDialog, ErrorDialog, SaveDialog
    from console.ui.screens.group import GroupScreen
    from console.ui.screens.groups import GroupsScreen
    from console.ui.screens.history import HistoryScreen
    from console.ui.screens.overview import OverviewScreen
    from console.ui.screens.preview import PreviewScreen
    from console.ui.screens.topics import TopicScreen, TopicsScreen
    from console.ui.screens.walkthrough import WalkthroughScreen
    from console.ui.widgets.dataview import DataView, FilterInput
    from console.ui.widgets.rowtable import RowTable

    owners: Iterable[type[DOMNode]] = (
        ConsoleApp,
        ClustersScreen,
        OverviewScreen,
        TopicsScreen,
        TopicScreen,
        GroupsScreen,
        GroupScreen,
        PreviewScreen,
        HistoryScreen,
        WalkthroughScreen,
        HelpScreen,
        ConfirmApplyDialog,
        ApplyResultDialog,
        ErrorDialog,
        CommandsDialog,
        SaveDialog,
        DataView,
        FilterInput,
        RowTable,
    )
    ids: set[str] = set()
    for owner in owners:
        for klass in owner.__mro__:
            for b in vars(klass).get("BINDINGS", []):
                if isinstance(b, Binding) and b.id:
                    ids.add(b.id)
    return ids


def make_app(
    config: Config,
    connect: SourceFactory,
    *,
    cluster: ClusterConfig | None = None,
    clock: Clock = time.time,
    theme_paths: Sequence[Path] | None = None,
    window: int = DEFAULT_WINDOW,
    services: ConsoleServices | None = None,
) -> ConsoleApp:
    """The console. `cluster` opens that cluster's overview; without it, the Clusters screen
    lists `config.clusters`. `connect` makes the data source of a cluster when it is opened;
    `services` plan and write (the clusters' own when not given)."""
    themes = load_themes(theme_dirs() if theme_paths is None else theme_paths)
    return ConsoleApp(
        config,
        connect,
        cluster=cluster,
        clock=clock,
        themes=themes,
        window=window,
        services=services if services is not None else cluster_services(config),
    )
