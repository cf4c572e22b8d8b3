"""A plan as the operator reads it: a summary (totals, reset path, catch-up) over the per-queue
diff, current -> target with the messages and time each queue replays or skips."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from console.domain.boundary_messages import Boundary, BoundaryRequest, boundary_requests
from console.domain.gaps import Gap
from console.domain.plan import Impact, PlanHeader, PlanRow, PlanWarning
from console.domain.reset_paths import ResetPathKind
from console.domain.spec import describe
from console.ui import format as fmt
from console.ui.tones import toned
from console.ui.widgets.boundary import READING, BoundaryPane
from console.ui.widgets.dataview import DataView
from console.ui.widgets.rowtable import RowTable
from console.ui.widgets.tablemodel import Column, Row, cell

DIFF_COLUMNS = (
    Column("topic", "TOPIC", "topic"),
    Column("broker", "BROKER", "broker"),
    Column("queue", "Q", "queue id", numeric=True),
    Column("min", "MIN", "min offset", numeric=True),
    Column("max", "MAX", "max offset", numeric=True),
    Column("current", "CURRENT", "current offset", numeric=True),
    Column("target", "TARGET", "target offset", numeric=True),
    # The operator's sign: + messages re-consumed, - messages skipped (= current - target; the
    # plan file's delta is target - current).
    Column("move", "±MSGS", "messages re-consumed (+) or skipped (-)", numeric=True),
    Column("span", "SPAN", "time replayed (+) or skipped (-), ms", numeric=True),
    Column("warnings", "WARNINGS", "warnings"),
)
_SEVERE = {PlanWarning.BELOW_MIN, PlanWarning.BROADCASTING, PlanWarning.NO_SOURCE}


class PlanDiff(Vertical):
    """The summary line(s) (`#plan-summary`) over the diff table (`#diff`), and under it the
    messages at the boundary of the queue under the cursor (`#boundary`)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.only_warnings = False
        self._rows: tuple[PlanRow, ...] = ()
        self._by_key: dict[str, PlanRow] = {}
        #: Row key -> its boundary, READING, or why it could not be read.
        self.boundaries: dict[str, Boundary | str] = {}
        #: Boundaries are read row by row on request (`b`), not all at once.
        self.on_demand = False

    def compose(self) -> ComposeResult:
        yield Static(id="plan-summary")
        yield DataView("diff", DIFF_COLUMNS, id="diff")
        yield BoundaryPane(id="boundary")

    def on_mount(self) -> None:
        self._show_boundary()

    @property
    def table(self) -> DataView:
        return self.query_one("#diff", DataView)

    def focus_table(self) -> None:
        self.table.focus_table()

    def note(self, text: Text) -> None:
        """A line in place of the summary: a prompt, a reason there is no plan."""
        self.query_one("#plan-summary", Static).update(text)

    def show_summary(
        self,
        header: PlanHeader,
        group: str,
        impact: Sequence[Impact],
        missing: Sequence[Gap] = (),
    ) -> None:
        self.note(summary_text(self.app, header, group, impact, missing))

    def show_rows(self, rows: tuple[PlanRow, ...]) -> None:
        if rows != self._rows:
            self.boundaries = {}
        self._rows = rows
        self._by_key = {row_id(r): r for r in rows}
        self._fill()
        self._show_boundary()

    # ---- the boundary pane ---------------------------------------------------------------------

    @property
    def current_row(self) -> PlanRow | None:
        """The plan row under the cursor."""
        key = self.table.current_key
        return self._by_key.get(key) if key is not None else None

    def boundary_requests(self, rows: Sequence[PlanRow]) -> dict[str, BoundaryRequest]:
        """Row key -> the request for its boundary, for the rows the plan changes."""
        return {row_id(r): q for r in rows for q in boundary_requests([r])}

    def read_on_demand(self, on_demand: bool) -> None:
        """Whether boundaries are read row by row on `b` (a large plan), or all at once."""
        self.on_demand = on_demand
        self._show_boundary()

    def boundaries_reading(self, keys: Sequence[str]) -> None:
        for key in keys:
            self.boundaries[key] = READING
        self._show_boundary()

    def show_boundaries(self, keys: Sequence[str], read: Sequence[Boundary]) -> None:
        self.boundaries.update(zip(keys, read, strict=True))
        self._show_boundary()

    def boundaries_failed(self, why: str) -> None:
        """The reads still under way failed (the network process, not a broker)."""
        for key, state in self.boundaries.items():
            if state == READING:
                self.boundaries[key] = why
        self._show_boundary()

    def _show_boundary(self) -> None:
        row = self.current_row
        state = self.boundaries.get(row_id(row)) if row is not None else None
        self.query_one(BoundaryPane).show(row, state, on_demand=self.on_demand)

    @on(RowTable.CursorMoved)
    def _cursor_moved(self, event: RowTable.CursorMoved) -> None:
        self._show_boundary()

    def toggle_warnings(self) -> None:
        self.only_warnings = not self.only_warnings
        self._fill()

    def _fill(self) -> None:
        rows = [r for r in self._rows if r.warnings] if self.only_warnings else self._rows
        view = self.table
        view.title = "diff (warnings only)" if self.only_warnings else "diff"
        view.set_rows([diff_row(self.app, r) for r in rows])


def row_id(r: PlanRow) -> str:
    return f"{r.group}|{r.topic}|{r.broker}|{r.queue_id}"


def diff_row(app: Any, r: PlanRow) -> Row:
    warnings = Text(", ".join(r.warnings))
    if r.warnings:
        severe = any(w in _SEVERE for w in r.warnings)
        warnings = toned(app, warnings.plain, "text-error" if severe else "text-warning")
    move = None if r.delta is None else -r.delta
    moved = (
        toned(app, f"{move:+d}", "text-accent" if move > 0 else "text-warning")
        if move
        else Text("?" if move is None else "0")
    )
    target = fmt.offset(r.target) if r.target is not None else "-"
    if r.clamp:
        target += "*"  # clamped: the reason is in the warnings
    return Row(
        row_id(r),
        (
            cell(r.topic),
            cell(r.broker),
            cell(r.queue_id),
            cell(r.min_offset),
            cell(r.max_offset),
            cell(r.current, fmt.offset(r.current)),
            cell(r.target, target),
            cell(move, moved),
            cell(r.span_ms, span(r.span_ms)),
            cell(";".join(r.warnings) or None, warnings),
        ),
    )


def summary_text(
    app: Any,
    header: PlanHeader,
    group: str,
    impact: Sequence[Impact],
    missing: Sequence[Gap] = (),
) -> Text:
    lines = [Text(f"{describe(header.spec.strategy)} · snapshot {header.snapshot.snapshot_id}")]
    if missing:
        # A partial snapshot: the plan lacks what it lacks, as `rmq-console plan` warns.
        lacks = "; ".join(g.line() for g in missing)
        lines.append(toned(app, f"PARTIAL snapshot: the plan lacks {lacks}", "text-warning"))
    for t in header.group_totals():
        lines.append(
            Text(
                f"{t.group}: {t.changed}/{t.queues} queues change · re-consume {t.re_consume} · "
                f"skip {t.skip} · lag {t.lag_before} → {t.lag_after}"
                + (f" · {t.warned} warned" if t.warned else "")
            )
        )
    path = header.reset_paths.get(group)
    if path is not None:
        tone = "text-warning" if path.blocker or path.kind is ResetPathKind.NONE else "text-success"
        line = toned(app, f"reset path: {path.kind}", tone, bold=True)
        line.append(f" — {path.reason}")
        if path.blocker:
            line.append_text(toned(app, f" · first: {path.blocker}", "text-warning"))
        lines.append(line)
    mine = next((i for i in impact if i.group == group and i.topic is None), None)
    if mine is not None and mine.catch_up_s is not None and mine.rate is not None:
        lines.append(
            Text(
                f"catch-up ≈ {fmt.age(int(mine.catch_up_s * 1000))} at {mine.rate:.1f} msg/s "
                f"({mine.rate_source})"
            )
        )
    return Text("\n").join(lines)


def span(ms: int | None) -> str:
    """Time replayed (+) or skipped (-); "?" when a store time is unknown."""
    if ms is None:
        return "?"
    if ms == 0:
        return "0"
    sign = "+" if ms > 0 else "-"
    return sign + fmt.age(abs(ms))
