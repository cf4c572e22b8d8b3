"""A reset's flow from form to apply, as a value: what the operator asks for, where the preview
stands, and what the last plan said. The preview screen and `rmq-console plan` drive the same
`ResetFlow`.

A flow is edited (`edit`), started (`begin`: the form or a given spec becomes the spec planned),
and then told what the plan job did (`progressed`, `computed`, `impact_estimated`, `rejected`,
`cancelled`, `failed`). `drive_plan` runs a planner and reports to anything with those methods:
the CLI hands it the flow itself; the console hands it an object that posts each event as a
message, so the flow changes on the UI thread only.

A previewed plan is applied the same way: `begin_apply`, then the apply session's events
(`told`: checked, confirmed or declined, write progress, applied, refused;
console/services/apply/events.py). The confirm dialog and `apply --confirm` both answer the
session's check; the session tells the flow which it was.

Stages go editing -> planning -> previewed | rejected | cancelled | failed, and from any of the
last four back to planning; from previewed, checking -> confirming -> applying -> applied, with
not-applied for a refusal or a failure and previewed again for a declined confirm. `NEXT` is the
whole map.

Nothing here writes to a cluster: the apply service does, and tells the flow.

One piece (over 400 lines): one state machine, its stages, the map of moves (`NEXT`) and the
value that moves along it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from console.domain.plan import Impact, PlanRow
from console.domain.spec import ResetSpec, SpecError, StrategyKind, strategy_to_value
from console.services.infra.spark_jobs import JobCancelled, JobInputError
from console.services.plan.spec_files import read_spec

if TYPE_CHECKING:
    from console.domain.journal import ApplyProgress, Journal
    from console.services.infra.spark_jobs import JobProgress
    from console.services.infra.spark_runner import JobHandle
    from console.services.infra.workspace import SnapshotRef
    from console.services.plan.planner import PlanResult
    from console.services.plan.preview_planners import PreviewPlanner

# What the value box asks for, per strategy; a strategy missing here takes no value.
VALUE_HINTS: Mapping[StrategyKind, str] = {
    StrategyKind.TO_OFFSET: "offset, e.g. 1200",
    StrategyKind.SHIFT_BY: "messages, + skips, - re-consumes, e.g. -500",
    StrategyKind.TO_TIMESTAMP: "time with zone, e.g. 2026-11-22T10:05+01:00",
    StrategyKind.BY_DURATION: "how far back, e.g. 30m, 2h",
    StrategyKind.TO_GROUP: "group to copy offsets from",
    StrategyKind.TO_SNAPSHOT: "snapshot id (see History)",
    StrategyKind.FROM_FILE: "CSV of topic,broker,queue_id,offset",
}


class Stage(StrEnum):
    EDITING = "editing"  # nothing asked yet
    PLANNING = "planning"  # the snapshot and the plan job are under way
    PREVIEWED = "previewed"  # a plan was written and is shown; the cluster is unchanged
    REJECTED = "rejected"  # bad input; the error names the field or line; no plan
    CANCELLED = "cancelled"  # the operator stopped the job; no plan
    FAILED = "failed"  # the job or the cluster failed; the error says how; no plan
    CHECKING = "checking"  # the plan is read again and compared with the cluster; nothing written
    CONFIRMING = "confirming"  # the summary waits for the operator to name the group
    APPLYING = "applying"  # writes under way, then read back
    APPLIED = "applied"  # the journal says per queue: verified, not yet, failed or not sent
    NOT_APPLIED = "not applied"  # refused before writing, or the apply failed; the error says which


_RESTART = frozenset({Stage.PLANNING, Stage.REJECTED})
_RESTART_OR_APPLY = _RESTART | {Stage.CHECKING}
NEXT: Mapping[Stage, frozenset[Stage]] = {
    Stage.EDITING: _RESTART,
    Stage.PLANNING: frozenset({Stage.PREVIEWED, Stage.REJECTED, Stage.CANCELLED, Stage.FAILED}),
    Stage.PREVIEWED: _RESTART_OR_APPLY,
    Stage.REJECTED: _RESTART,
    Stage.CANCELLED: _RESTART,
    Stage.FAILED: _RESTART,
    Stage.CHECKING: frozenset({Stage.CONFIRMING, Stage.NOT_APPLIED}),
    # Declined: the plan stays shown and nothing was written. Not applied: the answer did not
    # confirm it (the drift not accepted, a name mistyped).
    Stage.CONFIRMING: frozenset({Stage.APPLYING, Stage.PREVIEWED, Stage.NOT_APPLIED}),
    Stage.APPLYING: frozenset({Stage.APPLIED, Stage.NOT_APPLIED}),
    Stage.APPLIED: _RESTART,
    # Trying the same plan again is safe: the drift check sees any queue an earlier try moved.
    Stage.NOT_APPLIED: _RESTART_OR_APPLY,
}
_APPLY_STAGES = frozenset({Stage.CHECKING, Stage.CONFIRMING, Stage.APPLYING})


class StageError(RuntimeError):
    """A step asked for in a stage that does not allow it (a bug in the caller)."""


@dataclass(frozen=True, slots=True)
class ResetForm:
    """The spec as the operator types it: text, unchecked until the flow begins."""

    strategy: StrategyKind = StrategyKind.TO_TIMESTAMP
    value: str = ""
    topics: str = ""  # comma-separated; blank means all
    brokers: str = ""
    queue_ids: str = ""
    include_retry: bool = False
    clamp: bool = True

    @classmethod
    def of(cls, spec: ResetSpec) -> ResetForm:
        """The form that asks for `spec` (a walkthrough's), as the operator would type it."""

        value: Any = strategy_to_value(spec.strategy)
        text = ""
        if isinstance(value, Mapping):
            (arg,) = value.values()
            if isinstance(arg, Mapping):
                arg = next(iter(arg.values()))
            text = str(arg)
        s = spec.scope
        return cls(
            strategy=spec.strategy.kind,
            value=text,
            topics=", ".join(s.topics),
            brokers=", ".join(s.brokers),
            queue_ids=", ".join(str(q) for q in s.queue_ids),
            include_retry=s.include_retry,
            clamp=spec.clamp,
        )

    @property
    def takes_value(self) -> bool:
        return self.strategy in VALUE_HINTS

    @property
    def hint(self) -> str:
        return VALUE_HINTS.get(self.strategy, "")

    def document(self, cluster: str, groups: tuple[str, ...]) -> dict[str, Any]:
        """The form in a spec file's shape, for `read_spec` to check."""
        kind = str(self.strategy)
        strategy: Any = {kind: self.value.strip() or None} if self.takes_value else kind
        scope: dict[str, Any] = {
            "cluster": cluster,
            "groups": list(groups),
            "include_retry": self.include_retry,
        }
        for key, text in (
            ("topics", self.topics),
            ("brokers", self.brokers),
            ("queue_ids", self.queue_ids),
        ):
            items = [v.strip() for v in text.split(",") if v.strip()]
            if items:
                scope[key] = items
        return {"scope": scope, "strategy": strategy, "clamp": self.clamp}


class CancelSwitch:
    """Cancels one attempt's job whether or not it was submitted yet: a cancel that comes first
    cancels the job the moment it is submitted. Used from the UI thread and the worker's."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._handle: JobHandle | None = None
        self._requested = False

    @property
    def requested(self) -> bool:
        return self._requested

    def attach(self, handle: JobHandle) -> None:
        with self._lock:
            self._handle = handle
            requested = self._requested
        if requested:
            handle.cancel()

    def cancel(self) -> None:
        with self._lock:
            self._requested = True
            handle = self._handle
        if handle is not None:
            handle.cancel()


class StopSwitch:
    """Asks a running apply to send no more writes, from the UI thread or any other; a stop
    that comes before the apply attached its own stop reaches it when it does."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stop: Callable[[], None] | None = None
        self._requested = False

    @property
    def requested(self) -> bool:
        return self._requested

    def attach(self, stop: Callable[[], None]) -> None:
        with self._lock:
            self._stop = stop
            requested = self._requested
        if requested:
            stop()

    def request(self) -> None:
        with self._lock:
            self._requested = True
            stop = self._stop
        if stop is not None:
            stop()

    def event(self) -> asyncio.Event:
        """An event of the running loop that this switch sets, from whichever thread asks:
        what an apply running on a worker's loop waits on."""
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def set_it() -> None:
            loop.call_soon_threadsafe(stop.set)

        self.attach(set_it)
        return stop


@dataclass
class ResetFlow:
    """One reset's flow: a cluster, the groups reset, the form, and the latest attempt."""

    cluster: str
    groups: tuple[str, ...]
    form: ResetForm = field(default_factory=ResetForm)
    stage: Stage = Stage.EDITING
    spec: ResetSpec | None = None  # what the latest attempt asked for
    progress: JobProgress | None = None
    result: PlanResult | None = None
    rows: tuple[PlanRow, ...] = ()
    impact: tuple[Impact, ...] = ()
    error: str | None = None
    switch: CancelSwitch = field(default_factory=CancelSwitch)
    # The apply of the plan shown, once asked for.
    accept_drift: bool = False
    apply_progress: ApplyProgress | None = None
    journal: Journal | None = None
    journal_path: str | None = None
    stop_switch: StopSwitch = field(default_factory=StopSwitch)

    @classmethod
    def for_group(cls, cluster: str, group: str, form: ResetForm | None = None) -> ResetFlow:
        return cls(cluster, (group,), form or ResetForm())

    @classmethod
    def for_spec(cls, spec: ResetSpec) -> ResetFlow:
        return cls(spec.scope.cluster, spec.scope.groups)

    # ---- what the stage allows ------------------------------------------------------------------

    @property
    def group(self) -> str:
        """The group the reset is about (the first, when a spec names several)."""
        return self.groups[0]

    @property
    def busy(self) -> bool:
        return self.stage is Stage.PLANNING

    @property
    def can_begin(self) -> bool:
        return Stage.PLANNING in NEXT[self.stage]

    @property
    def cancelling(self) -> bool:
        return self.busy and self.switch.requested

    @property
    def can_apply(self) -> bool:
        return Stage.CHECKING in NEXT[self.stage] and self.result is not None

    @property
    def applying(self) -> bool:
        """From the check before writing until the apply's outcome is known."""
        return self.stage in _APPLY_STAGES

    @property
    def can_stop(self) -> bool:
        return self.stage is Stage.APPLYING and not self.stop_switch.requested

    @property
    def stopping(self) -> bool:
        return self.stage is Stage.APPLYING and self.stop_switch.requested

    # ---- the operator's steps -------------------------------------------------------------------

    def edit(self, **changes: Any) -> ResetForm:
        """Change fields of the form; the plan shown (if any) stays until the next `begin`."""
        self.form = replace(self.form, **changes)
        return self.form

    def begin(self, spec: ResetSpec | None = None) -> ResetSpec | None:
        """Start an attempt with `spec`, or with the form checked into one. Bad input ends the
        attempt at once (rejected, None returned); the previous plan is dropped either way."""
        if not self.can_begin:
            raise StageError(f"cannot plan while {self.stage}")
        self.spec, self.progress, self.result, self.rows, self.impact = None, None, None, (), ()
        self.error = None
        self._forget_apply()
        self.switch = CancelSwitch()
        if spec is None:
            try:
                spec = read_spec(self.form.document(self.cluster, self.groups))
            except SpecError as exc:
                self._move(Stage.REJECTED)
                self.error = str(exc)
                return None
        self.spec = spec
        self._move(Stage.PLANNING)
        return spec

    def begin_apply(self) -> None:
        """Apply the plan shown: its check (hash, age, drift, paths) comes first."""
        if not self.can_apply:
            raise StageError(f"cannot apply while {self.stage}")
        self._forget_apply()
        self.error = None
        self._move(Stage.CHECKING)

    def request_stop(self) -> bool:
        """Ask the apply to send no more writes (what was sent is still read back and
        recorded); False when nothing is being written or a stop was asked already."""
        if not self.can_stop:
            return False
        self.stop_switch.request()
        return True

    def request_cancel(self) -> bool:
        """Ask the running job to stop; False when there is none. The stage changes when the
        job says it stopped (`cancelled`), or finished anyway."""
        if not self.busy:
            return False
        self.switch.cancel()
        return True

    # ---- what the job did (each returns whether the flow took it) ------------------------------

    def progressed(self, progress: JobProgress) -> bool:
        if not self.busy:
            return False
        self.progress = progress
        return True

    def computed(self, result: PlanResult, rows: tuple[PlanRow, ...]) -> bool:
        if not self.busy:
            return False
        self._move(Stage.PREVIEWED)
        self.result, self.rows = result, rows
        return True

    def impact_estimated(self, plan_id: str, impact: tuple[Impact, ...]) -> bool:
        # An estimate arrives after its plan; one for an older plan is dropped.
        if self.result is None or self.result.header.plan_id != plan_id:
            return False
        self.impact = impact
        return True

    def rejected(self, reason: str) -> bool:
        return self._end(Stage.REJECTED, reason)

    def cancelled(self) -> bool:
        return self._end(Stage.CANCELLED, None)

    def failed(self, reason: str) -> bool:
        return self._end(Stage.FAILED, reason)

    # ---- what the apply session did (console/services/apply/events.py: `tell_flow`) ------------

    def checked(self) -> bool:
        if self.stage is not Stage.CHECKING:
            return False
        self._move(Stage.CONFIRMING)
        return True

    def confirmed(self, accept_drift: bool) -> bool:
        if self.stage is not Stage.CONFIRMING:
            return False
        self._move(Stage.APPLYING)
        self.accept_drift = accept_drift
        return True

    def declined(self) -> bool:
        if self.stage is not Stage.CONFIRMING:
            return False
        self._move(Stage.PREVIEWED)
        return True

    def writing(self, progress: ApplyProgress) -> bool:
        if self.stage is not Stage.APPLYING:
            return False
        self.apply_progress = progress
        return True

    def applied(self, journal: Journal, journal_path: str) -> bool:
        if self.stage is not Stage.APPLYING:
            return False
        self._move(Stage.APPLIED)
        self.journal, self.journal_path = journal, journal_path
        return True

    def refused(self, reasons: tuple[str, ...] | list[str]) -> bool:
        """Refused before any write (hash, age, drift, read-only, consumers online, the cluster
        moved while confirming)."""
        return self._not_applied("; ".join(reasons))

    def apply_failed(self, reason: str) -> bool:
        """The apply broke off; its journal, if it got that far, says what moved."""
        return self._not_applied(reason)

    # ---- helpers -------------------------------------------------------------------------------

    def _not_applied(self, error: str) -> bool:
        if self.stage not in (Stage.CHECKING, Stage.CONFIRMING, Stage.APPLYING):
            return False
        self._move(Stage.NOT_APPLIED)
        self.error = error
        return True

    def _forget_apply(self) -> None:
        self.accept_drift, self.apply_progress = False, None
        self.journal, self.journal_path = None, None
        self.stop_switch = StopSwitch()

    def _end(self, stage: Stage, error: str | None) -> bool:
        if not self.busy:
            return False
        self._move(stage)
        self.error = error
        return True

    def _move(self, stage: Stage) -> None:
        if stage not in NEXT[self.stage]:
            raise StageError(f"{self.stage} -> {stage}")
        self.stage = stage


class PlanEvents(Protocol):
    """What `drive_plan` reports; `ResetFlow` is one."""

    def progressed(self, progress: JobProgress) -> object: ...

    def computed(self, result: PlanResult, rows: tuple[PlanRow, ...]) -> object: ...

    def impact_estimated(self, plan_id: str, impact: tuple[Impact, ...]) -> object: ...

    def rejected(self, reason: str) -> object: ...

    def cancelled(self) -> object: ...


def _progress_to(events: PlanEvents) -> Callable[[JobProgress], None]:
    def report(progress: JobProgress) -> None:
        events.progressed(progress)

    return report


async def drive_plan(
    planner: PreviewPlanner,
    spec: ResetSpec,
    events: PlanEvents,
    switch: CancelSwitch,
    *,
    with_rows: bool = True,
    with_impact: bool = True,
    snapshot: SnapshotRef | None = None,
    out_uri: str | None = None,
    imported_from: str | None = None,
) -> PlanResult | None:
    """Plan `spec` and report each step to `events`: bad input becomes `rejected`, a cancelled
    job `cancelled`; any other failure is raised (the caller reports it as `failed`). The
    impact estimate, a second job, follows the plan; the plan is reported before it starts."""

    try:
        result = await planner.plan(
            spec,
            on_progress=_progress_to(events),
            on_submit=switch.attach,
            snapshot=snapshot,
            out_uri=out_uri,
            imported_from=imported_from,
        )
    except JobCancelled:
        events.cancelled()
        return None
    except (SpecError, JobInputError) as exc:
        events.rejected(str(exc))
        return None
    rows = await asyncio.to_thread(read_rows, planner, result.uri) if with_rows else ()
    events.computed(result, rows)
    if with_impact:
        impact = await planner.impact(result)
        events.impact_estimated(result.header.plan_id, tuple(impact))
    return result


def read_rows(planner: PreviewPlanner, plan_uri: str) -> tuple[PlanRow, ...]:
    return tuple(PlanRow.from_dict(d) for d in planner.rows(plan_uri).to_pylist())
