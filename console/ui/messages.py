"""What workers tell screens: each message names something that already happened."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message

from console.domain.boundary_messages import Boundary
from console.domain.offsets import QueueKey
from console.domain.plan import Impact, PlanRow
from console.domain.triage import GroupSummary
from console.domain.walkthrough import Evidence
from console.rocketmq.models import QueueStats
from console.services.apply.events import UndoPlanProgressed, WriteProgressed
from console.services.read.routes import BrokerHealth
from console.ui.widgets.tablemodel import Row

if TYPE_CHECKING:
    from console.config import ClusterConfig

    # Types only: the planning code loads when the first preview opens, not at start-up.
    from console.services.apply.events import SessionEvent
    from console.services.apply.history import WorkspaceHistory
    from console.services.apply.verify_journal import Verification
    from console.services.apply.write_check import Confirmation, WriteCheck
    from console.services.infra.spark_jobs import JobProgress
    from console.services.plan.planner import PlanResult
    from console.services.read.lag_report import LagReport
    from console.services.walkthrough.guided_run import Answer


@dataclass
class BrokersChecked(Message):
    brokers: tuple[BrokerHealth, ...]
    at_ms: int
    #: Name servers that do not answer, one line each.
    notices: tuple[str, ...] = ()


@dataclass
class RefreshFinished(Message):
    at_ms: int


@dataclass
class OverviewRefreshed(Message):
    topics: int | None
    groups: int | None


@dataclass
class TopicsListed(Message):
    topics: tuple[str, ...]


@dataclass
class TopicRefreshed(Message):
    queues: tuple[QueueStats, ...]


@dataclass
class GroupsListed(Message):
    groups: tuple[str, ...]


class GroupsProgressed(Message):
    """How far a refresh of the group list got (`stage`: what it is doing, as the status line
    says it); a newer one replaces an unread older one."""

    def __init__(self, done: int, total: int, stage: str = "refreshing") -> None:
        super().__init__()
        self.done = done
        self.total = total
        self.stage = stage

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, GroupsProgressed)


@dataclass
class GroupsRefreshed(Message):
    summaries: tuple[GroupSummary, ...]
    errors: Mapping[str, str]
    rows: tuple[Row, ...]  # the table rows, built off the UI thread
    #: The lags are in, the time behind of the lagging groups still being asked.
    asking_behind: bool = False


@dataclass
class GroupRefreshed(Message):
    summary: GroupSummary
    dlq: tuple[QueueStats, ...]
    delays: Mapping[QueueKey, int]


@dataclass
class LagReported(Message):
    """The group's lag history over the chart's window, read from the workspace."""

    report: LagReport


@dataclass
class LagHistoryFailed(Message):
    """The lag history could not be written (said once; the refreshes go on)."""

    problem: str


@dataclass
class AssignmentsRefreshed(Message):
    assignments: Mapping[QueueKey, tuple[str, ...]]


@dataclass
class TableExported(Message):
    path: Path
    rows: int


# ---- the reset preview: what its plan job did ----------------------------------------------------


class PlanProgressed(Message):
    """The plan job's latest progress; a newer one replaces an unread older one."""

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
    plan_id: str  # the plan estimated: an estimate for an older plan is dropped
    impact: tuple[Impact, ...]


@dataclass
class BoundariesRead(Message):
    """The messages at the reset of some queues of a plan (`plan_id`: a read for an older
    plan is dropped)."""

    plan_id: str
    keys: tuple[str, ...]  # the diff's row key of each boundary
    boundaries: tuple[Boundary, ...]


# ---- an apply session's events (console/services/apply/events.py), as a door gets them ----


class SessionTold(Message):
    """What an apply, undo or resume session told its door: one event, in the order it came.
    A newer progress of the same kind replaces an unread older one."""

    def __init__(self, event: SessionEvent) -> None:
        super().__init__()
        self.event = event

    def can_replace(self, message: Message) -> bool:
        if not isinstance(message, SessionTold):
            return False
        progress = (WriteProgressed, UndoPlanProgressed)
        return isinstance(self.event, progress) and type(message.event) is type(self.event)


@dataclass
class ConfirmationAsked(Message):
    """The session waits for the operator's answer to `check`: the confirm dialog sets
    `reply` (None: cancelled)."""

    check: WriteCheck
    reply: Future[Confirmation | None]


@dataclass
class HistoryRead(Message):
    history: WorkspaceHistory


@dataclass
class ApplyVerified(Message):
    """An apply's queues read again now (`found`), or why they could not be (`refused`)."""

    apply_id: str
    found: Verification | None
    refused: tuple[str, ...] = ()


@dataclass
class WalkthroughEvidenceGathered(Message):
    """Evidence a walkthrough asked for; `after_step` names the step whose answer it follows
    (None: the walkthrough's opening evidence, "applied": after the apply)."""

    evidence: tuple[Evidence, ...]
    after_step: str | None


@dataclass
class WalkthroughAnswered(Message):
    step_id: str
    answer: Answer | None  # None: an optional step left blank


@dataclass
class WalkthroughAnswerRefused(Message):
    step_id: str
    reason: str


@dataclass
class WalkthroughReported(Message):
    where: str


@dataclass
class SnapshotGroupsRead(Message):
    cluster: ClusterConfig
    snapshot_id: str
    groups: tuple[str, ...]
