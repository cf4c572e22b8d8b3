"""What the preview screen says besides its widgets: the step line, the note where no plan is
shown, the mqadmin lines of a row's boundary messages, and the plan driver's events posted to
the screen as messages (console/ui/screens/preview.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import App
from textual.message import Message

from console.config import ClusterConfig
from console.domain import mqadmin
from console.domain.plan import Impact, PlanRow
from console.domain.spec import describe
from console.services.plan.preview_flow import ResetFlow, Stage
from console.ui.messages import (
    ImpactEstimated,
    PlanCancelled,
    PlanComputed,
    PlanProgressed,
    PlanRejected,
)
from console.ui.tones import toned

if TYPE_CHECKING:
    from console.services.infra.spark_jobs import JobProgress
    from console.services.plan.planner import PlanResult


def step_text(flow: ResetFlow) -> str:
    """What the flow is doing now, in the step line under the form."""
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


def summary_note(app: App[Any], flow: ResetFlow) -> Text | None:
    """What the diff says while there is no plan to show: what to do, or why there is none."""
    if flow.stage is Stage.EDITING:
        return Text(f"{flow.group}: choose a strategy and press Preview (nothing is written)")
    if flow.stage is Stage.PLANNING and flow.spec is not None:
        return Text(f"{flow.group}: planning {describe(flow.spec.strategy)}…")
    if flow.stage is Stage.REJECTED:
        return toned(app, f"cannot plan: {flow.error}", "text-error")
    if flow.stage is Stage.FAILED:
        return toned(app, f"plan failed: {flow.error}", "text-error")
    if flow.stage is Stage.CANCELLED:
        return Text(f"{flow.group}: cancelled; no plan was written")
    return None


def message_commands(cluster: ClusterConfig, row: PlanRow) -> list[str]:
    """mqadmin lines that print the messages at a row's boundary."""
    if row.target is None or not row.changed:
        return []
    skips = row.current is not None and row.target > row.current
    lines = [
        mqadmin.message(cluster.namesrv, row.topic, row.broker, row.queue_id, offset)
        for offset in ((row.target - 1, row.target) if skips else (row.target,))
    ]
    return mqadmin.with_tls(lines, cluster.tls)


class PostedPlanEvents:
    """The plan driver's events as messages to the screen: the driver runs on a worker thread,
    and the flow changes on the UI thread only, in the message handlers."""

    def __init__(self, post: Callable[[Message], object]) -> None:
        self._post = post

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
