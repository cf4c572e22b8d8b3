"""Produce and consume rates: the group read twice, the watch window apart."""

from __future__ import annotations

import asyncio

from console.domain.walkthrough import Evidence
from console.services.walkthrough.evidence.context import EvidenceContext, gaps_of
from console.services.walkthrough.evidence.titles import TITLES


async def provide(ctx: EvidenceContext) -> Evidence:
    first = await ctx.offsets(fresh=True)
    await asyncio.sleep(ctx.watch_s)
    second = await ctx.offsets(fresh=True)
    seconds = max(0.001, (second.taken_at_ms - first.taken_at_ms) / 1000)
    before = {q.key: q for q in first.topic_queues}
    produced = consumed = 0
    compared = 0
    for q in second.topic_queues:
        b = before.get(q.key)
        if b is None:
            continue
        compared += 1
        produced += max(0, q.max_offset - b.max_offset)
        if q.committed is not None and b.committed is not None:
            consumed += q.committed - b.committed
    lacks = tuple(sorted(set(gaps_of(first)) | set(gaps_of(second))))
    lines = [
        f"over {seconds:.0f}s on {compared} queue(s): {produced / seconds:.1f} msg/s produced, "
        f"{consumed / seconds:.1f} msg/s consumed",
    ]
    change = second.total_lag - first.total_lag
    lines.append(
        f"lag {'grew' if change > 0 else 'fell' if change < 0 else 'held'} by "
        f"{abs(change):,} ({first.total_lag:,} -> {second.total_lag:,})"
    )
    if lacks:
        lines.append(f"PARTIAL: rates cover what was read; missing {', '.join(lacks)}")
    return Evidence(
        "rates",
        TITLES["rates"],
        tuple(lines),
        {"produced_per_s": produced / seconds, "consumed_per_s": consumed / seconds},
        lacks,
    )
