"""Undo and resume of an apply, from its journal: what `rmq-console undo | resume` do and what
the console's History screen offers, on the same services.

- **Undo**: the apply's before-image as a spec (console/domain/undo.py), planned like any reset,
  read against the cluster (apply_check.py) and applied as an apply of its own (kind "undo",
  naming the apply it reverses).
- **Resume**: every queue the journal left unverified read again (resume_check.py) and finished
  in the apply's own journal.

Either way the operator confirms what the check found, and the check is read once more right
before the writes: what is written must be what they saw. Refusals are `PlanRefused`.

Importing this module loads no planning code (pyarrow): the History screen builds its source
when it opens.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from console.config import ClusterConfig, Config
from console.domain.journal import Journal, JournalError
from console.domain.spec import ResetSpec
from console.domain.undo import undo_spec
from console.services.journal_store import JournalStore

if TYPE_CHECKING:
    from console.services.apply import ApplyProgress
    from console.services.apply_check import ApplyCheck
    from console.services.resume_check import ResumeCheck
    from console.services.spark_runner import JobProgress


def load_applied(root: Path, apply_id: str, cluster: str) -> Journal:
    """The journal of `apply_id`, made on `cluster`; PlanRefused when it is unknown, unreadable
    or another cluster's."""
    from console.services.plan_load import PlanRefused

    try:
        journal = JournalStore(root).load(apply_id)
    except (JournalError, OSError) as exc:
        raise PlanRefused([str(exc)]) from None
    if journal.cluster != cluster:
        raise PlanRefused(
            [f"apply {apply_id} was made on cluster {journal.cluster!r}, not {cluster!r}"]
        )
    return journal


@dataclass(frozen=True, slots=True)
class UndoIntent:
    """What undoing an apply plans, and what the operator should know first (queues that
    cannot be put back, queues the apply never wrote), one line each."""

    spec: ResetSpec
    notes: tuple[str, ...]


def undo_of(journal: Journal, journal_path: str) -> UndoIntent:
    """The spec that puts back what `journal` wrote; PlanRefused when nothing can be."""
    from console.services.plan_load import PlanRefused

    undo = undo_spec(journal, journal_path)
    notes = [
        f"warning: {q.group} {q.topic}/{q.broker}/{q.queue_id} had no committed offset before "
        f"the apply: RocketMQ cannot forget one queue's offset, it stays at {q.target}"
        for q in undo.unrestorable
    ]
    if undo.never_sent:
        notes.append(f"{len(undo.never_sent)} queue(s) were never written by the apply: left alone")
    if undo.spec is None:
        raise PlanRefused([*notes, f"apply {journal.apply_id} wrote no queue that can be put back"])
    back = len(journal.queues) - len(undo.unrestorable) - len(undo.never_sent)
    notes.append(f"undo of {journal.apply_id}: {back} queue(s) back to their before-image")
    return UndoIntent(undo.spec, tuple(notes))


@dataclass(frozen=True, slots=True)
class UndoCheck:
    undone: Journal  # the apply being undone
    notes: tuple[str, ...]  # see UndoIntent
    check: ApplyCheck  # the undo's plan read against the cluster


class JournalActions(Protocol):
    async def check_undo(
        self, apply_id: str, on_progress: Callable[[JobProgress], None] | None = None
    ) -> UndoCheck:
        """The undo planned and read against the cluster; PlanRefused when it cannot be."""
        ...

    async def undo(
        self,
        confirmed: UndoCheck,
        *,
        accept_drift: bool,
        on_progress: Callable[[ApplyProgress], None],
        stop: asyncio.Event,
    ) -> Journal: ...

    async def check_resume(self, apply_id: str) -> ResumeCheck:
        """What the apply left unverified, read again; PlanRefused when it cannot be resumed."""
        ...

    async def resume(
        self,
        confirmed: ResumeCheck,
        *,
        accept_drift: bool,
        on_progress: Callable[[ApplyProgress], None],
        stop: asyncio.Event,
    ) -> Journal: ...


class JournalActionSource(Protocol):
    def open(
        self, cluster: ClusterConfig, config: Config
    ) -> AbstractAsyncContextManager[JournalActions]: ...


class ClusterJournalActions:
    """The real ones: an admin client opened for writing (a read-only cluster refuses it), the
    workspace's journals, and the console's warm Spark session for the undo's plan."""

    @asynccontextmanager
    async def open(self, cluster: ClusterConfig, config: Config) -> AsyncIterator[Any]:
        from console.rocketmq.errors import ReadOnlyError
        from console.services.access import open_admin
        from console.services.appliers import local_root
        from console.services.cluster import ClusterReader
        from console.services.plan_load import PlanRefused

        root = local_root(config)
        try:
            client = open_admin(cluster, config, write=True)
        except ReadOnlyError as exc:
            raise PlanRefused([str(exc)]) from None
        async with client as admin:
            reader = ClusterReader(admin, cluster.rocketmq_cluster)
            yield _Actions(reader, config, cluster, root)


class _Actions:
    def __init__(self, reader: Any, config: Config, cluster: ClusterConfig, root: Path) -> None:
        self.reader = reader
        self.config = config
        self.cluster = cluster
        self.root = root

    def _journal(self, apply_id: str) -> Journal:
        return load_applied(self.root, apply_id, self.cluster.name)

    async def check_undo(
        self, apply_id: str, on_progress: Callable[[JobProgress], None] | None = None
    ) -> UndoCheck:
        from console.services.appliers import WorkspaceApplier
        from console.services.planners import console_planner

        journal = await asyncio.to_thread(self._journal, apply_id)
        undo = undo_of(journal, str(JournalStore(self.root).path(apply_id)))
        planner = console_planner(self.cluster, self.config, self.reader)
        result = await planner.plan(undo.spec, on_progress=on_progress)
        check = await WorkspaceApplier(self.reader, self.config, self.cluster.name).check(
            result.uri
        )
        return UndoCheck(journal, undo.notes, check)

    async def undo(
        self,
        confirmed: UndoCheck,
        *,
        accept_drift: bool,
        on_progress: Callable[[ApplyProgress], None],
        stop: asyncio.Event,
    ) -> Journal:
        from console.services.appliers import WorkspaceApplier

        applier = WorkspaceApplier(self.reader, self.config, self.cluster.name)
        return await applier.apply(
            confirmed.check,
            accept_drift=accept_drift,
            on_progress=on_progress,
            stop=stop,
            kind="undo",
            undo_of=confirmed.undone.apply_id,
        )

    async def check_resume(self, apply_id: str) -> ResumeCheck:
        from console.services.plan_load import PlanRefused
        from console.services.resume_check import check_resume

        journal = await asyncio.to_thread(self._journal, apply_id)
        if not journal.unfinished:
            raise PlanRefused([f"apply {apply_id}: every queue is verified; nothing to resume"])
        return await check_resume(self.reader, journal)

    async def resume(
        self,
        confirmed: ResumeCheck,
        *,
        accept_drift: bool,
        on_progress: Callable[[ApplyProgress], None],
        stop: asyncio.Event,
    ) -> Journal:
        from console.services.apply import Applier
        from console.services.plan_load import PlanRefused

        fresh = await self.check_resume(confirmed.journal.apply_id)
        if fresh.journal != confirmed.journal or fresh.seen() != confirmed.seen():
            raise PlanRefused(
                [
                    "the cluster or the journal changed while the resume was being confirmed: "
                    "look again"
                ]
            )
        applier = Applier(self.reader, self.root, cluster=self.cluster.name)
        try:
            return await applier.resume(
                fresh, accept_drift=accept_drift, on_progress=on_progress, stop=stop
            )
        except JournalError as exc:  # another console holds the apply's lock
            raise PlanRefused([str(exc)]) from None
