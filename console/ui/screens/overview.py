"""Cluster overview: brokers and their health, topic and group totals; t and g go further."""

from __future__ import annotations

import asyncio

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from console.rocketmq.errors import RocketMQError
from console.services import mqadmin_commands
from console.services.session import ClusterSession
from console.ui import format as fmt
from console.ui.messages import OverviewRefreshed
from console.ui.screens.base import DataScreen
from console.ui.tones import toned
from console.ui.widgets.dataview import DataView
from console.ui.widgets.tablemodel import Column, Row, cell

COLUMNS = (
    Column("broker", "BROKER", "broker"),
    Column("addr", "ADDRESS", "address"),
    Column("state", "STATE", "state"),
    Column("version", "VERSION", "version"),
    Column("in", "IN TODAY", "messages stored today", numeric=True),
    Column("out", "OUT TODAY", "messages delivered today", numeric=True),
    Column("seen", "SEEN", "last answered (ms ago)", numeric=True),
    Column("note", "NOTE", "error"),
)


class OverviewScreen(DataScreen):
    BINDINGS = [
        Binding("t", "topics", "Topics", id="topics"),
        Binding("g", "groups", "Groups", id="groups"),
    ]

    def __init__(self, session: ClusterSession) -> None:
        super().__init__(session)
        self.crumb = session.cluster.name
        self.totals: tuple[int | None, int | None] = (None, None)

    def compose_body(self) -> ComposeResult:
        yield Static(id="totals")
        yield DataView("brokers", COLUMNS, id="brokers")

    def on_mount(self) -> None:
        self.query_one(DataView).focus_table()
        self._show_totals()

    def on_unmount(self) -> None:
        # The overview opened the session (see ConsoleApp.open_cluster); leaving it ends it.
        self.cluster_session.close()

    async def fetch(self) -> None:
        topics, groups = await asyncio.gather(
            self.source.topics(), self.source.groups(), return_exceptions=True
        )
        for answer in (topics, groups):
            if isinstance(answer, BaseException) and not isinstance(answer, RocketMQError):
                raise answer
        self.post_message(
            OverviewRefreshed(
                len(topics) if isinstance(topics, list) else None,
                len(groups) if isinstance(groups, list) else None,
            )
        )

    def on_overview_refreshed(self, message: OverviewRefreshed) -> None:
        self.totals = (message.topics, message.groups)
        self._show_totals()

    def brokers_changed(self) -> None:
        self.redraw()

    def redraw(self) -> None:
        self.query_one(DataView).set_rows(self.broker_rows())
        self._show_totals()

    def broker_rows(self) -> list[Row]:
        now = self.console.clock_ms()
        rows = []
        for b in self.cluster_session.brokers:
            seen_at = self.cluster_session.last_seen_ms.get(b.name)
            seen = now - seen_at if seen_at is not None else None
            state = (
                toned(self.app, "UP", "text-success")
                if b.up
                else toned(self.app, "DOWN", "text-error", bold=True)
            )
            rows.append(
                Row(
                    b.name,
                    (
                        cell(b.name),
                        cell(b.addr),
                        cell("UP" if b.up else "DOWN", state),
                        cell(b.version, b.version or "-"),
                        cell(b.put_today, fmt.compact(b.put_today)),
                        cell(b.get_today, fmt.compact(b.get_today)),
                        cell(seen, "now" if b.up else fmt.age(seen)),
                        cell(b.error, b.error or ""),
                    ),
                )
            )
        return rows

    def _show_totals(self) -> None:
        brokers = self.cluster_session.brokers
        down = sum(1 for b in brokers if not b.up)
        topics, groups = self.totals
        text = Text(f"{len(brokers)} brokers")
        if down:
            text.append(f" ({down} down)", style="bold")
        text.append(f" · {'?' if topics is None else topics} topics")
        text.append(f" · {'?' if groups is None else groups} groups")
        self.query_one("#totals", Static).update(text)

    def action_topics(self) -> None:
        from console.ui.screens.topics import TopicsScreen

        self.app.push_screen(TopicsScreen(self.cluster_session))

    def action_groups(self) -> None:
        from console.ui.screens.groups import GroupsScreen

        self.app.push_screen(GroupsScreen(self.cluster_session))

    def mqadmin_lines(self) -> list[str]:
        ns = self.cluster_session.cluster.namesrv
        return mqadmin_commands.overview(ns, [b.addr for b in self.cluster_session.brokers])
