"""Cluster overview: every broker address (masters and slaves) and its health, topic and group
totals; t and g go further."""

from __future__ import annotations

import asyncio

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from console.domain import mqadmin
from console.domain.gaps import Why
from console.domain.offsets import FROM_SLAVE
from console.rocketmq.errors import RocketMQError
from console.rocketmq.models import MASTER_ID
from console.services.read.cluster_session import ClusterSession, label
from console.services.read.replication import replica_set_lines
from console.services.read.routes import ReplicaFacts
from console.ui import format as fmt
from console.ui.messages import OverviewRefreshed
from console.ui.screens.base import DataScreen
from console.ui.tones import toned
from console.ui.widgets.banner import named_after_namesrv
from console.ui.widgets.dataview import DataView
from console.ui.widgets.tablemodel import Column, Row, cell

# Everything fits 80 columns with a broker's address and a short note: the broker id is in
# the role (a master is id 0, a slave says its id), the day's counts are IN and OUT.
COLUMNS = (
    Column("broker", "BROKER", "broker"),
    Column("role", "ROLE", "master (broker id 0) or slave and its broker id", numeric=True),
    Column("addr", "ADDRESS", "address"),
    Column("state", "STATE", "state"),
    Column("version", "VERSION", "version"),
    Column("in", "IN", "messages stored today", numeric=True),
    Column("out", "OUT", "messages delivered today", numeric=True),
    Column("seen", "SEEN", "last answered (ms ago)", numeric=True),
    Column("note", "NOTE", "error"),
)

#: A broker that answers but refuses us is not down: the STATE column says which refusal.
REFUSED_STATES = {Why.AUTHENTICATION: "AUTH", Why.PERMISSION: "DENIED", Why.TLS: "TLS"}


def role_text(broker_id: int) -> str:
    """MASTER (always broker id 0), SLAVE and its broker id, or - (a replica the controller
    knows that the name server does not list)."""
    if broker_id < MASTER_ID:
        return "-"
    return "MASTER" if broker_id == MASTER_ID else f"SLAVE {broker_id}"


def replica_note(facts: ReplicaFacts | None) -> str:
    """In controller mode: the replica's epoch and whether it is in the SyncStateSet."""
    if facts is None:
        return ""
    epoch = f"epoch {facts.epoch}" if facts.epoch is not None else "epoch ?"
    if facts.in_sync is None:
        return f"{epoch}, SyncStateSet unknown"
    return f"{epoch}, {'in sync' if facts.in_sync else 'NOT in sync'}"


class OverviewScreen(DataScreen):
    BINDINGS = [
        Binding("t", "topics", "Topics", id="topics"),
        Binding("g", "groups", "Groups", id="groups"),
    ]

    def __init__(self, session: ClusterSession) -> None:
        super().__init__(session)
        # A cluster named after its name servers is named by the banner already.
        self.crumb = "overview" if named_after_namesrv(session.cluster) else session.cluster.name
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
        self.show_notes(self.broker_notes())

    def broker_notes(self) -> list[str]:
        """Why each broker that does not answer does not, in full (the NOTE column is cut),
        and where the reads of a broker whose master is down go."""
        session = self.cluster_session
        notes = [
            f"{label(b)}: {b.error}" if b.error else f"{label(b)}: no answer"
            for b in session.brokers
            if not b.up
        ]
        notes += [
            f"{name}: {FROM_SLAVE}: reads go to slave {s.broker_id} at {s.addr}, "
            "nothing is written to it"
            for name, s in sorted(session.from_slave.items())
        ]
        controllers = sorted({b.replica.controller or "?" for b in session.brokers if b.replica})
        if controllers:
            notes.append(f"controller mode: controller {', '.join(controllers)}")
        notes += replica_set_lines(session.brokers)
        notes += [
            f"{label(b)} at {b.addr}: outside the SyncStateSet (behind its master): it cannot "
            "be elected while it is"
            for b in session.brokers
            if b.up and b.replica is not None and b.replica.in_sync is False
        ]
        return notes

    def broker_rows(self) -> list[Row]:
        now = self.console.clock_ms()
        rows = []
        for b in self.cluster_session.brokers:
            seen_at = self.cluster_session.last_seen_ms.get((b.name, b.broker_id))
            seen = now - seen_at if seen_at is not None else None
            word = "UP" if b.up else REFUSED_STATES.get(b.why, "DOWN") if b.why else "DOWN"
            state = toned(self.app, word, "text-success" if b.up else "text-error", bold=not b.up)
            # A master keeps the broker's name as its key (selections survive a slave showing
            # up); a slave is keyed by its id as well.
            key = b.name if b.broker_id == MASTER_ID else f"{b.name}/{b.broker_id}"
            rows.append(
                Row(
                    key,
                    (
                        cell(b.name),
                        cell(b.broker_id, role_text(b.broker_id)),
                        # What the broker registered (mqadmin's), and where it is reached.
                        cell(b.addr, f"{b.addr} → {b.reached}" if b.reached else b.addr),
                        cell(word, state),
                        cell(b.version, b.version or "-"),
                        cell(b.put_today, fmt.compact(b.put_today)),
                        cell(b.get_today, fmt.compact(b.get_today)),
                        cell(seen, "now" if b.up else fmt.age(seen)),
                        cell(b.error, b.error or replica_note(b.replica)),
                    ),
                )
            )
        return rows

    def _show_totals(self) -> None:
        session = self.cluster_session
        brokers = session.brokers
        down, refused = len(session.down), len(session.refused)
        tls_refused = len(session.tls_refused)
        topics, groups = self.totals
        named = len({b.name for b in brokers})
        slaves = sum(1 for b in brokers if b.broker_id != MASTER_ID)
        text = Text(f"{named} broker{'s' if named != 1 else ''}")
        if slaves:
            text.append(f" + {slaves} slave{'s' if slaves != 1 else ''}")
        if down:
            text.append(f" ({down} down)", style="bold")
        if refused:
            text.append(f" ({refused} refuse our credentials)", style="bold")
        if tls_refused:
            text.append(f" ({tls_refused} refuse our TLS: check tls: in the config)", style="bold")
        text.append(f" · {'?' if topics is None else topics} topics")
        text.append(f" · {'?' if groups is None else groups} groups")
        self.query_one("#totals", Static).update(text)

    def action_topics(self) -> None:
        # deferred: a screen loads when first opened, not with the console's first frame
        from console.ui.screens.topics import TopicsScreen

        self.app.push_screen(TopicsScreen(self.cluster_session))

    def action_groups(self) -> None:
        # deferred: a screen loads when first opened, not with the console's first frame
        from console.ui.screens.groups import GroupsScreen

        self.app.push_screen(GroupsScreen(self.cluster_session))

    def mqadmin_lines(self) -> list[str]:
        ns = self.cluster_session.cluster.namesrv
        return mqadmin.overview(ns, [b.addr for b in self.cluster_session.brokers if b.addr])
