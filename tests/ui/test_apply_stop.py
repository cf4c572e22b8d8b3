"""`x` while an apply writes: the console asks the apply (on its worker's loop) to send no more
writes, says so while what was sent is read back, and shows where it stopped. The stop itself
(no more writes, the journal's record) is the apply service's, proven against the real brokers
with ctrl-c at a terminal (tests/integration/test_apply_killed.py); this is the console's part.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, cast

import pytest

from console.domain.journal import ApplyStatus, Journal, JournalQueue, QueueState
from console.services.apply import ApplyProgress
from console.services.apply_check import ApplyCheck
from console.services.reset_flow import Stage
from console.ui.screens import preview
from console.ui.screens.apply import ApplyResultDialog
from console.ui.screens.group import GroupScreen

from ..unit.test_reset_flow import SPEC
from ..unit.test_reset_flow import result as previewed
from .fakes import fake_app
from .helpers import settle, text_of
from .test_mqadmin_csv_reset import IdlePlanners


def queue(qid: int, state: QueueState) -> JournalQueue:
    return JournalQueue("billing", "orders", "broker-a", "10.0.0.1:10911", qid, 10, 8, state)


class StoppableApplier:
    """Writes half the queues, then waits for the stop the console sends."""

    def __init__(self) -> None:
        self.stopped = False

    async def check(self, plan_uri: str) -> ApplyCheck:
        raise AssertionError("the check is not part of this test")

    async def apply(
        self,
        confirmed: ApplyCheck,
        *,
        accept_drift: bool,
        on_progress: Callable[[ApplyProgress], None],
        stop: asyncio.Event,
    ) -> Journal:
        on_progress(ApplyProgress(total=2, settled=1, verified=1, stage="writing"))
        await asyncio.wait_for(stop.wait(), 30)
        self.stopped = True
        return Journal(
            apply_id="20261125T000000000Z-apply-billing-0a0a0a0a",
            kind="apply",
            plan_id="p1",
            plan_hash="h",
            cluster="prod",
            paths={"billing": "server-side reset"},
            who="op@host",
            started_at_ms=0,
            queues=(queue(0, QueueState.VERIFIED), queue(1, QueueState.PENDING)),
            status=ApplyStatus.STOPPED,
            finished_at_ms=1,
            stopped_because="stopped on request",
        )


class Appliers:
    def __init__(self, applier: StoppableApplier) -> None:
        self.applier = applier

    @asynccontextmanager
    async def open(self, session: Any, config: Any) -> AsyncIterator[StoppableApplier]:
        yield self.applier


async def test_x_stops_the_writes_and_the_result_says_where(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(preview, "ClusterPlanners", IdlePlanners)
    applier = StoppableApplier()
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("g", "down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, GroupScreen)
        await pilot.press("R")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, preview.PreviewScreen)
        assert screen.check_action("cancel_plan", ()) is None  # nothing is being written
        screen.appliers = Appliers(applier)
        # As after a preview and the confirm dialog: the apply starts on its worker.
        check = cast(ApplyCheck, object())
        flow = screen.flow
        flow.begin(SPEC)
        flow.computed(previewed(), ())
        flow.begin_apply()
        flow.checked(check)
        flow.confirmed(accept_drift=False)
        screen.start_writing(check, False)
        for _ in range(200):
            if screen.check_action("cancel_plan", ()) and flow.apply_progress is not None:
                break
            await pilot.pause(0.05)
        assert "writing: 1/2 answered · 1 verified" in text_of(app, "#step")
        await pilot.press("x")
        await pilot.pause()
        assert screen.check_action("cancel_plan", ()) is None  # asked once
        await settle(pilot)
        assert applier.stopped
        assert flow.stage is Stage.APPLIED
        assert flow.journal is not None
        result = app.screen
        assert isinstance(result, ApplyResultDialog)
        assert "stopped: stopped on request" in text_of(app, "#apply-result")
