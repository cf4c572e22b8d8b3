"""Consumer groups, worst first: status over the refresh window, lag, time behind, trend.

A group whose read lacks parts shows its lag as a lower bound (`≥1980`), its trend as
"partial", and a status that is never OK; a group that could not be read at all is a row too
(ERR, lag unknown), never silently left out."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from textual.app import App, ComposeResult

from console.domain import mqadmin, readings, triage
from console.domain.offsets import GroupOffsets, QueueKey
from console.domain.triage import GroupSummary, Status, rank
from console.redact import redact_text
from console.services.infra.fanout import Cadence
from console.services.infra.workspace import Workspace
from console.services.read.cluster_session import ClusterSession
from console.ui import format as fmt
from console.ui.messages import (
    GroupsListed,
    GroupsProgressed,
    GroupsRefreshed,
    LagHistoryFailed,
)
from console.ui.screens.base import DataScreen
from console.ui.screens.groups_intake import RefreshIntake
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
    Column(
        "kind",
        "KIND",
        "push, pull, pop or lite (/grpc: through a proxy); bcast: offsets on the clients",
    ),
)


def kind_text(o: GroupOffsets) -> str:
    """How the group consumes, in one short word that fits 80 columns: `push`, `pull`, `pop`,
    `pop/grpc` (through a proxy); `bcast` for a BROADCASTING group (its offsets are on its
    clients, whatever it consumes with); `-` when nobody online said."""
    if o.client_local:
        return fmt.model(o.message_model)
    return fmt.consumption(o.consumption, o.consume_type)


def known_lag(o: GroupOffsets) -> int | None:
    """Total lag, or None when no queue of the group's topics has a committed offset (a lite
    group's is what its brokers count: it has no queue of its own)."""
    if o.lite is None and not any(q.committed is not None for q in o.topic_queues):
        return None
    return o.total_lag


def lag_cell(o: GroupOffsets) -> Cell:
    lag = known_lag(o)
    if lag is None:
        return cell(None, fmt.UNKNOWN)
    if readings.is_partial(o):
        # Brokers missing from the read: what it sums is a lower bound.
        return cell(lag, "≥" + fmt.compact(lag))
    partly = any(q.committed is None for q in o.topic_queues)
    # "+?" says some queues have nothing committed: their lag is not in the sum.
    return cell(lag, fmt.compact(lag) + ("+?" if partly else ""))


def behind_cell(s: GroupSummary, *, asking: bool = False) -> Cell:
    """`asking`: the time behind of lagging groups is being asked ("…" until it comes)."""
    ms = s.time_behind_ms
    if ms is None:
        o = s.offsets
        lagging = s.partial or bool(o.lite and o.lite.total) or any(q.lag for q in o.topic_queues)
        return cell(None, ("…" if asking else "?") if lagging else "-")
    return cell(ms, fmt.behind(ms, at_least=s.partial))


def trend_cell(s: GroupSummary) -> Cell:
    if s.partial:
        return cell(None, "partial")
    return cell(s.trend.per_minute if s.trend else None, fmt.trend(s.trend))


def status_cell(
    app: App[object], status: Status, complete: bool, lag: int | None, group: str
) -> Cell:
    # Sorted ascending, ST reads worst first (as the list comes).
    return Cell(status.value, status_text(app, status, complete), rank(status, lag, group))


def summary_row(app: App[object], s: GroupSummary, *, asking_behind: bool = False) -> Row:
    o = s.offsets
    v = s.verdict
    clients = len(o.clients)
    return Row(
        o.group,
        (
            status_cell(app, v.status, v.complete, o.total_lag, o.group),
            cell(o.group),
            lag_cell(o),
            behind_cell(s, asking=asking_behind),
            trend_cell(s),
            cell(
                clients,
                str(clients) if clients else toned(app, "OFFLINE", "text-error", bold=True),
            ),
            cell(o.retry_backlog, fmt.compact(o.retry_backlog)),
            cell(o.dlq_messages, fmt.compact(o.dlq_messages)),
            cell(o.consume_type, kind_text(o)),
        ),
    )


def pending_row(group: str) -> Row:
    """A group listed but not read yet."""
    return Row(group, (cell(None, "…"), cell(group), *(cell(None, "") for _ in COLUMNS[2:])))


def unread_row(app: App[object], group: str) -> Row:
    """A group listed whose read failed: in the list as ERR with nothing known, not left out."""
    unknown = (cell(None, "?") for _ in COLUMNS[2:-1])
    return Row(
        group,
        (
            status_cell(app, Status.ERR, True, None, group),
            cell(group),
            *unknown,
            cell(None, "-"),
        ),
    )


def unread_notes(errors: dict[str, str]) -> list[str]:
    """The reasons groups could not be read, each said once with the groups it hit."""
    by_reason: dict[str, list[str]] = {}
    for group, reason in errors.items():
        by_reason.setdefault(" ".join(reason.split()), []).append(group)
    lines = []
    for reason, groups in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
        named = ", ".join(groups[:3]) + (f" and {len(groups) - 3} more" if len(groups) > 3 else "")
        lines.append(f"{len(groups)} group(s) not read ({named}): {reason}")
    return lines


class GroupsScreen(DataScreen):
    crumb = "groups"

    def __init__(self, session: ClusterSession) -> None:
        super().__init__(session)
        self.summaries: tuple[GroupSummary, ...] = ()
        #: groups whose read failed at the last refresh, with why
        self.errors: dict[str, str] = {}
        #: the rows show lags whose time behind is still being asked
        self.asking_behind = False

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

        # The list's first refresh works on the reads as they come (groups_intake), its rows
        # made too: no lag is on screen until it is done. Later ones keep the rows on screen
        # and take the reads at the end, leaving this process to the keyboard meanwhile (taken
        # in parts at every refresh of 10,000 groups, a filter key's 95th percentile was 55-83
        # ms instead of 44-47).
        app = self.app
        first = not self.summaries
        intake = RefreshIntake(
            self.cluster_session,
            (lambda s: summary_row(app, s, asking_behind=True)) if first else None,
        )
        answer = await source.read_groups(
            names, Cadence(progressed), intake.take if first else None
        )
        wanted, errors = await asyncio.to_thread(self._record, names, intake, answer)
        windows = intake.windows
        latest = [w[-1].offsets for w in windows.values()]
        if self.console.config.snapshot_on_refresh:
            await asyncio.to_thread(self._snapshot, intake.read)
        if wanted and first:
            # The first refresh shows the lags before the time behind: that is one more request
            # per lagging group and broker (20,000 for 10,000 groups on two brokers), and the
            # lags, the statuses and the order do not depend on it. Later refreshes ask only
            # what moved, and keep the rows on screen until they are done.
            shown, rows = await asyncio.to_thread(self._ranked, intake.first.values(), errors)
            self.post_message(GroupsRefreshed(shown, errors, rows, asking_behind=True))
        # The lag history is written while the time behind is asked: for 10,000 groups it is
        # 10,000 appends, which the rows need not wait for.
        kept = asyncio.create_task(asyncio.to_thread(self._keep_history, latest))

        def behind_progressed(done: int, total: int) -> None:
            self.post_message(GroupsProgressed(done, total, "time behind"))

        behind = await source.read_delays(wanted, Cadence(behind_progressed))
        await kept
        judged, rows = await asyncio.to_thread(self._digest, windows, behind, errors)
        self.post_message(GroupsRefreshed(judged, errors, rows))

    def _record(
        self,
        names: list[str],
        intake: RefreshIntake,
        answer: dict[str, GroupOffsets | Exception],
    ) -> tuple[dict[str, dict[str, tuple[str, ...]]], dict[str, str]]:
        """The lagging groups' topics by broker (their time behind is asked next), and why each
        group not read was not."""
        intake.take(answer)  # what no part carried (a source that hands none: everything)
        self.cluster_session.refreshes.retain(names)
        errors = {n: redact_text(str(e)) for n, e in intake.unread(names).items()}
        return intake.lagging(), errors

    def _keep_history(self, latest: list[GroupOffsets]) -> None:
        problem = self.cluster_session.record_lag(latest, self.console.clock_ms())
        if problem:
            self.post_message(LagHistoryFailed(problem))

    def _snapshot(self, read: dict[str, GroupOffsets | Exception]) -> None:
        """Keep what this refresh read as a snapshot (no extra broker calls): the history that
        point-in-time restores and catch-up estimates are computed from."""
        # deferred: pyarrow (snapshots are Parquet files)
        from console.services.read.snapshots import Retention, SnapshotStore

        config = self.console.config
        offsets = [o for o in read.values() if isinstance(o, GroupOffsets)]
        store = SnapshotStore(Workspace(config.workspace_path))
        retention = Retention(keep=config.snapshot_retention, max_age_days=None)
        session = self.cluster_session
        store.record(session.cluster.name, offsets, dict(session.known_brokers), retention)

    def _digest(
        self,
        windows: dict[str, tuple[readings.Sample, ...]],
        behind: dict[str, dict[QueueKey, int] | Exception],
        errors: dict[str, str],
    ) -> tuple[tuple[GroupSummary, ...], tuple[Row, ...]]:
        summaries = triage.worst_first(
            triage.summarize(w, _value_or_empty(behind.get(n))) for n, w in windows.items()
        )
        return tuple(summaries), self._rows(summaries, errors)

    def _rows(
        self, summaries: list[GroupSummary], errors: dict[str, str], *, asking_behind: bool = False
    ) -> tuple[Row, ...]:
        app = self.app
        ranked = [
            (
                rank(s.verdict.status, s.offsets.total_lag, s.group),
                summary_row(app, s, asking_behind=asking_behind),
            )
            for s in summaries
        ]
        ranked += [(rank(Status.ERR, None, g), unread_row(app, g)) for g in errors]
        return tuple(row for _, row in sorted(ranked, key=lambda kv: kv[0]))

    def _ranked(
        self, made: Iterable[tuple[GroupSummary, Row]], errors: dict[str, str]
    ) -> tuple[tuple[GroupSummary, ...], tuple[Row, ...]]:
        """The first refresh's summaries worst first (`triage.worst_first`'s order), and their
        rows in that order with a row for each group that could not be read: sorted once for
        both."""
        app = self.app
        ranked: list[tuple[tuple[int, int, str], GroupSummary | None, Row]] = [
            (rank(s.verdict.status, s.offsets.total_lag, s.group), s, row) for s, row in made
        ]
        ranked += [(rank(Status.ERR, None, g), None, unread_row(app, g)) for g in errors]
        ranked.sort(key=lambda kv: kv[0])
        summaries = tuple(s for _, s, _ in ranked if s is not None)
        return summaries, tuple(row for _, _, row in ranked)

    def on_groups_listed(self, message: GroupsListed) -> None:
        self.query_one(DataView).set_rows([pending_row(g) for g in message.groups])

    def on_groups_progressed(self, message: GroupsProgressed) -> None:
        self.status.update_state(progress=(message.done, message.total), stage=message.stage)

    def on_groups_refreshed(self, message: GroupsRefreshed) -> None:
        self.summaries = message.summaries
        self.errors = dict(message.errors)
        self.asking_behind = message.asking_behind
        self.query_one(DataView).set_rows(message.rows)

        count = len(message.errors)
        partial = sum(1 for s in message.summaries if s.partial)
        notes = [f"{count} group(s) unreadable"] if count else []
        if partial:
            notes.append(f"{partial} partly read")
        self.status.update_state(note=", ".join(notes))
        self.show_notes(unread_notes(self.errors))

    def redraw(self) -> None:
        self.query_one(DataView).set_rows(
            self._rows(list(self.summaries), self.errors, asking_behind=self.asking_behind)
        )

    def on_row_table_row_selected(self, event: RowTable.RowSelected) -> None:
        # deferred: a screen loads when first opened, not with the console's first frame
        from console.ui.screens.group import GroupScreen

        self.app.push_screen(GroupScreen(self.cluster_session, event.key))

    def mqadmin_lines(self) -> list[str]:
        return mqadmin.groups(self.cluster_session.cluster.namesrv)


def _value_or_empty(
    answer: dict[QueueKey, int] | Exception | None,
) -> dict[QueueKey, int]:
    # Time behind is an extra; a broker that cannot say leaves it unknown ("?"), not the row.
    return answer if isinstance(answer, dict) else {}
