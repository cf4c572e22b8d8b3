"""What an apply session writes (console/services/apply/session.py): a plan of the workspace
(`ApplyPlan`), the undo of an apply (`UndoApply`: its before-image planned like any reset, then
applied as an apply of its own), or the rest of an apply that stopped part-way (`ResumeApply`).
Each is prepared once, read against the cluster twice (the check, and the re-check after the
confirmation) and written once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from console.config import ClusterConfig, Config
from console.domain.journal import ApplyProgress, Journal, JournalQueue
from console.errors import Refused
from console.services.apply.check import ApplyCheck, check_apply
from console.services.apply.events import Tell, UndoPlanProgressed
from console.services.apply.journal_actions import UndoCheck, UndoIntent, load_applied, undo_of
from console.services.apply.resume_check import ResumeCheck, check_resume, rolled_back_of
from console.services.apply.write_check import WriteCheck
from console.services.infra.journal_store import JournalStore
from console.services.infra.workspace import Workspace
from console.services.plan.load import DEFAULT_MAX_AGE_S, LoadedPlan, age_refusal, load_plan

if TYPE_CHECKING:
    from console.services.apply.write_access import WriteAccess
    from console.services.apply.writer import Applier
    from console.services.infra.spark_jobs import JobProgress
    from console.services.read.reader import ClusterReader


class ApplyPlan:
    """Apply a plan of the workspace (by id or directory), or one loaded already."""

    kind = "apply"

    def __init__(
        self,
        plan: str | LoadedPlan,
        *,
        max_age_s: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.ref = plan
        self.max_age_s = max_age_s
        self.clock = clock
        self.plan: LoadedPlan | None = None if isinstance(plan, str) else plan

    async def prepare(self, access: WriteAccess, tell: Tell) -> Journal | None:
        if isinstance(self.ref, str):
            self.plan = await asyncio.to_thread(_load, access, self.ref, self.clock, self.max_age_s)
        return None

    async def read(self, access: WriteAccess) -> WriteCheck:
        assert self.plan is not None, "prepared first"
        # Read again after the confirmation too: a prompt left waiting can outlive the plan.
        max_age_s = DEFAULT_MAX_AGE_S if self.max_age_s is None else self.max_age_s
        too_old = age_refusal(
            self.plan.header, now_ms=int(self.clock() * 1000), max_age_s=max_age_s
        )
        if too_old is not None:
            raise Refused([too_old])
        return await check_apply(access.reader, self.plan)

    async def write(
        self,
        applier: Applier,
        check: WriteCheck,
        *,
        accept_drift: bool,
        on_progress: Callable[[ApplyProgress], object],
        stop: asyncio.Event,
    ) -> Journal:
        assert isinstance(check, ApplyCheck)
        return await applier.apply(
            check, accept_drift=accept_drift, kind=self.kind, on_progress=on_progress, stop=stop
        )


#: Plans an undo's spec on a cluster (read through the reader given) and returns the plan's URI
#: (the CLI prints the plan; the console plans on its warm Spark session); Refused when no whole
#: plan came of it.
UndoPlanner = Callable[
    [
        ClusterConfig,
        Config,
        "ClusterReader",
        "UndoIntent",
        Callable[["JobProgress"], object],
    ],
    Awaitable[str],
]


class UndoApply:
    """Put back what an apply wrote: its before-image planned like any reset, then applied as
    an apply of its own that names the apply it reverses."""

    kind = "undo"

    def __init__(
        self, apply_id: str, planner: UndoPlanner, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.apply_id = apply_id
        self.planner = planner
        self.clock = clock
        self.undone: Journal | None = None
        self.notes: tuple[str, ...] = ()
        self.plan: LoadedPlan | None = None

    async def prepare(self, access: WriteAccess, tell: Tell) -> Journal | None:
        root, cluster = access.root, access.cluster.name
        journal = await asyncio.to_thread(load_applied, root, self.apply_id, cluster)
        intent = undo_of(journal, str(JournalStore(root).path(journal.apply_id)))
        uri = await self.planner(
            access.cluster,
            access.config,
            access.reader,
            intent,
            lambda progress: tell(UndoPlanProgressed(progress)),
        )
        self.plan = await asyncio.to_thread(_load, access, uri, self.clock, None)
        self.undone, self.notes = journal, intent.notes
        return None

    async def read(self, access: WriteAccess) -> WriteCheck:
        assert self.plan is not None, "prepared first"
        assert self.undone is not None
        check = await check_apply(access.reader, self.plan)
        return UndoCheck(self.undone, self.notes, check)

    async def write(
        self,
        applier: Applier,
        check: WriteCheck,
        *,
        accept_drift: bool,
        on_progress: Callable[[ApplyProgress], object],
        stop: asyncio.Event,
    ) -> Journal:
        assert isinstance(check, UndoCheck)
        return await applier.apply(
            check.check,
            accept_drift=accept_drift,
            kind=self.kind,
            undo_of=check.undone.apply_id,
            on_progress=on_progress,
            stop=stop,
        )


class ResumeApply:
    """Finish an apply that stopped part-way, in its own journal."""

    kind = "resume"

    def __init__(self, apply_id: str) -> None:
        self.apply_id = apply_id
        self.journal: Journal | None = None
        #: Queues it verified that a switch may have rolled back since (resume_check.py).
        self.rolled_back_of: tuple[JournalQueue, ...] = ()

    async def prepare(self, access: WriteAccess, tell: Tell) -> Journal | None:
        journal = await asyncio.to_thread(
            load_applied, access.root, self.apply_id, access.cluster.name
        )
        self.journal = journal
        self.rolled_back_of = await asyncio.to_thread(_rolled_back_of, access.root, journal)
        if journal.unfinished:
            return None
        if self.rolled_back_of:
            # Every queue verified: only what a switch rolled back is left, read now.
            check = await self.read(access)
            if check.writes or check.blockers:
                return None
        return journal

    async def read(self, access: WriteAccess) -> WriteCheck:
        assert self.journal is not None, "prepared first"
        return await check_resume(access.reader, self.journal, self.rolled_back_of)

    async def write(
        self,
        applier: Applier,
        check: WriteCheck,
        *,
        accept_drift: bool,
        on_progress: Callable[[ApplyProgress], object],
        stop: asyncio.Event,
    ) -> Journal:
        assert isinstance(check, ResumeCheck)
        return await applier.resume(
            check, accept_drift=accept_drift, on_progress=on_progress, stop=stop
        )


def _rolled_back_of(root: Path, journal: Journal) -> tuple[JournalQueue, ...]:
    later = [j for j in JournalStore(root).all() if isinstance(j, Journal)]
    return rolled_back_of(journal, later)


def _load(
    access: WriteAccess, ref: str, clock: Callable[[], float], max_age_s: float | None
) -> LoadedPlan:
    return load_plan(
        Workspace(access.config.workspace_path),
        ref,
        cluster=access.cluster.name,
        now_ms=int(clock() * 1000),
        max_age_s=DEFAULT_MAX_AGE_S if max_age_s is None else max_age_s,
    )
