"""A reset's flow on its own: the form becomes a spec, each stage allows only its
next steps, late or stale news from a job changes nothing, a cancel reaches a job submitted after
it, and `drive_plan` reports a planner's outcomes the way the screen and the CLI read them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

import pyarrow as pa
import pytest

from console.domain.journal import ApplyProgress, ApplyStatus, Journal, JournalQueue, QueueState
from console.domain.plan import PLAN_COLUMNS, Impact, PlanRow
from console.domain.spec import ByDuration, Earliest, ResetSpec, Scope, SpecError, StrategyKind
from console.services.apply.events import (
    Applied,
    Checked,
    CheckStarted,
    Confirmed,
    WriteProgressed,
    WriteRefused,
    tell_flow,
)
from console.services.infra.spark_jobs import (
    JobCancelled,
    JobFailed,
    JobInputError,
    JobProgress,
    JobState,
)
from console.services.infra.spark_runner import JobHandle
from console.services.plan.planner import PlanResult
from console.services.plan.preview_flow import (
    NEXT,
    ResetFlow,
    ResetForm,
    Stage,
    StageError,
    drive_plan,
)
from tests.support.flows import SPEC, T, result

if TYPE_CHECKING:
    from console.services.apply.check import ApplyCheck


ROW = PlanRow("prod", "billing", "orders", "broker-a", 0, 0, 10, 8, 5, 5, -3, None, ())
PROGRESS = JobProgress("j1", JobState.RUNNING, "computing the plan", None, 1, 4)


def planning() -> ResetFlow:
    flow = ResetFlow.for_group("prod", "billing")
    assert flow.begin(SPEC) == SPEC
    return flow


# ---- the form -----------------------------------------------------------------------------------


def test_the_form_becomes_the_spec_it_describes() -> None:
    flow = ResetFlow.for_group("prod", "billing")
    flow.edit(strategy=StrategyKind.BY_DURATION, value=" 10m ")
    flow.edit(topics="orders, payments,", queue_ids="0,3", include_retry=True, clamp=False)
    spec = flow.begin()
    assert spec is not None
    assert spec.strategy == ByDuration(600_000)
    assert spec.scope == Scope(
        "prod", ("billing",), topics=("orders", "payments"), queue_ids=(0, 3), include_retry=True
    )
    assert spec.clamp is False
    assert flow.stage is Stage.PLANNING
    assert flow.spec == spec


def test_a_strategy_without_a_value_ignores_the_box() -> None:
    form = ResetForm(strategy=StrategyKind.EARLIEST, value="left over")
    assert not form.takes_value
    assert form.hint == ""
    assert form.document("prod", ("billing",))["strategy"] == "earliest"
    flow = ResetFlow.for_group("prod", "billing", form)
    spec = flow.begin()
    assert spec is not None
    assert spec.strategy == Earliest()


def test_bad_input_is_rejected_at_once_and_names_the_field() -> None:
    flow = ResetFlow.for_group("prod", "billing")
    flow.edit(value="2026-11-22T10:05")  # no time zone
    assert flow.begin() is None
    assert flow.stage is Stage.REJECTED
    assert flow.error is not None
    assert flow.error.startswith("strategy.to-timestamp: '2026-11-22T10:05' has no time zone")
    assert flow.spec is None
    flow.edit(value="")
    assert flow.begin() is None
    assert flow.error is not None
    assert flow.error.startswith("strategy.to-timestamp: ")
    flow.edit(value="2026-11-22T10:05Z")
    assert flow.begin() is not None
    assert flow.stage is Stage.PLANNING
    assert flow.error is None


# ---- stages -------------------------------------------------------------------------------------


BUSY = {Stage.PLANNING, Stage.CHECKING, Stage.CONFIRMING, Stage.APPLYING}


def test_every_stage_has_its_next_steps() -> None:
    assert set(NEXT) == set(Stage)
    for stage, nexts in NEXT.items():
        # Nothing starts another plan while a plan runs or an apply is under way; a plan is
        # shown after it ran, or again after a declined confirm.
        assert (Stage.PLANNING in nexts) is (stage not in BUSY)
        assert (Stage.PREVIEWED in nexts) is (stage in (Stage.PLANNING, Stage.CONFIRMING))
        # Only a shown plan is applied (again, after a refusal); only a write ends applied.
        assert (Stage.CHECKING in nexts) is (stage in (Stage.PREVIEWED, Stage.NOT_APPLIED))
        assert (Stage.APPLIED in nexts) is (stage is Stage.APPLYING)


def test_a_plan_is_computed_then_estimated() -> None:
    flow = planning()
    assert flow.busy
    assert not flow.can_begin
    assert flow.progressed(PROGRESS)
    assert flow.progress == PROGRESS
    assert flow.computed(result(), (ROW,))
    assert flow.stage is Stage.PREVIEWED
    assert flow.rows == (ROW,)
    assert not flow.busy
    assert flow.can_begin
    impact = (Impact("billing", None, 3, 0, 1.0, "history", 3.0),)
    assert not flow.impact_estimated("an older plan", impact)
    assert flow.impact == ()
    assert flow.impact_estimated("p1", impact)
    assert flow.impact == impact


def test_planning_twice_at_once_is_a_bug() -> None:
    flow = planning()
    with pytest.raises(StageError, match="cannot plan while planning"):
        flow.begin(SPEC)


def test_news_that_comes_too_late_changes_nothing() -> None:
    flow = planning()
    flow.computed(result(), (ROW,))
    # A failure after the plan (its impact job) leaves the plan in place.
    assert not flow.failed("impact job died")
    assert not flow.progressed(PROGRESS)
    assert not flow.cancelled()
    assert not flow.rejected("late")
    assert not flow.computed(result("p2"), ())
    assert flow.stage is Stage.PREVIEWED
    assert flow.result is not None
    assert flow.result.header.plan_id == "p1"
    assert flow.error is None


def test_a_new_attempt_drops_the_previous_plan() -> None:
    flow = planning()
    flow.computed(result(), (ROW,))
    flow.begin(SPEC)
    assert flow.stage is Stage.PLANNING
    assert (flow.result, flow.rows, flow.impact, flow.progress) == (None, (), (), None)
    # An estimate for the plan dropped arrives late: not taken.
    assert not flow.impact_estimated("p1", (Impact("billing", None, 0, 0, None, "none", None),))


def test_rejected_failed_and_cancelled_end_the_attempt() -> None:
    for end, stage in (
        (lambda f: f.rejected("o.csv:3: no such queue"), Stage.REJECTED),
        (lambda f: f.failed("broker-a timed out"), Stage.FAILED),
        (lambda f: f.cancelled(), Stage.CANCELLED),
    ):
        flow = planning()
        assert end(flow)
        assert flow.stage is stage
        assert flow.result is None
        assert flow.can_begin
    assert flow.error is None  # cancelled: nothing went wrong


# ---- cancel -------------------------------------------------------------------------------------


class Job:
    def __init__(self) -> None:
        self.cancelled = 0
        self.handle = JobHandle("j1", cancel=self.cancel)

    def cancel(self) -> None:
        self.cancelled += 1


def test_a_cancel_before_the_job_is_submitted_cancels_it_on_submit() -> None:
    flow = planning()
    assert flow.request_cancel()
    assert flow.cancelling
    assert flow.stage is Stage.PLANNING  # until the job says it stopped
    job = Job()
    flow.switch.attach(job.handle)
    assert job.cancelled == 1
    assert flow.cancelled()
    assert not flow.cancelling
    assert not flow.request_cancel()  # nothing runs


def test_a_cancel_reaches_a_running_job_and_a_new_attempt_starts_clean() -> None:
    flow = planning()
    job = Job()
    flow.switch.attach(job.handle)
    assert job.cancelled == 0
    flow.request_cancel()
    assert job.cancelled == 1
    flow.cancelled()
    flow.begin(SPEC)
    assert not flow.switch.requested


# ---- drive_plan ---------------------------------------------------------------------------------


class Planner:
    """Answers as a planner would; `fail` is raised by the plan job."""

    def __init__(self, fail: Exception | None = None, impact_fail: Exception | None = None):
        self.fail = fail
        self.impact_fail = impact_fail
        self.options: dict[str, object] = {}

    async def plan(
        self,
        spec: ResetSpec,
        *,
        on_progress: Callable[[JobProgress], None] | None = None,
        on_submit: Callable[[JobHandle], None] | None = None,
        **options: object,
    ) -> PlanResult:
        self.options = options
        if on_submit is not None:
            on_submit(JobHandle("j1"))
        if on_progress is not None:
            on_progress(PROGRESS)
        if self.fail is not None:
            raise self.fail
        return result(spec=spec)

    def rows(self, plan_uri: str) -> pa.Table:
        names = [n for n, _ in PLAN_COLUMNS]
        values = {n: getattr(ROW, n) for n in names}
        values["warnings"] = list(ROW.warnings)
        return pa.Table.from_pylist([values])

    async def impact(self, result: PlanResult) -> list[Impact]:
        if self.impact_fail is not None:
            raise self.impact_fail
        return [Impact("billing", None, 3, 0, 1.0, "history", 3.0)]


async def test_drive_plan_reports_the_plan_its_rows_and_its_impact() -> None:
    flow = planning()
    planner = Planner()
    got = await drive_plan(planner, SPEC, flow, flow.switch, out_uri="file:///x")
    assert got is not None
    assert got is flow.result
    assert flow.stage is Stage.PREVIEWED
    assert flow.rows == (ROW,)
    assert flow.progress == PROGRESS
    assert [i.group for i in flow.impact] == ["billing"]
    assert planner.options == {"snapshot": None, "out_uri": "file:///x", "imported_from": None}


async def test_drive_plan_without_rows_or_impact() -> None:
    flow = planning()
    await drive_plan(Planner(), SPEC, flow, flow.switch, with_rows=False, with_impact=False)
    assert flow.stage is Stage.PREVIEWED
    assert (flow.rows, flow.impact) == ((), ())


@pytest.mark.parametrize(
    ("error", "stage", "message"),
    [
        (SpecError("scope.groups[0]", "no consumer group 'x'"), Stage.REJECTED, "scope.groups[0]"),
        (JobInputError("o.csv:3: queue orders / broker-a / 9"), Stage.REJECTED, "o.csv:3"),
        (JobCancelled("cancelled"), Stage.CANCELLED, None),
    ],
)
async def test_drive_plan_turns_bad_input_and_a_cancel_into_stages(
    error: Exception, stage: Stage, message: str | None
) -> None:
    flow = planning()
    assert await drive_plan(Planner(error), SPEC, flow, flow.switch) is None
    assert flow.stage is stage
    assert flow.result is None
    if message is None:
        assert flow.error is None
    else:
        assert flow.error is not None
        assert flow.error.startswith(message)


async def test_drive_plan_raises_what_is_not_bad_input() -> None:
    flow = planning()
    with pytest.raises(JobFailed, match="executor lost"):
        await drive_plan(Planner(JobFailed("executor lost")), SPEC, flow, flow.switch)
    assert flow.stage is Stage.PLANNING  # the caller says it failed
    assert flow.failed("executor lost")
    # A failed impact job comes after the plan: the plan stands.
    flow = planning()
    with pytest.raises(JobFailed):
        await drive_plan(Planner(impact_fail=JobFailed("no")), SPEC, flow, flow.switch)
    assert flow.stage is Stage.PREVIEWED
    assert not flow.failed("no")


# ---- applying the plan shown --------------------------------------------------------------------


def previewed_flow() -> ResetFlow:
    flow = planning()
    assert flow.computed(result(), (ROW,))
    return flow


CHECK = cast("ApplyCheck", object())


def test_the_session_s_events_move_the_flow_as_its_own_calls_do() -> None:
    flow = previewed_flow()
    tell = tell_flow(flow)
    assert not tell(Checked(CHECK))  # nothing asked to apply yet
    flow.begin_apply()
    assert not tell(CheckStarted())  # says nothing of the flow
    assert tell(Checked(CHECK))
    assert flow.stage is Stage.CONFIRMING
    assert tell(Confirmed(accept_drift=True))
    assert flow.accept_drift
    progress = ApplyProgress(total=1, settled=1, verified=1, stage="verifying")
    assert tell(WriteProgressed(progress))
    assert flow.apply_progress == progress
    assert tell(Applied(journal(), "/ws/journal/a1.json"))
    assert (flow.stage, flow.journal_path) == (Stage.APPLIED, "/ws/journal/a1.json")
    flow = previewed_flow()
    tell = tell_flow(flow)
    flow.begin_apply()
    assert tell(WriteRefused(("read-only",)))
    assert (flow.stage, flow.error) == (Stage.NOT_APPLIED, "read-only")


def journal() -> Journal:
    q = JournalQueue("billing", "orders", "broker-a", "10.0.0.1:1", 0, 8, 5, QueueState.VERIFIED)
    return Journal(
        apply_id="a1",
        kind="apply",
        plan_id="p1",
        plan_hash="sha256:00",
        cluster="prod",
        paths={"billing": "offline update"},
        who="op@host",
        started_at_ms=T,
        queues=(q,),
        status=ApplyStatus.FINISHED,
        finished_at_ms=T + 1,
    )


def test_only_a_shown_plan_is_applied() -> None:
    flow = ResetFlow.for_group("prod", "billing")
    assert not flow.can_apply
    with pytest.raises(StageError):
        flow.begin_apply()
    flow = planning()
    assert not flow.can_apply
    flow.rejected("bad")
    assert not flow.can_apply
    assert previewed_flow().can_apply


def test_an_apply_goes_check_confirm_write_applied() -> None:
    flow = previewed_flow()
    flow.begin_apply()
    assert flow.stage is Stage.CHECKING
    assert flow.applying
    assert not flow.can_begin
    assert not flow.can_apply
    assert not flow.can_stop
    assert not flow.confirmed(accept_drift=True)  # no confirm before the check
    assert flow.checked()
    assert flow.stage is Stage.CONFIRMING
    assert not flow.writing(ApplyProgress(total=1, settled=0, verified=0, stage="x"))
    assert flow.confirmed(accept_drift=True)
    assert flow.stage is Stage.APPLYING
    assert flow.accept_drift
    progress = ApplyProgress(total=1, settled=1, verified=0, stage="writing")
    assert flow.writing(progress)
    assert flow.apply_progress == progress
    assert flow.can_stop
    assert flow.applied(journal(), "/ws/journal/a1.json")
    assert flow.stage is Stage.APPLIED
    assert not flow.applying
    assert flow.journal_path == "/ws/journal/a1.json"
    # The plan stays shown; another plan may start, the same one is not applied twice.
    assert flow.result is not None
    assert flow.rows == (ROW,)
    assert flow.can_begin
    assert not flow.can_apply
    assert not flow.applied(journal(), "again")
    flow.begin(SPEC)
    assert flow.journal is None
    assert flow.apply_progress is None


def test_a_declined_confirm_shows_the_plan_again() -> None:
    flow = previewed_flow()
    flow.begin_apply()
    flow.checked()
    assert flow.declined()
    assert flow.stage is Stage.PREVIEWED
    assert flow.can_apply
    assert not flow.declined()


def test_a_refusal_or_a_failure_ends_not_applied_and_may_be_tried_again() -> None:
    flow = previewed_flow()
    flow.begin_apply()
    assert flow.refused(("2 queues drifted", "consumers online"))
    assert flow.stage is Stage.NOT_APPLIED
    assert flow.error == "2 queues drifted; consumers online"
    assert flow.can_apply
    assert flow.can_begin
    flow.begin_apply()
    assert flow.error is None
    flow.checked()
    # The answer did not confirm it (a name mistyped): refused, nothing written.
    assert flow.refused(("typed 'biling', not 'billing': nothing was written",))
    assert flow.stage is Stage.NOT_APPLIED
    flow.begin_apply()
    flow.checked()
    flow.confirmed(accept_drift=False)
    assert flow.apply_failed("broker-a: timeout")
    assert flow.stage is Stage.NOT_APPLIED
    assert flow.error == "broker-a: timeout"


def test_a_stop_is_asked_once_and_reaches_a_writer_attached_later() -> None:
    flow = previewed_flow()
    assert not flow.request_stop()  # nothing is being written
    flow.begin_apply()
    flow.checked()
    flow.confirmed(accept_drift=False)
    assert flow.request_stop()
    assert flow.stopping
    assert not flow.can_stop
    assert not flow.request_stop()
    stopped: list[bool] = []
    flow.stop_switch.attach(lambda: stopped.append(True))
    assert stopped == [True]
    # A new apply starts with a switch of its own.
    flow.applied(journal(), "j")
    flow.begin(SPEC)
    assert not flow.stop_switch.requested
