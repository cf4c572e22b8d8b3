"""The preview screen's parts (console/ui/screens/preview.py): what they share (the flow, the
cluster's session, the confirmation and the stage line), reading the messages at each queue's
boundary, and applying the plan shown as an apply session."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.widgets import Button, Label, ProgressBar

from console.domain.boundary_messages import Boundary, BoundaryRequest
from console.domain.spec import ResetSpec
from console.services.apply.events import Applied, Confirmed, Declined, WriteRefused, tell_flow
from console.services.plan.preview_flow import ResetFlow, ResetForm, Stage
from console.services.read.cluster_session import ClusterSession
from console.ui.messages import BoundariesRead, ConfirmationAsked, SessionTold
from console.ui.screens.apply import ApplyResultDialog, ConfirmApplyDialog, write_summary
from console.ui.screens.base import ConsoleScreen
from console.ui.screens.dialogs import BoundaryDialog, ErrorDialog
from console.ui.screens.preview_text import message_commands, step_text
from console.ui.widgets.boundary import detail_text
from console.ui.widgets.plandiff import PlanDiff
from console.ui.widgets.rowtable import RowTable
from console.ui.writing import DialogConfirm, answer, posted

if TYPE_CHECKING:
    from console.domain.journal import Journal

APPLY_GROUP = "apply"
BOUNDARY_GROUP = "boundary"


class PreviewBase(ConsoleScreen):
    """What the preview's parts share."""

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

    @property
    def _can_apply(self) -> bool:
        return self.flow.can_apply and not self.cluster_session.cluster.read_only

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
        self.query_one("#step", Label).update(Text(step_text(self.flow)))
        self.query_one("#run", Button).disabled = not flow.can_begin
        self.status.update_state(busy=flow.busy or flow.applying)
        if flow.stage in (Stage.REJECTED, Stage.FAILED, Stage.NOT_APPLIED):
            self.status.update_state(error=flow.error)
        elif flow.busy:
            self.status.update_state(error=None)
        self.refresh_bindings()


class BoundaryReading(PreviewBase):
    """The messages at the boundary of each queue the plan moves: read for a small plan as soon
    as it is computed, else row by row (`b`); `enter` shows one in full."""

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
        cluster = self.cluster_session.cluster
        where = f"{row.topic}/{row.broker}/{row.queue_id}"
        self.app.push_screen(
            BoundaryDialog(where, detail_text(self.app, known), message_commands(cluster, row))
        )

    def on_row_table_cursor_moved(self, message: RowTable.CursorMoved) -> None:
        self.refresh_bindings()  # `b` is there for a changed row only

    def on_boundaries_read(self, message: BoundariesRead) -> None:
        result = self.flow.result
        if result is not None and result.header.plan_id == message.plan_id:
            self.query_one(PlanDiff).show_boundaries(message.keys, message.boundaries)


class PreviewApplying(PreviewBase):
    """`a`: the plan shown, applied as one apply session on a worker; this part renders its
    events and answers its confirmation with the dialog."""

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
            posted(self.post_message),
            stop,
        )

    def on_session_told(self, message: SessionTold) -> None:
        event = message.event
        if not tell_flow(self.flow)(event):
            return
        match event:
            case Confirmed():
                # The keys go to the plan while it writes, not to the form: `x` stops it,
                # whatever had the focus before the dialog.
                self.query_one(PlanDiff).focus_table()
            case Declined():
                self.notify("apply cancelled: nothing was written", markup=False)
            case WriteRefused(reasons):
                text = "\n".join(reasons)
                self.app.push_screen(ErrorDialog("Apply refused", f"{text}\nnothing was written"))
            case Applied(journal, journal_path):
                self.app.push_screen(ApplyResultDialog(journal, journal_path))
                if self.on_applied is not None:
                    known = self.query_one(PlanDiff).boundaries.values()
                    read = tuple(b for b in known if isinstance(b, Boundary))
                    self.on_applied(self.flow, journal, journal_path, read)
        self._show_stage()

    def on_confirmation_asked(self, message: ConfirmationAsked) -> None:
        summary = write_summary(message.check, self.cluster_session.cluster)
        self.app.push_screen(
            ConfirmApplyDialog(summary), lambda confirmation: answer(message.reply, confirmation)
        )
