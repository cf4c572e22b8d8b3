"""Consumer groups, worst first: status over the refresh window, lag, time behind, trend."""

from __future__ import annotations

import asyncio

from textual.app import App, ComposeResult

from console.domain.offsets import GroupOffsets, QueueKey
from console.services import mqadmin_commands, triage
from console.services.fanout import Cadence
from console.services.session import ClusterSession
from console.services.triage import GroupSummary
from console.ui import format as fmt
from console.ui.messages import GroupsListed, GroupsProgressed, GroupsRefreshed
from console.ui.screens.base import DataScreen
from console.ui.tones import status_text, toned
from console.ui.widgets.dataview import DataView
from console.ui.widgets.rowtable import RowTable
from console.ui.widgets.tablemodel import Cell, Column, Row, cell

COLUMNS = (
    Column("status", "ST", "status"),
    Column("group", "GROUP", "group"),
    Column("lag", "LAG", "total lag", numeric=True),
    Column("behind", "BEHIND", "time behind (ms)", numeric=True),
    Column("trend", "TREND", "lag trend (messages per minute)", numeric=True),
    Column("clients", "CLIENTS", "clients online", numeric=True),
    Column("retry", "RETRY", "retry backlog", numeric=True),
    Column("dlq", "DLQ", "DLQ messages", numeric=True),
    Column("model", "MODEL", "message model"),
    Column("type", "TYPE", "consume type"),
)


def known_lag(o: GroupOffsets) -> int | None:
    """Total lag, or None when no queue of the group's topics has a committed offset."""
    if not any(q.committed is not None for q in o.topic_queues):
        return None
    return o.total_lag


def lag_cell(o: GroupOffsets) -> Cell:
    lag = known_lag(o)
    if lag is None:
        return cell(None, fmt.UNKNOWN)
    partly = any(q.committed is None for q in o.topic_queues)
    # "+?" says some queues have nothing committed: their lag is not in the sum.
    return cell(lag, fmt.compact(lag) + ("+?" if partly else ""))


def behind_cell(s: GroupSummary) -> Cell:
    ms = s.time_behind_ms
    if ms is None:
        lagging = any(q.lag for q in s.offsets.topic_queues)
        return cell(None, "?" if lagging else "-")
    return cell(ms, fmt.age(ms))


def summary_row(app: App[object], s: GroupSummary) -> Row:
    o = s.offsets
    v = s.verdict
    clients = len(o.clients)
    return Row(
        o.group,
        (
            Cell(
                v.status.value,
                status_text(app, v.status, v.complete),
                (v.status.severity, o.total_lag),
            ),
            cell(o.group),
            lag_cell(o),
            behind_cell(s),
            cell(s.trend.per_minute if s.trend else None, fmt.trend(s.trend)),
            cell(
                clients,
                str(clients) if clients else toned(app, "OFFLINE", "text-error", bold=True),
            ),
            cell(o.retry_backlog, fmt.compact(o.retry_backlog)),
            cell(o.dlq_messages, fmt.compact(o.dlq_messages)),
            cell(o.message_model, fmt.model(o.message_model)),
            cell(o.consume_type, fmt.consume_type(o.consume_type)),
        ),
    )


def pending_row(group: str) -> Row:
    """A group listed but not read yet."""
    return Row(group, (cell(None, "…"), cell(group), *(cell(None, "") for _ in COLUMNS[2:])))


class GroupsScreen(DataScreen):
    crumb = "groups"

    def __init__(self, session: ClusterSession) -> None:
        super().__init__(session)
        self.summaries: tuple[GroupSummary, ...] = ()

    def compose_body(self) -> ComposeResult:
        yield DataView("groups", COLUMNS, id="groups")

    def on_mount(self) -> None:
        self.query_one(DataView).focus_table()

    async def fetch(self) -> None:
        source = self.source
        names = await source.groups()
        if not self.summaries:
            self.post_message(GroupsListed(tuple(names)))

        def progressed(done: int, total: int) -> None:
            self.post_message(GroupsProgressed(done, total))  # thread-safe

        read = await source.read_groups(names, Cadence(progressed))
        # Working through 500 groups takes long enough to hold up a key press; on a thread it
        # only shares the interpreter with the UI, which gets it back every switch interval.
        windows, wanted = await asyncio.to_thread(self._record, names, read)
        if self.console.config.snapshot_on_refresh:
            await asyncio.to_thread(self._snapshot, read)
        behind = await source.read_delays(wanted)
        summaries, rows = await asyncio.to_thread(self._digest, windows, behind)
        errors = {n: str(e) for n, e in read.items() if isinstance(e, Exception)}
        self.post_message(GroupsRefreshed(summaries, errors, rows))

    def _record(
        self, names: list[str], read: dict[str, GroupOffsets | Exception]
    ) -> tuple[dict[str, tuple[triage.Sample, ...]], dict[str, dict[str, tuple[str, ...]]]]:
        history = self.cluster_session.history
        latest = {n: o for n, o in read.items() if isinstance(o, GroupOffsets)}
        windows = {n: history.add(o) for n, o in latest.items()}
        history.retain(names)
        wanted = {n: triage.lagging_topics(w[-1]) for n, w in windows.items() if w[-1].total_lag}
        return windows, wanted

    def _snapshot(self, read: dict[str, GroupOffsets | Exception]) -> None:
        """Keep what this refresh read as a snapshot (no extra broker calls): the history that
        point-in-time restores and catch-up estimates are computed from."""
        from console.services.snapshots import Retention, SnapshotStore
        from console.services.workspace import Workspace

        config = self.console.config
        offsets = [o for o in read.values() if isinstance(o, GroupOffsets)]
        store = SnapshotStore(Workspace(config.workspace_path))
        retention = Retention(keep=config.snapshot_retention, max_age_days=None)
        session = self.cluster_session
        store.record(session.cluster.name, offsets, dict(session.known_brokers), retention)

    def _digest(
        self,
        windows: dict[str, tuple[triage.Sample, ...]],
        behind: dict[str, dict[QueueKey, int] | Exception],
    ) -> tuple[tuple[GroupSummary, ...], tuple[Row, ...]]:
        summaries = triage.worst_first(
            triage.summarize(w, _value_or_empty(behind.get(n))) for n, w in windows.items()
        )
        return tuple(summaries), tuple(summary_row(self.app, s) for s in summaries)

    def on_groups_listed(self, message: GroupsListed) -> None:
        self.query_one(DataView).set_rows([pending_row(g) for g in message.groups])

    def on_groups_progressed(self, message: GroupsProgressed) -> None:
        self.status.update_state(progress=(message.done, message.total))

    def on_groups_refreshed(self, message: GroupsRefreshed) -> None:
        self.summaries = message.summaries
        self.query_one(DataView).set_rows(message.rows)
        if message.errors:
            first = next(iter(message.errors.items()))
            note = f"{len(message.errors)} group(s) unreadable, e.g. {first[0]}: {first[1]}"
        else:
            note = ""
        self.status.update_state(note=note)

    def redraw(self) -> None:
        rows = [summary_row(self.app, s) for s in self.summaries]
        self.query_one(DataView).set_rows(rows)

    def on_row_table_row_selected(self, event: RowTable.RowSelected) -> None:
        from console.ui.screens.group import GroupScreen

        self.app.push_screen(GroupScreen(self.cluster_session, event.key))

    def mqadmin_lines(self) -> list[str]:
        return mqadmin_commands.groups(self.cluster_session.cluster.namesrv)


def _value_or_empty(
    answer: dict[QueueKey, int] | Exception | None,
) -> dict[QueueKey, int]:
    # Time behind is an extra; a broker that cannot say leaves it unknown ("?"), not the row.
    return answer if isinstance(answer, dict) else {}
