"""Reset preview: choose scope and strategy, watch the plan job, read the diff.

Opened from the group screen (`R`, registry name "reset") with the group as shown there. The
plan runs in a thread worker on the warm Spark session (console.services.spark_runner), so the
console keeps refreshing and answering keys; progress arrives as `PlanProgressed` snapshots and
the result as `PlanComputed`. Nothing here writes to the cluster.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button, Checkbox, Input, Label, ProgressBar, Select, Static

from console.domain.plan import Impact, PlanHeader, PlanRow, PlanWarning, ResetPathKind
from console.domain.spec import (
    ResetSpec,
    SpecError,
    StrategyKind,
    describe,
    parse_spec,
)
from console.services.planners import ClusterPlanners, PlannerSource
from console.services.planning import INPUT_ERRORS, PlanResult, mqadmin_lines
from console.services.spark_runner import JobCancelled, JobHandle, JobProgress
from console.ui import format as fmt
from console.ui.registry import GroupContext
from console.ui.screens.base import ConsoleScreen
from console.ui.tones import toned
from console.ui.widgets.dataview import DataView
from console.ui.widgets.tablemodel import Column, Row, cell

PLAN_GROUP = "plan"
# What the value box asks for, per strategy; strategies without a value hide it.
VALUE_HINTS: dict[StrategyKind, str] = {
    StrategyKind.TO_OFFSET: "offset, e.g. 1200",
    StrategyKind.SHIFT_BY: "messages, + skips, - re-consumes, e.g. -500",
    StrategyKind.TO_TIMESTAMP: "time with zone, e.g. 2026-11-22T10:05:00+01:00",
    StrategyKind.BY_DURATION: "how far back, e.g. 30m, 2h",
    StrategyKind.TO_GROUP: "group to copy offsets from",
    StrategyKind.TO_SNAPSHOT: "snapshot id (see History)",
    StrategyKind.FROM_FILE: "CSV of topic,broker,queue_id,offset",
}
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


# ---- messages -----------------------------------------------------------------------------------


class PlanProgressed(Message):
    """The job's latest progress; a newer one replaces an unread older one."""

    def __init__(self, progress: JobProgress) -> None:
        super().__init__()
        self.progress = progress

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, PlanProgressed)


@dataclass
class PlanComputed(Message):
    result: PlanResult
    rows: tuple[PlanRow, ...]


@dataclass
class PlanRejected(Message):
    """Bad input: the reason names the field or line; no plan was written."""

    reason: str


@dataclass
class PlanCancelled(Message):
    pass


@dataclass
class ImpactEstimated(Message):
    impact: tuple[Impact, ...]


# ---- the screen ---------------------------------------------------------------------------------


class PreviewScreen(ConsoleScreen):
    # One line per control: the form, the progress, the totals and the diff fit 80x24.
    DEFAULT_CSS = """
    PreviewScreen #preview-strategy, PreviewScreen #preview-scope {
        height: 1;
        margin: 0 1;
    }
    PreviewScreen #preview-progress {
        height: 1;
        padding: 0 1;
    }
    PreviewScreen Input {
        height: 1;
        border: none;
        padding: 0 1;
        margin: 0 1 0 0;
        background: $boost;
        width: 1fr;
    }
    PreviewScreen Input:focus {
        background: $surface-lighten-1;
    }
    PreviewScreen #strategy {
        width: 18;
        margin: 0 1 0 0;
    }
    PreviewScreen #strategy > SelectCurrent {
        height: 1;
        border: none;
        padding: 0 1;
        background: $boost;
    }
    PreviewScreen #strategy:focus > SelectCurrent {
        background: $surface-lighten-1;
    }
    PreviewScreen #strategy > SelectOverlay {
        width: 24;
    }
    PreviewScreen Checkbox {
        height: 1;
        width: auto;
        border: none;
        padding: 0 1 0 0;
        background: $background;
    }
    PreviewScreen #run {
        height: 1;
        min-width: 11;
        width: auto;
        border: none;
    }
    PreviewScreen #progress {
        width: 32;
    }
    PreviewScreen #step {
        width: 1fr;
        color: $text-muted;
    }
    PreviewScreen #plan-summary {
        height: auto;
        max-height: 5;
        padding: 0 1;
    }
    PreviewScreen #diff {
        height: 1fr;
    }
    """

    BINDINGS = [
        Binding("r", "preview", "Preview", id="preview_run"),
        Binding("x", "cancel_plan", "Cancel job", id="preview_cancel"),
        Binding("w", "warnings_only", "Warnings only", id="preview_warnings"),
    ]

    def __init__(self, context: GroupContext, planners: PlannerSource | None = None) -> None:
        super().__init__(context.session)
        self.context = context
        self.group = context.group
        self.crumb = f"reset {context.group}"
        self.planners: PlannerSource = planners or ClusterPlanners()
        self.handle: JobHandle | None = None
        self.running = False
        self.result: PlanResult | None = None
        self.rows: tuple[PlanRow, ...] = ()
        self.impact: tuple[Impact, ...] = ()
        self.only_warnings = False

    # ---- layout ------------------------------------------------------------------------------

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="preview-strategy"):
            yield Select(
                [(k.value, k) for k in StrategyKind],
                value=StrategyKind.TO_TIMESTAMP,
                allow_blank=False,
                id="strategy",
            )
            yield Input(placeholder=VALUE_HINTS[StrategyKind.TO_TIMESTAMP], id="value")
            yield Button("Preview", id="run", variant="primary")
        with Horizontal(id="preview-scope"):
            yield Input(placeholder="topics: all", id="topics")
            yield Input(placeholder="brokers: all", id="brokers")
            yield Input(placeholder="queue ids: all", id="queues")
            yield Checkbox("retry", id="retry")
            yield Checkbox("clamp", value=True, id="clamp")
        with Horizontal(id="preview-progress"):
            yield ProgressBar(total=None, show_eta=False, id="progress")
            yield Label("", id="step")
        yield Static(id="plan-summary")
        yield DataView("diff", DIFF_COLUMNS, id="diff")

    def on_mount(self) -> None:
        self.query_one("#progress", ProgressBar).display = False
        self.query_one("#plan-summary", Static).update(
            Text(f"{self.group}: choose a strategy and press Preview (nothing is written)")
        )
        self.query_one("#value", Input).focus()
        self.warm()

    @work(thread=True, exclusive=True, group="spark-warm", exit_on_error=False)
    def warm(self) -> None:
        # Spark starts while the operator picks a strategy: the first preview finds it warm.
        self.planners.warm(self.console.config)

    def on_unmount(self) -> None:
        # Leaving the screen abandons its job: nobody is left to read the plan.
        if self.running and self.handle is not None:
            self.handle.cancel()

    # ---- the form ----------------------------------------------------------------------------

    @on(Select.Changed, "#strategy")
    def _strategy_changed(self, event: Select.Changed) -> None:
        kind = event.value
        box = self.query_one("#value", Input)
        if isinstance(kind, StrategyKind):
            box.display = kind in VALUE_HINTS
            box.placeholder = VALUE_HINTS.get(kind, "")

    def spec_document(self) -> dict[str, Any]:
        """What the form says, in the spec file's shape (parse_spec checks it)."""
        kind = self.query_one("#strategy", Select).value
        value = self.query_one("#value", Input).value.strip()
        strategy: Any = str(kind) if kind not in VALUE_HINTS else {str(kind): value or None}
        scope: dict[str, Any] = {
            "cluster": self.context.session.cluster.name,
            "groups": [self.group],
            "include_retry": self.query_one("#retry", Checkbox).value,
        }
        for key, box in (("topics", "#topics"), ("brokers", "#brokers"), ("queue_ids", "#queues")):
            items = [v.strip() for v in self.query_one(box, Input).value.split(",") if v.strip()]
            if items:
                scope[key] = items
        return {
            "scope": scope,
            "strategy": strategy,
            "clamp": self.query_one("#clamp", Checkbox).value,
        }

    @on(Button.Pressed, "#run")
    @on(Input.Submitted)
    def _run_pressed(self, event: Message) -> None:
        event.stop()
        self.action_preview()

    # ---- actions -----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_plan":
            return True if self.running else None
        if action == "preview":
            return None if self.running else True
        if action == "warnings_only":
            return True if self.rows else None
        return True

    def action_preview(self) -> None:
        if self.running:
            return
        try:
            spec = parse_spec(self.spec_document())
        except SpecError as exc:
            self.on_plan_rejected(PlanRejected(str(exc)))
            return
        self._set_running(True)
        # Off the inputs, so x (cancel) is a key again rather than a letter typed.
        self.query_one("#diff", DataView).focus_table()
        self.compute(spec)

    def action_cancel_plan(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.query_one("#step", Label).update("cancelling…")

    def action_warnings_only(self) -> None:
        self.only_warnings = not self.only_warnings
        self._show_rows()

    # ---- the worker --------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group=PLAN_GROUP, exit_on_error=False)
    def compute(self, spec: ResetSpec) -> None:
        # Its own event loop on the worker thread: the snapshot's wire traffic and the wait for
        # Spark stay off the UI's loop.
        asyncio.run(self._compute(spec))

    async def _compute(self, spec: ResetSpec) -> None:
        def submitted(handle: JobHandle) -> None:
            self.handle = handle

        def progressed(progress: JobProgress) -> None:
            self.post_message(PlanProgressed(progress))

        config = self.console.config
        async with self.planners.open(self.context.session, config) as planner:
            try:
                result = await planner.plan(
                    spec,
                    on_progress=progressed,
                    on_submit=submitted,
                )
            except JobCancelled:
                self.post_message(PlanCancelled())
                return
            except INPUT_ERRORS as exc:
                self.post_message(PlanRejected(str(exc)))
                return
            table = await asyncio.to_thread(planner.rows, result.uri)
            rows = tuple(PlanRow.from_dict(d) for d in table.to_pylist())
            self.post_message(PlanComputed(result, rows))
            impact = await planner.impact(result)
            self.post_message(ImpactEstimated(tuple(impact)))

    def worker_failed(self, group: str, error: BaseException) -> None:
        if group == PLAN_GROUP:
            self._set_running(False)
        super().worker_failed(group, error)

    # ---- messages ----------------------------------------------------------------------------

    def on_plan_progressed(self, message: PlanProgressed) -> None:
        p = message.progress
        bar = self.query_one("#progress", ProgressBar)
        if p.total:
            bar.update(total=p.total, progress=p.done)
        step = p.step or p.state.value
        stage = f" · {p.done}/{p.total} tasks" if p.total else ""
        self.query_one("#step", Label).update(Text(f"{step}{stage}"))

    def on_plan_computed(self, message: PlanComputed) -> None:
        self._set_running(False)
        self.result = message.result
        self.rows = message.rows
        self.impact = ()
        header = message.result.header
        self.query_one("#step", Label).update(Text(f"plan {header.plan_id}"))
        # The status line's age is the snapshot's: what the diff's "current" is as old as.
        self.status.update_state(refreshed_at_ms=header.snapshot.taken_at_ms)
        self._show_summary()
        self._show_rows()
        self.query_one("#diff", DataView).focus_table()

    def on_impact_estimated(self, message: ImpactEstimated) -> None:
        self.impact = message.impact
        self._show_summary()

    def on_plan_rejected(self, message: PlanRejected) -> None:
        self._set_running(False)
        self.query_one("#plan-summary", Static).update(
            toned(self.app, f"cannot plan: {message.reason}", "text-error")
        )
        self.status.update_state(error=message.reason)

    def on_plan_cancelled(self, message: PlanCancelled) -> None:
        self._set_running(False)
        self.query_one("#step", Label).update("cancelled")

    # ---- rendering ---------------------------------------------------------------------------

    def _set_running(self, running: bool) -> None:
        self.running = running
        if running:
            self.handle = None
            self.status.update_state(error=None)
            self.query_one("#step", Label).update("taking a snapshot…")
        self.status.update_state(busy=running)
        bar = self.query_one("#progress", ProgressBar)
        bar.display = running
        bar.update(total=None, progress=0)
        self.query_one("#run", Button).disabled = running
        self.refresh_bindings()

    def _show_summary(self) -> None:
        result = self.result
        if result is None:
            return
        self.query_one("#plan-summary", Static).update(
            summary_text(self.app, result.header, self.group, self.impact)
        )

    def _show_rows(self) -> None:
        rows = [r for r in self.rows if r.warnings] if self.only_warnings else list(self.rows)
        view = self.query_one("#diff", DataView)
        view.title = "diff (warnings only)" if self.only_warnings else "diff"
        view.set_rows([diff_row(self.app, r) for r in rows])

    def mqadmin_lines(self) -> list[str]:
        result = self.result
        namesrv = self.context.session.cluster.namesrv
        if result is None:
            return ["# preview a plan first: its mqadmin equivalent appears here"]
        return [
            "# these commands WRITE offsets; the console has not run them",
            *mqadmin_lines(result.header, self.rows, namesrv, self.context.session.known_brokers),
        ]


# ---- cells --------------------------------------------------------------------------------------


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
        f"{r.group}|{r.topic}|{r.broker}|{r.queue_id}",
        (
            cell(r.topic),
            cell(r.broker),
            cell(r.queue_id),
            cell(r.min_offset),
            cell(r.max_offset),
            cell(r.current, fmt.offset(r.current)),
            cell(r.target, target),
            cell(move, moved),
            cell(r.span_ms, _span(r.span_ms)),
            cell(";".join(r.warnings) or None, warnings),
        ),
    )


def summary_text(app: Any, header: PlanHeader, group: str, impact: Sequence[Impact]) -> Text:
    spec = parse_spec(header.spec, offsets=())
    lines = [Text(f"{describe(spec.strategy)} · snapshot {header.snapshot.snapshot_id}")]
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


def _span(ms: int | None) -> str:
    if ms is None:
        return "?"
    if ms == 0:
        return "0"
    sign = "+" if ms > 0 else "-"
    return sign + fmt.age(abs(ms))
