"""Checks a confirm dialog can show, made up: an apply's plan read against a cluster that is not
there."""

from __future__ import annotations

from console.domain.drift import Drift
from console.domain.plan import PlanHeader, PlanRow, SnapshotInfo, Totals
from console.domain.reset_paths import ResetPath, ResetPathKind
from console.domain.spec import Earliest, ResetSpec, Scope
from console.services.apply.check import ApplyCheck, GroupWrites, QueueWrite
from console.services.plan.load import LoadedPlan

T0 = 1_795_400_000_000
HOUR = 3_600_000


def plan_row(queue_id: int, target: int, span_ms: int | None) -> PlanRow:
    current_time = T0 + HOUR if span_ms is not None else None
    target_time = None if span_ms is None else T0 + HOUR - span_ms
    return PlanRow(
        "staging",
        "billing",
        "orders",
        "broker-a",
        queue_id,
        0,
        200,
        100,
        target,
        target,
        target - 100,
        None,
        (),
        current_time,
        target_time,
        span_ms,
    )


def drifted_check() -> ApplyCheck:
    """Back 10 messages (an hour of them) on q0, on 5 (ahead 5 minutes) on q1, back 5 on q2
    whose store times are unknown; q0 moved by one since the plan was made."""
    rows = (plan_row(0, 90, HOUR), plan_row(1, 120, -300_000), plan_row(2, 95, None))
    header = PlanHeader(
        plan_id="p-undo",
        spec=ResetSpec(Scope("staging", ("billing",)), Earliest()),
        snapshot=SnapshotInfo("staging", "s1", T0),
        created_at_ms=T0,
        content_hash="sha256:1",
        rows=3,
        totals=(Totals("billing", None, 3, 3, 15, 20, 0, 300, 295),),
    )
    path = ResetPath(ResetPathKind.SERVER_SIDE, "every broker runs 5.1+")
    writes = tuple(QueueWrite(r, "10.1.0.1:10911", 100) for r in rows)
    drift = Drift(("billing", "orders", "broker-a", 0), 100, 101, "committed by someone else")
    return ApplyCheck(
        LoadedPlan("file:///p-undo", header, rows),
        (GroupWrites("billing", path, path, 0, None, writes),),
        (drift,),
        (),
        (),
    )


def plain_check() -> ApplyCheck:
    """The same plan read against a cluster where nothing moved since."""
    check = drifted_check()
    return ApplyCheck(check.plan, check.groups, (), (), ())
