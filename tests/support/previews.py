"""A preview without Spark: a planner that plans three rows when the test lets it (and can be
cancelled or made to fail), the planners that hand it to the screen, and the keys that open it."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pyarrow as pa

from console.config import Config
from console.domain.gaps import Gap
from console.domain.plan import PLAN_COLUMNS, Impact, PlanHeader, PlanRow, SnapshotInfo, Totals
from console.domain.reset_paths import ResetPath, ResetPathKind
from console.domain.spec import ResetSpec
from console.services.infra.spark_jobs import JobCancelled, JobProgress, JobState
from console.services.infra.spark_runner import JobHandle
from console.services.infra.workspace import SnapshotRef
from console.services.plan.planner import PlanResult
from console.services.read.cluster_session import ClusterSession
from tests.ui.helpers import settle

T = 1_795_338_300_000


def row(queue_id: int, current: int | None, target: int | None, *warnings: str) -> PlanRow:
    delta = None if current is None or target is None else target - current
    return PlanRow(
        "prod",
        "billing",
        "orders",
        "broker-a",
        queue_id,
        0,
        1200,
        current,
        target,
        target,
        delta,
        "below_min" if "below_min" in warnings else None,
        tuple(warnings),
        span_ms=None if delta is None else -delta * 1000,
    )


ROWS = [row(0, 1100, 1000), row(1, 1180, 0, "below_min"), row(2, None, 500, "no_committed")]


class FakePlanner:
    def __init__(self) -> None:
        self.specs: list[ResetSpec] = []
        self.release = threading.Event()
        self.release.set()
        self.cancelled = threading.Event()
        self.reported = threading.Event()
        self.fail: Exception | None = None
        #: What the snapshot planned from lacks.
        self.missing: tuple[Gap, ...] = ()

    async def plan(
        self,
        spec: ResetSpec,
        *,
        on_progress: Callable[[JobProgress], None] | None = None,
        on_submit: Callable[[JobHandle], None] | None = None,
        snapshot: SnapshotRef | None = None,
        out_uri: str | None = None,
        imported_from: str | None = None,
    ) -> PlanResult:
        self.specs.append(spec)
        if self.fail is not None:
            raise self.fail
        handle = JobHandle("j1", on_progress, cancel=self.cancelled.set)
        if on_submit:
            on_submit(handle)
        handle.report(JobProgress("j1", JobState.RUNNING, "computing the plan", None, 3, 8, 2))
        self.reported.set()
        while not self.release.wait(0.01):  # the job "runs" until released or cancelled
            if self.cancelled.is_set():
                raise JobCancelled("cancelled")
        header = PlanHeader(
            plan_id="20261122T090500000Z-billing-to-timestamp-abcdef",
            spec=spec,
            snapshot=SnapshotInfo("prod", "20261122T090500000Z", T),
            created_at_ms=T,
            content_hash="sha256:00",
            rows=3,
            totals=(Totals("billing", None, 3, 3, 1280, 0, 2, 100, 1700),),
            timestamp_ms=T,
            reset_paths={
                "billing": ResetPath(ResetPathKind.CLIENT_PUSH, "broker-a runs 4.9.8", None)
            },
        )
        ref = SnapshotRef("prod", "20261122T090500000Z", T, "file:///x")
        return PlanResult(header, "file:///ws/plans/p", ref, self.missing)

    def rows(self, plan_uri: str) -> pa.Table:
        names = [n for n, _ in PLAN_COLUMNS]
        return pa.Table.from_pylist(
            [
                {n: getattr(r, n) if n != "warnings" else list(r.warnings) for n in names}
                for r in ROWS
            ]
        )

    async def impact(self, result: PlanResult) -> list[Impact]:
        return [Impact("billing", None, 0, 1700, 10.0, "history", 170.0)]


class FakePlanners:
    """The preview's planner source: the test's fake planner."""

    def __init__(self, planner: FakePlanner) -> None:
        self.planner = planner
        self.warmed = 0

    def warm(self, config: Config) -> None:
        self.warmed += 1  # no Spark in these tests

    @asynccontextmanager
    async def open(self, session: ClusterSession, config: Config) -> AsyncIterator[FakePlanner]:
        yield self.planner


async def open_preview(pilot: Any) -> None:
    await settle(pilot)
    await pilot.press("g", "down", "enter")  # the groups list, billing, open it
    await settle(pilot)
    await pilot.press("R")
    await settle(pilot)
