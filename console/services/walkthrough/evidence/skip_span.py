"""What a skip forward gives up: how many messages, stored over which span."""

from __future__ import annotations

import asyncio
from typing import Any

from console.domain.offsets import GroupOffsets
from console.domain.walkthrough import Evidence, StepKind
from console.services.walkthrough.evidence.context import (
    EvidenceContext,
    answered,
    gaps_of,
    search_all,
)
from console.services.walkthrough.evidence.titles import TITLES
from console.services.walkthrough.guided_run import show_time


async def provide(ctx: EvidenceContext) -> Evidence:
    """What a skip forward gives up: per topic, how many messages and stored over which span
    (from the oldest unconsumed one to the newest, or to the time given)."""
    answer = answered(ctx, StepKind.TARGET)
    if answer is None:
        return Evidence("skip-span", TITLES["skip-span"], ("no target given yet",))
    at_ms = answer.extras.get("ms")
    o = await ctx.offsets(fresh=True)
    queues = [q for q in o.topic_queues if q.committed is not None]
    if at_ms is None and answer.value == "earliest":
        return Evidence(
            "skip-span",
            TITLES["skip-span"],
            ("earliest goes back to the oldest kept message: nothing is skipped",),
        )
    found, lacks = await search_all(ctx, queues, int(at_ms)) if at_ms else ({}, [])
    spans = await _spans(ctx, o)
    lines = []
    total = 0
    for topic in sorted({q.topic for q in queues}):
        skipped = 0
        oldest: int | None = None
        newest: int | None = None
        for q in (q for q in queues if q.topic == topic):
            assert q.committed is not None
            target = q.max_offset if at_ms is None else found.get(q.key)
            if target is None or target <= q.committed:
                continue
            skipped += target - q.committed
            span = spans.get(q.key)
            if span is not None:
                first = ctx.now_ms() - span.delay_ms if span.delay_ms else None
                oldest = first if oldest is None or (first and first < oldest) else oldest
                end = span.max_timestamp if at_ms is None else int(at_ms)
                newest = end if newest is None or end > newest else newest
        total += skipped
        when = ""
        if oldest and newest:
            when = f", stored {show_time(oldest)} .. {show_time(newest)}"
        lines.append(f"{topic}: skips {skipped:,} message(s){when}")
    lines.insert(0, f"{total:,} message(s) skipped, never delivered to {ctx.group}")
    gaps = tuple(sorted(set(gaps_of(o)) | set(lacks)))
    if gaps:
        lines.append(f"PARTIAL: at least this many; missing {', '.join(gaps)}")
    return Evidence("skip-span", TITLES["skip-span"], tuple(lines), {"skipped": total}, gaps)


async def _spans(ctx: EvidenceContext, o: GroupOffsets) -> dict[tuple[str, str, int], Any]:
    addrs = await ctx.addrs()
    pairs = sorted({(q.broker, q.topic) for q in o.topic_queues})
    answers = await asyncio.gather(
        *(
            ctx.reader.admin.consume_time_span(addrs[b], t, ctx.group)
            for b, t in pairs
            if b in addrs
        ),
        return_exceptions=True,
    )
    out: dict[tuple[str, str, int], Any] = {}
    for a in answers:
        if isinstance(a, dict):
            out.update({(mq.topic, mq.broker_name, mq.queue_id): s for mq, s in a.items()})
    return out
