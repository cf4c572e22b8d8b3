"""Reset preview: choose scope and strategy, watch the plan job, read the diff.

Opened from the group screen (`R`). The preview's state is a `ResetFlow`
(console.services.plan.preview_flow), the same value `rmq-console plan` drives; this screen edits
its form, starts it, and shows it. The plan runs in a thread worker on the warm Spark session, so
the console keeps refreshing and answering keys; what the job did comes back as messages whose
handlers change the flow on the UI thread.

`a` applies the plan shown as an apply session (console.services.apply.session) on a worker: the
session reads the cluster, the operator confirms in a dialog by typing the group name, and the
session reads the cluster again, writes through the journal and reads every queue back; the
result lists each queue. A read-only cluster offers no apply (and the session refuses it).

The module loads no planning code (pyarrow, Spark's host): the console imports it at start-up to
check the keymap, and the planner loads when a preview first runs.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button, Checkbox, Input, Label, ProgressBar, Select

from console.domain import mqadmin
from console.domain.spec import ResetSpec, StrategyKind
from console.services.plan.preview_flow import (
    CancelSwitch,
    drive_plan,
)
from console.ui.messages import (
    ImpactEstimated,
    PlanCancelled,
    PlanComputed,
    PlanProgressed,
    PlanRejected,
)
from console.ui.screens.preview_parts import (
    APPLY_GROUP,
    BOUNDARY_GROUP,
    BoundaryReading,
    PreviewApplying,
)
from console.ui.screens.preview_text import (
    PostedPlanEvents,
    message_commands,
    summary_note,
)
from console.ui.widgets.plandiff import PlanDiff
from console.ui.widgets.textbox import TextBox

if TYPE_CHECKING:
    pass

PLAN_GROUP = "plan"
#: A plan changing at most this many queues has its boundary messages read as soon as it is
#: computed; a larger one row by row, on `b`.
AUTO_BOUNDARIES = 32
# Which form field each input edits.
_TEXT_FIELDS = {"value": "value", "topics": "topics", "brokers": "brokers", "queues": "queue_ids"}
_CHECK_FIELDS = {"retry": "include_retry", "clamp": "clamp"}


class PreviewScreen(PreviewApplying, BoundaryReading):
    """The preview (see the module's text); the boundary reads and the apply are its parts
    (console/ui/screens/preview_parts.py)."""

    BINDINGS = [
        Binding("r", "preview", "Preview", id="preview_run"),
        # The plan job while it runs; the writes while an apply writes.
        Binding("x", "cancel_plan", "Cancel", id="preview_cancel"),
        Binding("w", "warnings_only", "Warnings only", id="preview_warnings"),
        Binding("a", "apply", "Apply", id="preview_apply"),
        Binding("b", "boundary", "Boundary", id="preview_boundary"),
    ]

    # ---- layout ------------------------------------------------------------------------------

    def compose_body(self) -> ComposeResult:
        # Compact controls, one line each: the form, the progress and the diff fit 80x24.
        form = self.flow.form
        with Horizontal(id="preview-strategy"):
            yield Select(
                [(k.value, k) for k in StrategyKind],
                value=form.strategy,
                allow_blank=False,
                compact=True,
                id="strategy",
            )
            yield TextBox(form.value, placeholder=form.hint, compact=True, id="value")
            yield Button("Preview", id="run", variant="primary", compact=True)
        with Horizontal(id="preview-scope"):
            yield TextBox(form.topics, placeholder="topics: all", compact=True, id="topics")
            yield TextBox(form.brokers, placeholder="brokers: all", compact=True, id="brokers")
            yield TextBox(form.queue_ids, placeholder="queue ids: all", compact=True, id="queues")
            yield Checkbox("retry", form.include_retry, compact=True, id="retry")
            yield Checkbox("clamp", form.clamp, compact=True, id="clamp")
        with Horizontal(id="preview-progress"):
            yield ProgressBar(total=None, show_eta=False, id="progress")
            yield Label("", id="step")
        yield PlanDiff(id="plan")

    def on_mount(self) -> None:
        self.query_one("#value", Input).display = self.flow.form.takes_value
        # No notes here (they are a refreshing screen's): the line goes to the diff.
        self.show_notes([])
        self._show_stage()
        self._show_plan()
        self.query_one("#value", Input).focus()
        if self.given_spec is not None:
            spec = self.flow.begin(self.given_spec)
            self._show_stage()
            self._show_plan()
            self.query_one(PlanDiff).focus_table()
            if spec is not None:
                self.compute(spec, self.flow.switch)
        else:
            self.warm()

    @work(thread=True, exclusive=True, group="spark-warm", exit_on_error=False)
    def warm(self) -> None:
        # Spark starts while the operator picks a strategy: the first preview finds it warm.
        self.console.services.planners.warm(self.console.config)

    def on_unmount(self) -> None:
        # Leaving the screen abandons its job (nobody is left to read the plan), and an apply
        # waiting for its confirmation: it is cancelled, nothing written.
        self.flow.request_cancel()
        self.confirm.abandon()

    # ---- the form ----------------------------------------------------------------------------

    @on(Select.Changed, "#strategy")
    def _strategy_changed(self, event: Select.Changed) -> None:
        if isinstance(event.value, StrategyKind):
            form = self.flow.edit(strategy=event.value)
            box = self.query_one("#value", Input)
            box.display = form.takes_value
            box.placeholder = form.hint

    @on(Input.Changed)
    def _text_changed(self, event: Input.Changed) -> None:
        name = _TEXT_FIELDS.get(event.input.id or "")
        if name is not None:
            self.flow.edit(**{name: event.value})

    @on(Checkbox.Changed)
    def _check_changed(self, event: Checkbox.Changed) -> None:
        name = _CHECK_FIELDS.get(event.checkbox.id or "")
        if name is not None:
            self.flow.edit(**{name: event.value})

    @on(Button.Pressed, "#run")
    @on(Input.Submitted)
    def _run_pressed(self, event: Message) -> None:
        event.stop()
        self.action_preview()

    # ---- actions -----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_plan":
            return True if self.flow.busy or self.flow.can_stop else None
        if action == "warnings_only":
            return True if self.flow.rows else None
        if action == "apply":
            return True if self._can_apply else None
        if action == "preview":
            return True if self.flow.can_begin else None
        if action == "boundary":
            row = self.query_one(PlanDiff).current_row if self.flow.result else None
            return True if row is not None and row.changed else None
        return True

    def action_preview(self) -> None:
        if not self.flow.can_begin:
            return
        self._read_form()
        spec = self.flow.begin()
        self._show_stage()
        self._show_plan()
        if spec is None:
            return
        # Off the inputs, so x (cancel) is a key again rather than a letter typed.
        self.query_one(PlanDiff).focus_table()
        self.compute(spec, self.flow.switch)

    def action_cancel_plan(self) -> None:
        if self.flow.request_stop():
            self._show_stage()
        elif self.flow.request_cancel():
            self._show_stage()

    def action_warnings_only(self) -> None:
        self.query_one(PlanDiff).toggle_warnings()

    def _read_form(self) -> None:
        """The widgets' values into the flow's form: a value set in code, whose Changed message
        is still queued, counts too."""
        changes: dict[str, object] = {}
        strategy = self.query_one("#strategy", Select).value
        if isinstance(strategy, StrategyKind):
            changes["strategy"] = strategy
        for box, name in _TEXT_FIELDS.items():
            changes[name] = self.query_one(f"#{box}", Input).value
        for box, name in _CHECK_FIELDS.items():
            changes[name] = self.query_one(f"#{box}", Checkbox).value
        self.flow.edit(**changes)

    # ---- the worker --------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group=PLAN_GROUP, exit_on_error=False)
    def compute(self, spec: ResetSpec, switch: CancelSwitch) -> None:
        # Its own event loop on the worker thread: the snapshot's wire traffic and the wait for
        # Spark stay off the UI's loop.
        asyncio.run(self._compute(spec, switch))

    async def _compute(self, spec: ResetSpec, switch: CancelSwitch) -> None:
        planners = self.console.services.planners
        async with planners.open(self.cluster_session, self.console.config) as planner:
            await drive_plan(planner, spec, PostedPlanEvents(self.post_message), switch)

    def worker_failed(self, group: str, error: BaseException) -> None:
        if group == PLAN_GROUP and self.flow.failed(str(error) or type(error).__name__):
            self._show_stage()
            self._show_plan()
        if group == APPLY_GROUP and self.flow.apply_failed(str(error) or type(error).__name__):
            self._show_stage()
        if group == BOUNDARY_GROUP:
            self.query_one(PlanDiff).boundaries_failed(str(error) or type(error).__name__)
        super().worker_failed(group, error)

    # ---- what the job did --------------------------------------------------------------------

    def on_plan_progressed(self, message: PlanProgressed) -> None:
        if self.flow.progressed(message.progress):
            self._show_stage()

    def on_plan_computed(self, message: PlanComputed) -> None:
        if not self.flow.computed(message.result, message.rows):
            return
        # The status line's age is the snapshot's: what the diff's "current" is as old as.
        self.status.update_state(refreshed_at_ms=message.result.header.snapshot.taken_at_ms)
        self._show_stage()
        self._show_plan()
        diff = self.query_one(PlanDiff)
        diff.focus_table()
        wanted = diff.boundary_requests(message.rows)
        diff.read_on_demand(len(wanted) > AUTO_BOUNDARIES)
        if not diff.on_demand:
            self._read_boundaries(wanted)
        self.refresh_bindings()

    def on_impact_estimated(self, message: ImpactEstimated) -> None:
        if self.flow.impact_estimated(message.plan_id, message.impact):
            self._show_summary()

    def on_plan_rejected(self, message: PlanRejected) -> None:
        if self.flow.rejected(message.reason):
            self._show_stage()
            self._show_plan()

    def on_plan_cancelled(self, message: PlanCancelled) -> None:
        if self.flow.cancelled():
            self._show_stage()
            self._show_plan()

    # ---- showing the flow ------------------------------------------------------------------------

    def _show_plan(self) -> None:
        """The summary and the diff: the plan, or why there is none."""
        diff = self.query_one(PlanDiff)
        diff.show_rows(self.flow.rows)
        self._show_summary()

    def _show_summary(self) -> None:
        flow = self.flow
        diff = self.query_one(PlanDiff)
        if flow.result is not None:
            diff.show_summary(flow.result.header, flow.group, flow.impact, flow.result.missing)
            return
        note = summary_note(self.app, flow)
        if note is not None:
            diff.note(note)

    def mqadmin_lines(self) -> list[str]:
        result = self.flow.result
        session = self.cluster_session
        if result is None:
            return ["# preview a plan first: its mqadmin equivalent appears here"]
        lines = [
            "# these commands WRITE offsets; the console has not run them",
            *mqadmin.plan_resets(
                result.header, self.flow.rows, session.cluster.namesrv, session.known_brokers
            ),
        ]
        row = self.query_one(PlanDiff).current_row
        reads = message_commands(session.cluster, row) if row is not None else []
        if reads:
            lines.append("# the message at the selected queue's boundary (reads only)")
        return lines + reads
