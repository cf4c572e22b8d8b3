"""Snapshots of the group, applies and undos of it, and its lag history, from the
workspace."""

from __future__ import annotations

import asyncio

from console.domain.journal import Journal, QueueState
from console.domain.walkthrough import Evidence
from console.services.infra.journal_store import JournalStore
from console.services.read.lag_history import LagHistory
from console.services.walkthrough.evidence.context import EvidenceContext
from console.services.walkthrough.evidence.titles import TITLES
from console.services.walkthrough.guided_run import show_time


async def provide(ctx: EvidenceContext) -> Evidence:
    return await asyncio.to_thread(_history_now, ctx)


def _history_now(ctx: EvidenceContext) -> Evidence:
    # deferred: pyarrow (snapshots are Parquet files)
    from console.services.read.snapshots import SnapshotStore

    store = SnapshotStore(ctx.workspace)
    refs = [r for r in store.history(ctx.run.cluster)][-20:]
    mine = [r for r in refs if ctx.group in store.groups_in(r)][-8:]
    lines = [f"snapshot {r.snapshot_id} taken {show_time(r.taken_at_ms)}" for r in mine]
    if not mine:
        lines.append(f"no snapshot of {ctx.group} in the workspace")
    root = ctx.workspace.local_root
    if root is not None:
        journals = [j for j in JournalStore(root).all() if isinstance(j, Journal)]
        for j in journals:
            if any(q.group == ctx.group for q in j.queues):
                lines.append(
                    f"{j.kind} {j.apply_id} at {show_time(j.started_at_ms)}: "
                    f"{j.count(QueueState.VERIFIED)}/{len(j.queues)} verified ({j.status})"
                )
    if root is not None:
        series = LagHistory(root).series(ctx.run.cluster, ctx.group)
        if series.points:
            first, last = series.points[0], series.points[-1]
            lines.append(
                f"lag history: {len(series.points)} sample(s) of its committed offsets, "
                f"{show_time(first.at_ms)} .. {show_time(last.at_ms)}"
            )
    latest = mine[-1].snapshot_id if mine else None
    return Evidence("history", TITLES["history"], tuple(lines), {"latest_snapshot": latest})
