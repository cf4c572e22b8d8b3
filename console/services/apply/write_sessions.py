"""The console's door to the apply session: how its screens start a write.

`make_app` receives a `WriteSessions`; the preview (and the walkthroughs through it) and History
ask it for an intent (apply a plan, undo or resume an apply) and run it, rendering the session's
events and answering its confirmation with the dialog. `ClusterWrites` is the real one: the
session opens its write access on the cluster (refused when read-only), and an undo is planned on
the console's warm Spark session. Tests hand `make_app` one of their own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from console.config import ClusterConfig, Config
from console.services.apply.events import Tell
from console.services.apply.session import Confirm, Intent, SessionResult, run_session
from console.services.plan.preview_planners import console_planner

if TYPE_CHECKING:
    from console.services.apply.journal_actions import UndoIntent
    from console.services.infra.spark_jobs import JobProgress
    from console.services.read.reader import ClusterReader


class WriteSessions(Protocol):
    def apply_plan(self, plan_uri: str) -> Intent: ...

    def undo(self, apply_id: str) -> Intent: ...

    def resume(self, apply_id: str) -> Intent: ...

    async def run(
        self,
        cluster: ClusterConfig,
        intent: Intent,
        confirm: Confirm,
        tell: Tell,
        stop: asyncio.Event,
    ) -> SessionResult: ...


class ClusterWrites:
    def __init__(self, config: Config) -> None:
        self.config = config

    def apply_plan(self, plan_uri: str) -> Intent:
        # deferred: an intent's checks and the planner load when the console first writes, not
        # with its first frame (which imports this module)
        from console.services.apply.intents import ApplyPlan

        return ApplyPlan(plan_uri)

    def undo(self, apply_id: str) -> Intent:
        # deferred: an intent's checks and the planner load when the console first writes, not
        # with its first frame (which imports this module)
        from console.services.apply.intents import UndoApply

        return UndoApply(apply_id, plan_on_console)

    def resume(self, apply_id: str) -> Intent:
        # deferred: an intent's checks and the planner load when the console first writes, not
        # with its first frame (which imports this module)
        from console.services.apply.intents import ResumeApply

        return ResumeApply(apply_id)

    async def run(
        self,
        cluster: ClusterConfig,
        intent: Intent,
        confirm: Confirm,
        tell: Tell,
        stop: asyncio.Event,
    ) -> SessionResult:
        return await run_session(cluster, self.config, intent, confirm, tell, stop)


async def plan_on_console(
    cluster: ClusterConfig,
    config: Config,
    reader: ClusterReader,
    undo: UndoIntent,
    progress: Callable[[JobProgress], object],
) -> str:
    """The undo's plan, on the console's shared warm Spark session; its URI."""
    planner = console_planner(cluster, config, reader)
    result = await planner.plan(undo.spec, on_progress=progress)
    return result.uri
