"""A reset flow's values the tests build on: a spec and the plan result a preview of it shows."""

from __future__ import annotations

from console.domain.plan import PlanHeader, SnapshotInfo
from console.domain.spec import ResetSpec, Scope, ToOffset
from console.services.infra.workspace import SnapshotRef
from console.services.plan.planner import PlanResult

T = 1_795_338_300_000


SPEC = ResetSpec(Scope("prod", ("billing",)), ToOffset(5))


def result(plan_id: str = "p1", spec: ResetSpec = SPEC) -> PlanResult:
    header = PlanHeader(
        plan_id=plan_id,
        spec=spec,
        snapshot=SnapshotInfo("prod", "s1", T),
        created_at_ms=T,
        content_hash="sha256:00",
        rows=1,
        totals=(),
    )
    return PlanResult(header, f"file:///ws/plans/{plan_id}", SnapshotRef("prod", "s1", T, "x"))
