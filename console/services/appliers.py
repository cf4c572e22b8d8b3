"""Applies for the console: the preview's plan checked against the cluster, confirmed by the
operator, then written, on a worker's event loop.

The screen asks an `ApplierSource` for an applier; the real one (`ClusterAppliers`) opens an
admin client for writing (refused on a read-only cluster) and keeps the journal and the audit
log in the workspace, exactly as `rmq-console apply` does. Tests hand the screen a source of
their own.

The check the operator confirmed is read again right before writing: the cluster may have moved
while they typed the group name, and what is written must be what they saw.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from console.config import Config
from console.services.session import ClusterSession

if TYPE_CHECKING:
    from console.domain.journal import Journal
    from console.services.apply import ApplyProgress
    from console.services.apply_check import ApplyCheck


class PlanApplier(Protocol):
    async def check(self, plan_uri: str) -> ApplyCheck:
        """The plan loaded (hash, cluster, age) and read against the cluster; PlanRefused when
        it cannot be applied at all."""
        ...

    async def apply(
        self,
        confirmed: ApplyCheck,
        *,
        accept_drift: bool,
        on_progress: Callable[[ApplyProgress], None],
        stop: asyncio.Event,
    ) -> Journal: ...


class ApplierSource(Protocol):
    def open(
        self, session: ClusterSession, config: Config
    ) -> AbstractAsyncContextManager[PlanApplier]: ...


class ClusterAppliers:
    @asynccontextmanager
    async def open(self, session: ClusterSession, config: Config) -> AsyncIterator[Any]:
        from console.services.access import open_admin
        from console.services.cluster import ClusterReader

        cluster = session.cluster
        async with open_admin(cluster, config, write=True) as admin:
            yield WorkspaceApplier(
                ClusterReader(admin, cluster.rocketmq_cluster), config, cluster.name
            )


class WorkspaceApplier:
    """Plans of the workspace checked and applied through one reader opened for writing; the
    journal and the audit log go in the workspace. An undo is applied as an apply of its own
    (`kind="undo"`, naming the apply it reverses)."""

    def __init__(self, reader: Any, config: Config, cluster: str) -> None:
        self.reader = reader
        self.config = config
        self.cluster = cluster

    async def check(self, plan_uri: str) -> ApplyCheck:
        from console.services.apply_check import check_apply
        from console.services.plan_load import load_plan
        from console.services.workspace import Workspace

        workspace = Workspace(self.config.workspace_path)
        now_ms = int(time.time() * 1000)
        plan = await asyncio.to_thread(
            load_plan, workspace, plan_uri, cluster=self.cluster, now_ms=now_ms
        )
        return await check_apply(self.reader, plan)

    async def apply(
        self,
        confirmed: ApplyCheck,
        *,
        accept_drift: bool,
        on_progress: Callable[[ApplyProgress], None],
        stop: asyncio.Event,
        kind: str = "apply",
        undo_of: str | None = None,
    ) -> Journal:
        from console.services.apply import Applier
        from console.services.plan_load import PlanRefused

        root = local_root(self.config)
        fresh = await self.check(confirmed.plan.uri)
        if _seen(fresh) != _seen(confirmed):
            raise PlanRefused(
                [
                    "the cluster moved while the apply was being confirmed (offsets, consumers "
                    "or the reset path changed): look at the preview again"
                ]
            )
        applier = Applier(self.reader, root, cluster=self.cluster)
        return await applier.apply(
            fresh,
            accept_drift=accept_drift,
            kind=kind,
            undo_of=undo_of,
            on_progress=on_progress,
            stop=stop,
        )


def local_root(config: Config) -> Path:
    """The workspace folder that holds journals and the audit log; PlanRefused when the
    workspace is not on this machine."""
    from console.services.plan_load import PlanRefused
    from console.services.workspace import Workspace

    root = Workspace(config.workspace_path).local_root
    if root is None:
        raise PlanRefused(
            ["the workspace is not on this machine: an apply keeps its journal there"]
        )
    return root


def _seen(check: ApplyCheck) -> tuple[object, ...]:
    """What the operator confirmed: every queue's target and, for a group nobody consumes, its
    offset before (online groups move on by themselves); each group's path and consumers; the
    drift and what blocks."""
    offline = {g.group for g in check.groups if not g.consumers_online}
    return (
        tuple(
            (w.key, w.before if w.row.group in offline else None, w.target) for w in check.writes
        ),
        tuple((g.group, g.path.kind, g.consumers_online) for g in check.groups),
        tuple(d.line() for d in check.drift),
        check.blockers,
    )
