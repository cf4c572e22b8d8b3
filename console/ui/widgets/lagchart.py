"""The group's lag over the last hour or day, from the workspace's lag history: a plot (Plotext,
through textual-plotext) with the applies and undos of the group marked, and above it what the
window holds and the Burrow evaluation of it with the rule that fired.

What is drawn, so that a chart never tells more than was read:
- complete points as a line, broken where no point was stored for a while (a console that was
  not running draws no line across the time it was away);
- partial points (a broker did not answer) as `≥` markers at their lower bound, never joined
  to the line: their total is not comparable with a complete one;
- points of which nothing could be read are not drawn at all (never as 0); the header counts
  them.

Colours are the theme's variables, read when the chart is drawn (and again when the theme
changes): the line `primary`, partial points `warning`, applies `success`, undos `accent`.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from rich.text import Text
from textual.app import ComposeResult
from textual.color import Color, ColorParseError
from textual.containers import Vertical
from textual.widgets import Static
from textual_plotext import PlotextPlot

from console.domain.lag import LagPoint, Mark
from console.domain.triage import span_text
from console.services.read.lag_report import LagReport
from console.ui import format as fmt
from console.ui.tones import status_text, toned

#: Points per chart column at most: more are merged (the highest lag of each kind kept).
POINTS_PER_COLUMN = 2
PARTIAL_MARKER = "≥"
#: Marks named in the header line, the newest (all of them are drawn).
MARKS_NAMED = 3
MINUTE_MS = 60_000

Xy = tuple[float, float]


@dataclass(frozen=True, slots=True)
class ChartData:
    """What the plot draws, x in minutes before the window's end (negative), y in messages."""

    #: Runs of complete points, each drawn as one line.
    lines: tuple[tuple[Xy, ...], ...]
    #: Partial points at their lower bound.
    partial: tuple[Xy, ...]
    #: Points of which nothing could be read (not drawn; counted).
    unknown: int
    #: Applies and undos: (x, kind).
    marks: tuple[tuple[float, str], ...]
    #: The highest lag drawn (0 when none).
    top: int
    since_ms: int
    until_ms: int


def chart_data(report: LagReport, columns: int) -> ChartData:
    """The report shaped for a plot `columns` wide: lines of complete points, broken where a
    partial or unknown point was stored or none was for a while; points merged per bucket of
    time (the highest lag of the bucket kept, so a spike stays visible)."""
    since, until = report.since_ms, report.until_ms
    buckets = max(1, columns * POINTS_PER_COLUMN)
    width = max(1.0, (until - since) / buckets)
    gap = _gap_ms(report.series.points, width)

    def bucket(ms: int) -> int:
        return min(buckets - 1, max(0, int((ms - since) / width)))

    def x(ms: int) -> float:
        return (ms - until) / MINUTE_MS

    runs: list[dict[int, LagPoint]] = []
    partial: dict[int, LagPoint] = {}
    unknown = 0
    broken, last = True, None
    for p in report.series.points:
        if p.total_lag is None or p.partial:
            broken = True
            if p.total_lag is None:
                unknown += 1
            else:
                _keep_highest(partial, bucket(p.at_ms), p)
            continue
        if last is not None and p.at_ms - last > gap:
            broken = True
        if broken:
            runs.append({})
            broken = False
        _keep_highest(runs[-1], bucket(p.at_ms), p)
        last = p.at_ms
    drawn = [p.total_lag or 0 for run in runs for p in run.values()]
    drawn += [p.total_lag or 0 for p in partial.values()]
    return ChartData(
        lines=tuple(
            tuple((x(p.at_ms), float(p.total_lag or 0)) for _, p in sorted(run.items()))
            for run in runs
        ),
        partial=tuple((x(p.at_ms), float(p.total_lag or 0)) for _, p in sorted(partial.items())),
        unknown=unknown,
        marks=tuple((x(m.at_ms), m.kind) for m in report.marks),
        top=max(drawn, default=0),
        since_ms=since,
        until_ms=until,
    )


def _keep_highest(held: dict[int, LagPoint], b: int, p: LagPoint) -> None:
    now = held.get(b)
    if now is None or (now.total_lag or 0) <= (p.total_lag or 0):
        held[b] = p


def _gap_ms(points: Sequence[LagPoint], bucket_ms: float) -> float:
    """How far apart two points may be and still be joined: three usual spacings, at least two
    buckets (the chart cannot show finer)."""
    spacing = [b.at_ms - a.at_ms for a, b in zip(points, points[1:], strict=False)]
    usual = statistics.median(spacing) if spacing else 0
    return max(3 * usual, 2 * bucket_ms)


def local_time(ms: int, *, day: bool = False) -> str:
    """A time on this machine's clock (the chart's ticks, the header), with its weekday."""
    return datetime.fromtimestamp(ms / 1000).astimezone().strftime("%a %H:%M" if day else "%H:%M")


def zone(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000).astimezone().strftime("%Z")


def x_ticks(since_ms: int, until_ms: int, columns: int) -> tuple[list[float], list[str]]:
    """Ticks on round local times, as many as fit one label per 10 columns."""
    span = until_ms - since_ms
    steps = [m * MINUTE_MS for m in (1, 5, 10, 15, 30, 60, 120, 180, 240, 360, 720)]
    room = max(2, columns // 10)
    step = next((s for s in steps if span / s <= room), steps[-1])
    offset = datetime.fromtimestamp(since_ms / 1000).astimezone().utcoffset()
    shift = int(offset.total_seconds() * 1000) if offset else 0
    first = ((since_ms + shift) // step + 1) * step - shift
    ticks = range(first, until_ms + 1, step)
    return [(t - until_ms) / MINUTE_MS for t in ticks], [local_time(t) for t in ticks]


def y_ticks(top: int) -> tuple[list[float], list[str]]:
    """0 and up to three round steps above it, labelled compactly (12.3k)."""
    if top <= 0:
        return [0.0], ["0"]
    raw = top / 3
    magnitude = 10 ** (len(str(int(raw))) - 1)
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    values = [i * step for i in range(0, 4) if i * step <= top * 1.05] or [0]
    return [float(v) for v in values], [fmt.compact(v) for v in values]


def window_name(ms: int) -> str:
    return "last hour" if ms <= 3_600_000 else "last day" if ms <= 86_400_000 else span_text(ms)


class LagChart(Vertical):
    """The chart pane of the group screen."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.report: LagReport | None = None
        self.data: ChartData | None = None
        self.problem: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="lag-head")
        yield PlotextPlot(id="lag-plot")

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.redraw())

    def show(self, report: LagReport | None, *, problem: str | None = None) -> None:
        self.report = report
        self.problem = problem
        self.redraw()

    def on_resize(self) -> None:
        self.redraw()

    def redraw(self) -> None:
        head = self.query_one("#lag-head", Static)
        plot = self.query_one("#lag-plot", PlotextPlot)
        report = self.report
        if report is None:
            head.update(Text(self.problem or "lag history: reading…"))
            return
        columns = max(10, plot.size.width - 8)
        self.data = data = chart_data(report, columns)
        head.update(self._head(report, data))
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        colour = self.colours()
        for run in data.lines:
            xs, ys = [p[0] for p in run], [p[1] for p in run]
            if len(run) == 1:
                plt.scatter(xs, ys, marker="dot", color=colour["primary"])
            else:
                plt.plot(xs, ys, marker="braille", color=colour["primary"])
        if data.partial:
            plt.scatter(
                [p[0] for p in data.partial],
                [p[1] for p in data.partial],
                marker=PARTIAL_MARKER,
                color=colour["warning"],
            )
        top = max(1, data.top)
        ceiling = top * 1.15
        left = (data.since_ms - data.until_ms) / MINUTE_MS
        taken: list[tuple[float, float]] = []  # columns the labels drawn so far cover
        for at, kind in reversed(data.marks):  # the newest labelled first
            tone = colour["accent" if kind == "undo" else "success"]
            plt.vline(at, tone)
            # A label centred on a mark near an edge would be cut by the frame; one that would
            # cover a newer one's is left out (the marks line above names the marks).
            side = at / left if left else 0.5
            align: Literal["left", "center", "right"] = (
                "right" if side < 0.25 else "left" if side > 0.75 else "center"
            )
            col = (1 - side) * columns
            start = {"right": col - len(kind), "left": col}.get(align, col - len(kind) / 2)
            span = (start - 1, start + len(kind) + 1)
            if any(a < span[1] and span[0] < b for a, b in taken):
                continue
            taken.append(span)
            plt.text(kind, at, ceiling, color=tone, alignment=align)
        plt.xlim(left, 0)
        plt.ylim(0, ceiling)
        plt.xticks(*x_ticks(data.since_ms, data.until_ms, columns))
        plt.yticks(*y_ticks(data.top))
        plot.refresh()

    def colours(self) -> dict[str, tuple[int, int, int]]:
        out = {}
        variables = self.app.theme_variables
        for name in ("primary", "warning", "success", "accent"):
            try:
                out[name] = Color.parse(variables.get(name, "")).rgb
            except ColorParseError:
                out[name] = Color.parse(variables.get("foreground", "white")).rgb
        return out

    def _head(self, report: LagReport, data: ChartData) -> Text:
        app = self.app
        points = report.series.points
        partial = sum(1 for p in points if p.partial and p.total_lag is not None)
        odd = []
        if partial:
            odd.append(f"{partial} partial {PARTIAL_MARKER}")
        if data.unknown:
            odd.append(f"{data.unknown} unknown")
        if report.series.skipped:
            odd.append(f"{report.series.skipped} unreadable line(s) skipped")
        counts = f"{len(points)} samples" + (f" ({', '.join(odd)})" if odd else "")
        since, until = report.since_ms, report.until_ms
        day = until - since > 12 * 60 * MINUTE_MS
        span = f"since {local_time(since, day=day)} {zone(until)}"
        first = f"{window_name(until - since)} · {span} · {counts}"
        newest = report.series.newest
        if newest is not None:
            lag = (
                fmt.UNKNOWN
                if newest.total_lag is None
                else ("≥" if newest.partial else "") + fmt.compact(newest.total_lag)
            )
            first += f" · now {lag}"
        lines = [Text(first)]
        v = report.verdict
        verdict = Text.assemble(status_text(app, v.status, v.complete), " ", v.reason)
        if v.rule:
            verdict.append(f" — rule: {v.rule}", style="dim")
        lines.append(verdict)
        if report.marks:
            shown = [_mark_text(m) for m in report.marks[-MARKS_NAMED:]]
            more = len(report.marks) - len(shown)
            text = "marks: " + (f"{more} more, " if more else "") + ", ".join(shown)
            lines.append(toned(app, text, "text-success"))
        if self.problem:
            lines.append(toned(app, self.problem, "text-error"))
        return Text("\n").join(lines)


def _mark_text(m: Mark) -> str:
    """`apply 21:58 finished`; the queues verified only when not all were."""
    done = "" if m.verified == m.queues else f" {m.verified}/{m.queues} verified"
    return f"{m.kind} {local_time(m.at_ms)} {m.status}{done}"
