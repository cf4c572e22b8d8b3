"""Clusters: the clusters of the config file, each with its colour and read-only flag."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from console.config import ClusterConfig
from console.domain import mqadmin
from console.ui.screens.base import ConsoleScreen
from console.ui.widgets.dataview import DataView
from console.ui.widgets.rowtable import RowTable
from console.ui.widgets.tablemodel import Column, Row, cell

COLUMNS = (
    Column("name", "NAME", "cluster"),
    Column("namesrv", "NAMESRV", "name servers"),
    Column("mode", "MODE", "read-only"),
    Column("colour", "COLOUR", "colour"),
)


def cluster_rows(clusters: Sequence[ClusterConfig]) -> list[Row]:
    return [
        Row(
            c.name,
            (
                cell(c.name),
                cell(";".join(c.namesrv)),
                cell(c.read_only, "read-only" if c.read_only else "read-write"),
                cell(c.colour),
            ),
        )
        for c in clusters
    ]


class ClustersScreen(ConsoleScreen):
    crumb = "clusters"

    def __init__(self, clusters: Sequence[ClusterConfig], config_source: str | None) -> None:
        super().__init__(None)
        self.clusters = tuple(clusters)
        self.config_source = config_source

    def compose_body(self) -> ComposeResult:
        if not self.clusters:
            where = self.config_source or "the config file (RMQ_CONSOLE_CONFIG)"
            yield Static(
                Text(
                    f"No clusters configured in {where}.\n"
                    "Add them under `clusters:` or start with --namesrv HOST:PORT."
                ),
                id="empty",
            )
        yield DataView("clusters", COLUMNS, id="clusters")

    def on_mount(self) -> None:
        view = self.query_one(DataView)
        view.set_rows(cluster_rows(self.clusters))
        view.focus_table()
        if self.config_source:
            self.status.update_state(note=f"from {self.config_source}")

    def on_row_table_row_selected(self, event: RowTable.RowSelected) -> None:
        name = event.key
        for c in self.clusters:
            if c.name == name:
                self.console.open_cluster(c)
                return

    def mqadmin_lines(self) -> list[str]:
        key = self.query_one(DataView).current_key
        chosen = [c for c in self.clusters if c.name == key]
        if not chosen:
            return []
        return mqadmin.with_tls(mqadmin.clusters(chosen[0].namesrv), chosen[0].tls)
