"""`x` while an apply writes: the console asks the apply session (on its worker's loop) to send
no more writes, says so while what was sent is read back, and shows where it stopped. The stop
itself (no more writes, the journal's record) is the writer's, proven against the real brokers
with ctrl-c at a terminal (tests/integration/test_apply_killed.py); this is the console's part,
through the real session with a scripted check and write.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from console.domain.journal import ApplyProgress, ApplyStatus, Journal, JournalQueue, QueueState
from console.services.apply.write_check import WriteCheck
from console.services.plan.preview_flow import Stage
from console.ui.screens import preview
from console.ui.screens.apply import ApplyResultDialog, ConfirmApplyDialog
from console.ui.screens.group import GroupScreen
from tests.support.checks import plain_check
from tests.support.flows import SPEC
from tests.support.flows import result as previewed
from tests.support.writes import ScriptedWrites

from .fakes import STAGING, fake_app, fake_services
from .helpers import settle, text_of, until


def queue(qid: int, state: QueueState) -> JournalQueue:
    return JournalQueue("billing", "orders", "broker-a", "10.0.0.1:10911", qid, 10, 8, state)


async def test_x_stops_the_writes_and_the_result_says_where(tmp_path: Path) -> None:
    stopped: list[bool] = []

    async def write(
        kind: str,
        check: WriteCheck,
        on_progress: Callable[[ApplyProgress], object],
        stop: asyncio.Event,
    ) -> Journal:
        """Writes half the queues, then waits for the stop the console sends."""
        on_progress(ApplyProgress(total=2, settled=1, verified=1, stage="writing"))
        await asyncio.wait_for(stop.wait(), 30)
        stopped.append(True)
        return Journal(
            apply_id="20261125T000000000Z-apply-billing-0a0a0a0a",
            kind="apply",
            plan_id="p1",
            plan_hash="h",
            cluster="staging",
            paths={"billing": "server-side reset"},
            who="op@host",
            started_at_ms=0,
            queues=(queue(0, QueueState.VERIFIED), queue(1, QueueState.PENDING)),
            status=ApplyStatus.STOPPED,
            finished_at_ms=1,
            stopped_because="stopped on request",
        )

    writes = ScriptedWrites(tmp_path, lambda kind, ref: plain_check(), write)
    app, _ = fake_app(open_cluster=STAGING, services=fake_services(writes=writes))
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
        # As after a preview: a plan is shown, and the operator applies it.
        flow = screen.flow
        flow.begin(SPEC)
        flow.computed(previewed(), ())
        screen.action_apply()
        await until(pilot, lambda: isinstance(app.screen, ConfirmApplyDialog))
        await pilot.click("#confirm-group")
        await pilot.press(*"billing", "enter")
        await until(pilot, lambda: flow.apply_progress is not None)
        assert screen.check_action("cancel_plan", ())
        assert "writing: 1/2 answered · 1 verified" in text_of(app, "#step")
        await pilot.press("x")
        await pilot.pause()
        assert screen.check_action("cancel_plan", ()) is None  # asked once
        await settle(pilot)
        assert stopped == [True]
        assert writes.calls == [("apply", "file:///ws/plans/p1", False)]
        assert flow.stage is Stage.APPLIED
        assert flow.journal is not None
        assert isinstance(app.screen, ApplyResultDialog)
        assert "stopped: stopped on request" in text_of(app, "#apply-result")
