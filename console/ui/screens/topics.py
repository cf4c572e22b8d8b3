"""Topics, and one topic's queues (min/max per broker) with the groups seen consuming it."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from console.domain import mqadmin
from console.services.read.cluster_session import ClusterSession
from console.ui import format as fmt
from console.ui.messages import TopicRefreshed, TopicsListed
from console.ui.screens.base import DataScreen
from console.ui.widgets.dataview import DataView
from console.ui.widgets.rowtable import RowTable
from console.ui.widgets.tablemodel import Column, Row, cell

TOPIC_COLUMNS = (
    Column("topic", "TOPIC", "topic"),
    Column("groups", "GROUPS SEEN", "groups seen consuming it"),
)

QUEUE_COLUMNS = (
    Column("broker", "BROKER", "broker"),
    Column("queue", "Q", "queue id", numeric=True),
    Column("min", "MIN", "min offset", numeric=True),
    Column("max", "MAX", "max offset", numeric=True),
    Column("msgs", "MSGS", "messages (max - min)", numeric=True),
    Column("written", "WRITTEN", "last write (ms ago)", numeric=True),
)


def consumers_seen(session: ClusterSession, topic: str) -> list[str]:
    """Groups whose latest refresh (in this session) had offsets on the topic."""
    out = []
    for group in session.refreshes.groups():
        window = session.refreshes.window(group)
        if window and any(q.topic == topic for q in window[-1].offsets.queues):
            out.append(group)
    return sorted(out)


class TopicsScreen(DataScreen):
    crumb = "topics"

    def compose_body(self) -> ComposeResult:
        yield DataView("topics", TOPIC_COLUMNS, id="topics")

    def on_mount(self) -> None:
        self.query_one(DataView).focus_table()

    async def fetch(self) -> None:
        self.post_message(TopicsListed(tuple(await self.source.topics())))

    def on_topics_listed(self, message: TopicsListed) -> None:
        rows = [
            Row(t, (cell(t), cell(", ".join(consumers_seen(self.cluster_session, t)))))
            for t in message.topics
        ]
        self.query_one(DataView).set_rows(rows)

    def on_row_table_row_selected(self, event: RowTable.RowSelected) -> None:
        self.app.push_screen(TopicScreen(self.cluster_session, event.key))

    def mqadmin_lines(self) -> list[str]:
        c = self.cluster_session.cluster
        return mqadmin.topics(c.namesrv, c.rocketmq_cluster)


class TopicScreen(DataScreen):
    def __init__(self, session: ClusterSession, topic: str) -> None:
        super().__init__(session)
        self.topic = topic
        self.crumb = topic

    def compose_body(self) -> ComposeResult:
        yield Static(id="consumers")
        yield DataView("queues", QUEUE_COLUMNS, id="queues")

    def on_mount(self) -> None:
        self.query_one(DataView).focus_table()

    async def fetch(self) -> None:
        self.post_message(TopicRefreshed(tuple(await self.source.topic_queues(self.topic))))

    def on_topic_refreshed(self, message: TopicRefreshed) -> None:
        now = self.console.clock_ms()
        rows = []
        for s in message.queues:
            written = now - s.last_update_timestamp if s.last_update_timestamp > 0 else None
            rows.append(
                Row(
                    f"{s.queue.broker_name}:{s.queue.queue_id}",
                    (
                        cell(s.queue.broker_name),
                        cell(s.queue.queue_id),
                        cell(s.min_offset),
                        cell(s.max_offset),
                        cell(s.max_offset - s.min_offset),
                        cell(written, fmt.age(written)),
                    ),
                )
            )
        self.query_one(DataView).set_rows(rows)
        seen = consumers_seen(self.cluster_session, self.topic)
        text = f"consumed by: {', '.join(seen)}" if seen else "consumed by: none seen yet (see g)"
        self.query_one("#consumers", Static).update(Text(text))

    def mqadmin_lines(self) -> list[str]:
        return mqadmin.topic(self.cluster_session.cluster.namesrv, self.topic)
