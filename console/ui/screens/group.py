"""One consumer group: every queue with its offsets and client, retry and DLQ queues, clients,
the lag sparkline from the refresh history, and (`c`) the lag chart from the workspace's lag
history over the last hour or day (`t`).

A read that lacks parts says so under the headline (what is missing and why), its total lag is
a lower bound, and the sparkline starts again where what was read changed. A committed offset
below the queue's min (its messages already deleted) is flagged on the queue and the headline;
a time behind is never one counted from 1970. Queues read from a slave, their master down, are
named under the headline.

One piece (over 400 lines): one screen, its tables and the handlers of its own messages; what it
computes is console.domain's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TypeVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Label, Sparkline, Static

from console.domain import lag_trend, mqadmin, readings, triage
from console.domain.gaps import at_least
from console.domain.lite import LiteLag, LiteTopicLag
from console.domain.offsets import FROM_SLAVE, GroupOffsets, QueueKey, QueueOffsets
from console.domain.triage import GroupSummary
from console.redact import redact_text
from console.rocketmq.errors import RocketMQError
from console.rocketmq.models import QueueStats
from console.rocketmq.topics import DLQ_PREFIX, RETRY_PREFIX, is_dlq_topic, is_retry_topic
from console.services.read.cluster_session import ClusterSession
from console.services.read.lag_report import WINDOWS_MS, LagReport, lag_report
from console.services.walkthrough.guided_run import load_walkthroughs
from console.ui import format as fmt
from console.ui.messages import (
    AssignmentsRefreshed,
    GroupRefreshed,
    LagHistoryFailed,
    LagReported,
)
from console.ui.screens.base import DataScreen
from console.ui.tones import status_text, toned
from console.ui.widgets.dataview import DataView
from console.ui.widgets.lagchart import LagChart, window_name
from console.ui.widgets.tablemodel import Column, Row, cell

QUEUE_COLUMNS = (
    Column("topic", "TOPIC", "topic"),
    Column("broker", "BROKER", "broker"),
    Column("queue", "Q", "queue id", numeric=True),
    Column("min", "MIN", "min offset", numeric=True),
    Column("max", "MAX", "max offset", numeric=True),
    Column("committed", "COMMITTED", "committed offset", numeric=True),
    Column("inflight", "INFL", "in-flight", numeric=True),
    Column("lag", "LAG", "lag", numeric=True),
    Column("behind", "BEHIND", "time behind (ms)", numeric=True),
    Column("last", "LAST", "last consumed (ms ago)", numeric=True),
    Column("client", "CLIENT", "assigned client"),
)

CLIENT_COLUMNS = (
    Column("client", "CLIENT ID", "client id"),
    Column("addr", "ADDRESS", "address"),
    Column("language", "LANG", "language"),
    Column("version", "VERSION", "version"),
    Column("via", "VIA", "remoting (to the brokers) or gRPC through a proxy"),
)

NOT_CONSUMED = "-"
NBSP = "\u00a0"
#: After a committed offset below the queue's min offset.
BELOW_MIN = "<min"

T = TypeVar("T")


def short_topic(topic: str) -> str:
    """The group's own retry and DLQ topics shown by their prefix: the group is on screen."""
    if is_retry_topic(topic):
        return RETRY_PREFIX
    if is_dlq_topic(topic):
        return DLQ_PREFIX
    return topic


def queue_rows(
    offsets: GroupOffsets,
    dlq: tuple[QueueStats, ...],
    delays: Mapping[QueueKey, int],
    assignments: Mapping[QueueKey, tuple[str, ...]],
    now_ms: int,
) -> list[Row]:
    ordered = [*offsets.topic_queues, *offsets.retry_queues]
    at = offsets.taken_at_ms
    rows = [_queue_row(q, delays, assignments, now_ms, at) for q in ordered]
    # A BROADCASTING group's offsets as each of its clients on this host keeps them.
    for store in offsets.client_stores:
        held = {q.key: (store.client_id,) for q in store.queues}
        rows += [
            Row(f"{q.topic}|{q.broker}|{q.queue_id}|{store.client_id}", row.cells)
            for q in store.queues
            if (row := _queue_row(q, delays, held, now_ms, at))
        ]
    for s in dlq:
        q = s.queue
        rows.append(
            Row(
                f"{q.topic}|{q.broker_name}|{q.queue_id}",
                (
                    cell(q.topic, short_topic(q.topic)),
                    cell(q.broker_name),
                    cell(q.queue_id),
                    cell(s.min_offset),
                    cell(s.max_offset),
                    cell(None, NOT_CONSUMED),
                    cell(None, NOT_CONSUMED),
                    cell(None, NOT_CONSUMED),
                    cell(None, NOT_CONSUMED),
                    cell(None, NOT_CONSUMED),
                    cell(None, ""),
                ),
            )
        )
    return rows


def _queue_row(
    q: QueueOffsets,
    delays: Mapping[QueueKey, int],
    assignments: Mapping[QueueKey, tuple[str, ...]],
    now_ms: int,
    read_at_ms: int,
) -> Row:
    # A POP client holds a broker's topic as a whole (queue id -1).
    holders = assignments.get(q.key) or assignments.get((q.topic, q.broker, -1), ())
    client = holders[0] if len(holders) == 1 else f"all ({len(holders)})" if holders else "-"
    behind = lag_trend.queue_delay(q, delays, read_at_ms)
    last = now_ms - q.last_timestamp if q.last_timestamp > 0 else None
    committed = fmt.offset(q.committed) + (BELOW_MIN if readings.below_min(q) else "")
    return Row(
        f"{q.topic}|{q.broker}|{q.queue_id}",
        (
            cell(q.topic, short_topic(q.topic)),
            cell(q.broker),
            cell(q.queue_id),
            cell(q.min_offset, fmt.offset(q.min_offset)),
            cell(q.max_offset),
            cell(q.committed, committed),
            cell(q.in_flight, fmt.offset(q.in_flight) if q.committed is not None else "?"),
            cell(q.lag, fmt.offset(q.lag)),
            cell(behind, fmt.age(behind) if behind is not None else "?" if q.lag else "-"),
            cell(last, fmt.age(last)),
            cell(";".join(holders) or None, client),
        ),
    )


def client_rows(offsets: GroupOffsets) -> list[Row]:
    return [
        Row(
            c.client_id,
            (
                cell(c.client_id),
                cell(c.addr),
                cell(c.language),
                cell(c.version, fmt.version(c.version)),
                cell(c.proxy, via_text(offsets, c.client_id, c.proxy)),
            ),
        )
        for c in offsets.clients
    ]


def via_text(offsets: GroupOffsets, client_id: str, proxy: str | None) -> str:
    """`grpc PROXY`, `remoting`, and where a broker lists the client on several connections
    (the group then rebalances on the wrong count), how many and where."""
    if proxy:
        return f"grpc {proxy}"
    extra = [
        f"{g.connections} conns on {g.broker}" for g in offsets.ghosts if g.client_id == client_id
    ]
    return "remoting" + (f" ({', '.join(extra)})" if extra else "")


#: The most lines the clients table takes (its title and header included).
CLIENT_LINES = 7


class GroupScreen(DataScreen):
    BINDINGS = [
        Binding("R", "reset", "Reset offsets", id="reset"),
        Binding("w", "walkthrough", "Walkthroughs", id="walkthrough", show=False),
        # Not in the footer (at 80 columns it would push `?` off): the lag line names its key.
        Binding("c", "toggle_chart", "Lag chart", id="lag_chart", show=False),
        Binding("t", "lag_window", "Lag chart: hour/day", id="lag_window", show=False),
    ]

    def __init__(self, session: ClusterSession, group: str) -> None:
        super().__init__(session)
        self.group = group
        self.crumb = group
        self.summary: GroupSummary | None = None
        self.dlq: tuple[QueueStats, ...] = ()
        self.delays: Mapping[QueueKey, int] = {}
        self.assignments: Mapping[QueueKey, tuple[str, ...]] = {}
        #: The chart pane shows instead of the queue and client tables.
        self.chart_shown = False
        self.window_ms = WINDOWS_MS[0]

    def compose_body(self) -> ComposeResult:
        yield Static(id="summary")
        with Horizontal(id="spark-row"):
            yield Label("lag ", id="spark-label")
            yield Sparkline([], id="lag-spark")
            yield Label("", id="spark-range")
        yield DataView("queues", QUEUE_COLUMNS, id="queues")
        yield DataView("clients", CLIENT_COLUMNS, id="clients")
        yield LagChart(id="lag-chart")

    def on_mount(self) -> None:
        self.query_one("#queues", DataView).focus_table()
        self.query_one("#summary", Static).update(Text(f"{self.group}: reading…"))

    async def fetch(self) -> None:
        source = self.source
        offsets = self.cluster_session.account(await source.group_offsets(self.group))
        at_ms = self.console.clock_ms()
        window = self.cluster_session.refreshes.add(offsets)
        chart = self.window_ms if self.chart_shown else None
        await asyncio.to_thread(self._keep_lag, offsets, at_ms, chart)
        delays, dlq = await asyncio.gather(
            source.consume_delays(self.group, lag_trend.lagging_topics(window[-1])),
            source.dlq_queues(self.group),
            return_exceptions=True,
        )
        known_delays = _or(delays, {})
        summary = triage.summarize(window, known_delays)
        self.post_message(GroupRefreshed(summary, tuple(_or(dlq, [])), known_delays))
        if offsets.clients:
            try:
                held = await source.assignments(self.group, [c.client_id for c in offsets.clients])
            except RocketMQError:
                return  # a client that does not answer leaves the CLIENT column at "-"
            self.post_message(AssignmentsRefreshed(held))

    def _keep_lag(self, offsets: GroupOffsets, at_ms: int, window_ms: int | None) -> None:
        """Store the read in the lag history (off the UI thread) and, while the chart shows,
        read the chart's window back with the new point in it."""
        problem = self.cluster_session.record_lag([offsets], at_ms)
        if problem:
            self.post_message(LagHistoryFailed(problem))
        if window_ms is not None:
            self._post_report(at_ms, window_ms)

    def _post_report(self, now_ms: int, window_ms: int) -> None:
        report = self._report(now_ms, window_ms)
        if report is not None:
            self.post_message(LagReported(report))

    def _report(self, now_ms: int, window_ms: int) -> LagReport | None:
        history = self.cluster_session.lag
        if history is None:
            return None
        return lag_report(
            history,
            self.cluster_session.cluster.name,
            self.group,
            since_ms=now_ms - window_ms,
            until_ms=now_ms,
            journals=history.root,
        )

    @work(thread=True, exclusive=True, group="lag", exit_on_error=False)
    def load_lag(self) -> None:
        self._post_report(self.console.clock_ms(), self.window_ms)

    def on_lag_reported(self, message: LagReported) -> None:
        chart = self.query_one(LagChart)
        chart.show(message.report, problem=self.cluster_session.lag_problem)

    # ---- the chart -------------------------------------------------------------------------------

    def _key_hints(self) -> str:
        """` · c chart · w walkthroughs`: keys kept out of the footer (at 80 columns they would
        push `?` off it), as remapped."""
        names = {
            "toggle_chart": "tables" if self.chart_shown else "chart",
            "walkthrough": "walkthroughs",
        }
        hints = []
        for active in self.active_bindings.values():
            name = names.pop(active.binding.action, None)
            if name is not None:
                hints.append(f" · {self.app.get_key_display(active.binding)} {name}")
        return "".join(hints)

    def action_toggle_chart(self) -> None:
        self.chart_shown = not self.chart_shown
        self.set_class(self.chart_shown, "-chart")
        self.redraw()
        if not self.chart_shown:
            self.query_one("#queues", DataView).focus_table()
            return
        if self.cluster_session.lag is None:
            self.query_one(LagChart).show(
                None, problem="no lag history: the workspace is not on this machine"
            )
            return
        self.load_lag()

    def action_lag_window(self) -> None:
        i = WINDOWS_MS.index(self.window_ms) if self.window_ms in WINDOWS_MS else -1
        self.window_ms = WINDOWS_MS[(i + 1) % len(WINDOWS_MS)]
        self.notify(f"lag chart: {window_name(self.window_ms)}", timeout=2)
        if self.chart_shown and self.cluster_session.lag is not None:
            self.load_lag()

    def on_group_refreshed(self, message: GroupRefreshed) -> None:
        self.summary = message.summary
        self.dlq = message.dlq
        self.delays = message.delays
        if not message.summary.offsets.clients:
            self.assignments = {}
        o = message.summary.offsets
        # A broker read from its slave says nothing of its master.
        answered = {q.broker for q in o.queues} - set(o.from_slave)
        if self.cluster_session.observe_answers(answered):
            self.show_brokers()
        self.redraw()

    def on_assignments_refreshed(self, message: AssignmentsRefreshed) -> None:
        self.assignments = message.assignments
        self.redraw()

    def brokers_changed(self) -> None:
        self.redraw()

    def redraw(self) -> None:
        s = self.summary
        if s is None:
            return
        o = s.offsets
        now = self.console.clock_ms()
        self.query_one("#summary", Static).update(self._summary_text(s))
        spark = self.query_one("#lag-spark", Sparkline)
        spark.data = [float(v) for v in s.lag_history]
        self.query_one("#spark-range", Label).update(Text(spark_range(s) + self._key_hints()))
        rows = queue_rows(o, self.dlq, self.delays, self.assignments, now)
        self.query_one("#queues", DataView).set_rows(rows)
        clients = self.query_one("#clients", DataView)
        clients.set_rows(client_rows(o))
        # As tall as its rows (its title and header, at least one line), up to CLIENT_LINES:
        # the queues take the rest, so an offline group's queues are not cut for empty space.
        clients.styles.height = min(CLIENT_LINES, 2 + max(1, len(o.clients)))

    def _summary_text(self, s: GroupSummary) -> Text:
        o = s.offsets
        app = self.app
        online = (
            Text(f"{len(o.clients)} online")
            if o.clients
            else toned(app, "OFFLINE", "text-error", bold=True)
        )
        behind = fmt.behind(s.time_behind_ms, at_least=s.partial)
        lag = f"lag {at_least(o.total_lag, s.partial)}"
        if o.client_local:
            lag = client_lag(o)
        unknown = f" (+{o.unknown_queues} unknown)" if o.unknown_queues else ""
        trend = "partial" if s.partial else fmt.trend(s.trend)
        parts: list[str | Text] = []
        if o.message_model or o.consume_type or o.consumption.kinds:
            kind = fmt.consumption(o.consumption, o.consume_type)
            parts.append(f"{fmt.model(o.message_model)} {kind}")
        parts += [
            online,
            f"{lag}{unknown}",
            f"behind {behind}",
            f"trend {trend}",
            f"retry {o.retry_backlog}",
            f"DLQ {o.dlq_messages}",
        ]
        # Non-breaking spaces inside each phrase: a narrow screen wraps between phrases only.
        first = Text(" · ").join(
            Text(p.replace(" ", NBSP)) if isinstance(p, str) else p for p in parts
        )
        second = Text.assemble(
            status_text(app, s.verdict.status, s.verdict.complete), " ", s.verdict.reason
        )
        lines = [first, second]
        if o.lite is not None:
            lines += [Text(line) for line in lite_lines(o.lite, s.partial, o.taken_at_ms)]
        lines += [toned(app, line, "text-error") for line in missing_lines(o)]
        if o.consumption.pop and o.pop_in_flight:
            lines.append(Text(pop_line(o)))
        lines += [toned(app, g.line(), "text-warning") for g in o.ghosts]
        if o.from_slave:
            lines.append(toned(app, f"{FROM_SLAVE}: {', '.join(o.from_slave)}", "text-warning"))
            now = self.console.clock_ms()
            lines += [toned(app, s.line(now), "text-warning") for s in o.slave_lag]
        deleted = [q for q in o.queues if readings.below_min(q)]
        if deleted:
            lines.append(toned(app, below_min_line(deleted), "text-warning"))
        return Text("\n").join(lines)

    # ---- reset ---------------------------------------------------------------------------------

    def action_reset(self) -> None:
        # deferred: a screen loads when first opened, not with the console's first frame
        from console.ui.screens.preview import PreviewScreen

        self.app.push_screen(PreviewScreen(self.cluster_session, self.group))

    def action_walkthrough(self, name: str | None = None) -> None:
        # deferred: a screen loads when first opened, not with the console's first frame
        from console.ui.screens.walkthrough import WalkthroughScreen

        self.app.push_screen(WalkthroughScreen(self.cluster_session, self.group, name))

    def walkthrough_titles(self) -> list[tuple[str, str]]:
        """(name, title) of every walkthrough, for the command palette."""

        return [(w.name, w.title) for w in load_walkthroughs().walkthroughs]

    def mqadmin_lines(self) -> list[str]:
        return mqadmin.group(self.cluster_session.cluster.namesrv, self.group)


def client_lag(o: GroupOffsets) -> str:
    """A BROADCASTING group's lag: its clients' (read from their files on this host), never
    the brokers' zero."""
    lags = [s.total_lag for s in o.client_stores]
    if not lags:
        return "lag client-local (no offsets.json here)"
    if None in lags:
        return f"lag unknown ({len(lags)} client file(s), some unreadable)"
    return f"lag {sum(x for x in lags if x is not None)} ({len(lags)} client file(s) here)"


#: Lite topics the group screen names, by count and by time.
LITE_SHOWN = 5


def lite_lines(lite: LiteLag, partial: bool, now_ms: int) -> list[str]:
    """A lite group's lag as its brokers count it, and its lite topics most behind: it has no
    queue of its own to list (console.domain.lite)."""
    counted = ", ".join(f"{b} {n}" for b, n in lite.counted) or "no broker"
    lines = [
        f"lite group, parent topic {lite.parent_topic}: lag {at_least(lite.total, partial)} "
        f"as its brokers count it ({counted})"
    ]

    def named(lag: LiteTopicLag) -> str:
        since = lag.oldest_unconsumed_ms
        age = f", {fmt.since(now_ms, since)} behind" if since else ""
        return f"{lag.lite_topic} {lag.lag} ({lag.broker}{age})"

    for title, lags in (("by count", lite.by_count), ("by time", lite.by_time)):
        if lags:
            lines.append(f"most behind {title}: " + ", ".join(map(named, lags[:LITE_SHOWN])))
    return lines


def pop_line(o: GroupOffsets) -> str:
    """A POP group's popped-but-unacked messages: in its lag, not in any queue's row."""
    where = ", ".join(f"{p.broker} {p.messages}" for p in o.pop_in_flight)
    return (
        f"POP: {o.popped_unacked} popped and not acked ({where}; {o.pop_in_flight[0].source}), "
        "counted in the lag"
    )


def missing_lines(o: GroupOffsets) -> list[str]:
    """What the read lacks and why: each gap the reader named, and each broker that did not
    answer (its queues are not shown, and the total is a lower bound)."""
    lines = [redact_text(g.line()) for g in o.gaps]
    explained = {g.name for g in o.gaps}
    silent = [b for b in o.unreachable_brokers if b not in explained]
    if silent:
        lines.append(
            f"no answer from {', '.join(silent)}: queues not shown, lag is at least {o.total_lag}"
        )
    return lines


def below_min_line(queues: list[QueueOffsets]) -> str:
    first = queues[0]
    where = f"{first.topic}@{first.broker}:{first.queue_id}"
    more = f" and {len(queues) - 1} more" if len(queues) > 1 else ""
    return (
        f"{where}{more}: committed below min ({first.committed} < {first.min_offset}), "
        "those messages are already deleted"
    )


def spark_range(s: GroupSummary) -> str:
    """What the sparkline covers: the refreshes since what was read last changed."""
    history = s.lag_history
    low, high = min(history), max(history)
    bound = "≥" if s.partial else ""
    n = len(history)
    over = f"over {n} refreshes" if n != 1 else "over 1 refresh"
    text = f" {bound}{fmt.compact(low)}..{bound}{fmt.compact(high)} {over}"
    if s.partial:
        return text + " (partial read)"
    if s.restarted:
        return text + " (since the read changed)"
    return text


def _or(answer: T | BaseException, fallback: T) -> T:
    if isinstance(answer, BaseException):
        if not isinstance(answer, RocketMQError):
            raise answer
        return fallback  # time behind and the DLQ are extras: the queues still show
    return answer
