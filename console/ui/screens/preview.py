"""Reset preview: choose scope and strategy, watch the plan job, read the diff.

Opened from the group screen (`R`). The preview's state is a `ResetFlow`
(console.services.apply.preview_flow), the same value `rmq-console plan` drives; this screen edits
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
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button, Checkbox, Input, Label, ProgressBar, Select

from console.domain import mqadmin
from console.domain.messages import Boundary, BoundaryRequest
from console.domain.plan import Impact, PlanRow
from console.domain.spec import ResetSpec, StrategyKind, describe
from console.services.apply.preview_flow import (
    CancelSwitch,
    ResetFlow,
    ResetForm,
    Stage,
    drive_plan,
)
from console.services.read.session import ClusterSession
from console.ui.messages import (
    ApplyChecked,
    ApplyConfirmed,
    ApplyDeclined,
    ApplyFinished,
    ApplyProgressed,
    ApplyRefused,
    BoundariesRead,
    ConfirmationAsked,
    ImpactEstimated,
    PlanCancelled,
    PlanComputed,
    PlanProgressed,
    PlanRejected,
)
from console.ui.screens.apply import ApplyResultDialog, ConfirmApplyDialog, write_summary
from console.ui.screens.base import ConsoleScreen
from console.ui.screens.dialogs import BoundaryDialog, ErrorDialog
from console.ui.tones import toned
from console.ui.widgets.boundary import detail_text
from console.ui.widgets.plandiff import PlanDiff
from console.ui.widgets.rowtable import RowTable
from console.ui.widgets.textbox import TextBox
from console.ui.writing import DialogConfirm, PostedEvents, answer

if TYPE_CHECKING:
    from console.domain.journal import Journal
    from console.services.infra.spark_runner import JobProgress
    from console.services.plan.planner import PlanResult

PLAN_GROUP = "plan"
APPLY_GROUP = "apply"
BOUNDARY_GROUP = "boundary"
#: A plan changing at most this many queues has its boundary messages read as soon as it is
#: computed; a larger one row by row, on `b`.
AUTO_BOUNDARIES = 32
# Which form field each input edits.
_TEXT_FIELDS = {"value": "value", "topics": "topics", "brokers": "brokers", "queues": "queue_ids"}
_CHECK_FIELDS = {"retry": "include_retry", "clamp": "clamp"}


class PreviewScreen(ConsoleScreen):
    BINDINGS = [
        Binding("r", "preview", "Preview", id="preview_run"),
        # The plan job while it runs; the writes while an apply writes.
        Binding("x", "cancel_plan", "Cancel", id="preview_cancel"),
        Binding("w", "warnings_only", "Warnings only", id="preview_warnings"),
        Binding("a", "apply", "Apply", id="preview_apply"),
        Binding("b", "boundary", "Boundary", id="preview_boundary"),
    ]

    def __init__(
        self,
        session: ClusterSession,
        group: str,
        *,
        spec: ResetSpec | None = None,
        on_applied: Callable[[ResetFlow, Journal, str, tuple[Boundary, ...]], None] | None = None,
    ) -> None:
        super().__init__(session)
        self.cluster_session = session
        self.crumb = f"reset {group}"
        form = ResetForm.of(spec) if spec is not None else None
        self.flow = ResetFlow.for_group(session.cluster.name, group, form)
        #: A walkthrough's spec: previewed as soon as the screen opens.
        self.given_spec = spec
        #: Told of every apply that finished (a walkthrough keeps it for its report).
        self.on_applied = on_applied
        #: The apply session's confirmation, asked in the dialog.
        self.confirm = DialogConfirm(self.post_message)

    @property
    def group(self) -> str:
        return self.flow.group

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

    @property
    def _can_apply(self) -> bool:
        return self.flow.can_apply and not self.cluster_session.cluster.read_only

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

    # ---- the messages at the boundary ------------------------------------------------------------

    def action_boundary(self) -> None:
        """Read the boundary of the queue under the cursor (again, when it was read)."""
        diff = self.query_one(PlanDiff)
        row = diff.current_row
        if row is not None and self.flow.result is not None:
            self._read_boundaries(diff.boundary_requests([row]))

    def _read_boundaries(self, wanted: dict[str, BoundaryRequest]) -> None:
        result = self.flow.result
        if not wanted or result is None:
            return
        self.query_one(PlanDiff).boundaries_reading(list(wanted))
        self.read_boundaries(result.header.plan_id, tuple(wanted), tuple(wanted.values()))

    @work(group=BOUNDARY_GROUP, exit_on_error=False)
    async def read_boundaries(
        self, plan_id: str, keys: tuple[str, ...], wanted: tuple[BoundaryRequest, ...]
    ) -> None:
        read = await self.cluster_session.source.boundary_messages(wanted)
        self.post_message(BoundariesRead(plan_id, keys, tuple(read)))

    def on_row_table_row_selected(self, message: RowTable.RowSelected) -> None:
        """enter on a diff row: its boundary in full, once read."""
        diff = self.query_one(PlanDiff)
        row = diff.current_row
        known = diff.boundaries.get(message.key)
        if row is None or not isinstance(known, Boundary):
            return
        message.stop()
        where = f"{row.topic}/{row.broker}/{row.queue_id}"
        self.app.push_screen(
            BoundaryDialog(where, detail_text(self.app, known), self._message_commands(row))
        )

    def _message_commands(self, row: PlanRow) -> list[str]:
        """mqadmin lines that print the messages at a row's boundary."""
        if row.target is None or not row.changed:
            return []
        skips = row.current is not None and row.target > row.current
        cluster = self.cluster_session.cluster
        lines = [
            mqadmin.message(cluster.namesrv, row.topic, row.broker, row.queue_id, offset)
            for offset in ((row.target - 1, row.target) if skips else (row.target,))
        ]
        return mqadmin.with_tls(lines, cluster.tls)

    def on_row_table_cursor_moved(self, message: RowTable.CursorMoved) -> None:
        self.refresh_bindings()  # `b` is there for a changed row only

    def on_boundaries_read(self, message: BoundariesRead) -> None:
        result = self.flow.result
        if result is not None and result.header.plan_id == message.plan_id:
            self.query_one(PlanDiff).show_boundaries(message.keys, message.boundaries)

    # ---- applying ----------------------------------------------------------------------------

    def action_apply(self) -> None:
        result = self.flow.result
        if not self._can_apply or result is None:
            return
        self.flow.begin_apply()
        self._show_stage()
        self.apply_plan(result.uri)

    @work(thread=True, exclusive=True, group=APPLY_GROUP, exit_on_error=False)
    def apply_plan(self, plan_uri: str) -> None:
        """The plan shown, applied as one apply session (console/services/apply/session.py):
        this screen renders its events and answers its confirmation with the dialog."""
        asyncio.run(self._apply_plan(plan_uri))

    async def _apply_plan(self, plan_uri: str) -> None:
        writes = self.console.services.writes
        stop = self.flow.stop_switch.event()
        await writes.run(
            self.cluster_session.cluster,
            writes.apply_plan(plan_uri),
            self.confirm,
            PostedEvents(self.post_message),
            stop,
        )

    def on_apply_checked(self, message: ApplyChecked) -> None:
        self.flow.checked(message.check)

    def on_confirmation_asked(self, message: ConfirmationAsked) -> None:
        summary = write_summary(message.check, self.cluster_session.cluster)
        self.app.push_screen(
            ConfirmApplyDialog(summary), lambda confirmation: answer(message.reply, confirmation)
        )

    def on_apply_confirmed(self, message: ApplyConfirmed) -> None:
        if self.flow.confirmed(message.accept_drift):
            # The keys go to the plan while it writes, not to the form: `x` stops it,
            # whatever had the focus before the dialog.
            self.query_one(PlanDiff).focus_table()
            self._show_stage()

    def on_apply_declined(self, message: ApplyDeclined) -> None:
        if self.flow.declined():
            self._show_stage()
            self.notify("apply cancelled: nothing was written", markup=False)

    def on_apply_progressed(self, message: ApplyProgressed) -> None:
        if self.flow.writing(message.progress):
            self._show_stage()

    def on_apply_refused(self, message: ApplyRefused) -> None:
        if not self.flow.refused(message.reasons):
            return
        self._show_stage()
        reasons = "\n".join(message.reasons)
        self.app.push_screen(ErrorDialog("Apply refused", f"{reasons}\nnothing was written"))

    def on_apply_finished(self, message: ApplyFinished) -> None:
        if not self.flow.applied(message.journal, message.journal_path):
            return
        self._show_stage()
        self.app.push_screen(ApplyResultDialog(message.journal, message.journal_path))
        if self.on_applied is not None:
            known = self.query_one(PlanDiff).boundaries.values()
            read = tuple(b for b in known if isinstance(b, Boundary))
            self.on_applied(self.flow, message.journal, message.journal_path, read)

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
            await drive_plan(planner, spec, _Posted(self), switch)

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

    def _show_stage(self) -> None:
        """The progress row, the Preview button, the status line and the keys."""
        flow = self.flow
        bar = self.query_one("#progress", ProgressBar)
        bar.display = flow.busy or flow.applying
        progress = flow.progress
        written = flow.apply_progress
        if flow.applying:
            total = written.total if written is not None else None
            bar.update(total=total, progress=written.settled if written is not None else 0)
        elif progress is not None and progress.total:
            bar.update(total=progress.total, progress=progress.done)
        elif progress is None:
            bar.update(total=None, progress=0)
        self.query_one("#step", Label).update(Text(self._step_text()))
        self.query_one("#run", Button).disabled = not flow.can_begin
        self.status.update_state(busy=flow.busy or flow.applying)
        if flow.stage in (Stage.REJECTED, Stage.FAILED, Stage.NOT_APPLIED):
            self.status.update_state(error=flow.error)
        elif flow.busy:
            self.status.update_state(error=None)
        self.refresh_bindings()

    def _step_text(self) -> str:
        flow = self.flow
        if flow.stage is Stage.CONFIRMING:
            return "waiting for the confirm: nothing written yet"
        if flow.applying:
            w = flow.apply_progress
            if w is None:
                return "reading the cluster again before writing…"
            stage = "stopping: no new writes, reading back" if flow.stopping else w.stage
            waiting = f" · {w.waiting}" if w.waiting else ""
            return f"{stage}: {w.settled}/{w.total} answered · {w.verified} verified{waiting}"
        if flow.cancelling:
            return "cancelling…"
        if flow.busy:
            p = flow.progress
            if p is None:
                return "taking a snapshot…"
            tasks = f" · {p.done}/{p.total} tasks" if p.total else ""
            return f"{p.step or p.state.value}{tasks}"
        if flow.stage is Stage.PREVIEWED and flow.result is not None:
            return f"plan {flow.result.header.plan_id}"
        if flow.stage is Stage.APPLIED and flow.journal is not None:
            return f"applied: {flow.journal.apply_id} ({flow.journal.status})"
        if flow.stage is Stage.NOT_APPLIED:
            return "not applied"
        if flow.stage in (Stage.CANCELLED, Stage.FAILED):
            return str(flow.stage)
        return ""

    def _show_plan(self) -> None:
        """The summary and the diff: the plan, or why there is none."""
        diff = self.query_one(PlanDiff)
        diff.show_rows(self.flow.rows)
        self._show_summary()

    def _show_summary(self) -> None:
        flow = self.flow
        diff = self.query_one(PlanDiff)
        if flow.result is not None:
            diff.show_summary(flow.result.header, flow.group, flow.impact)
        elif flow.stage is Stage.EDITING:
            diff.note(
                Text(f"{flow.group}: choose a strategy and press Preview (nothing is written)")
            )
        elif flow.stage is Stage.PLANNING and flow.spec is not None:
            diff.note(Text(f"{flow.group}: planning {describe(flow.spec.strategy)}…"))
        elif flow.stage is Stage.REJECTED:
            diff.note(toned(self.app, f"cannot plan: {flow.error}", "text-error"))
        elif flow.stage is Stage.FAILED:
            diff.note(toned(self.app, f"plan failed: {flow.error}", "text-error"))
        elif flow.stage is Stage.CANCELLED:
            diff.note(Text(f"{flow.group}: cancelled; no plan was written"))

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
        reads = self._message_commands(row) if row is not None else []
        if reads:
            lines.append("# the message at the selected queue's boundary (reads only)")
        return lines + reads


class _Posted:
    """The plan driver's events as messages to the screen: the driver runs on a worker thread,
    and the flow changes on the UI thread only, in the message handlers."""

    def __init__(self, screen: PreviewScreen) -> None:
        self._post = screen.post_message

    def progressed(self, progress: JobProgress) -> None:
        self._post(PlanProgressed(progress))

    def computed(self, result: PlanResult, rows: tuple[PlanRow, ...]) -> None:
        self._post(PlanComputed(result, rows))

    def impact_estimated(self, plan_id: str, impact: tuple[Impact, ...]) -> None:
        self._post(ImpactEstimated(plan_id, impact))

    def rejected(self, reason: str) -> None:
        self._post(PlanRejected(reason))

    def cancelled(self) -> None:
        self._post(PlanCancelled())
