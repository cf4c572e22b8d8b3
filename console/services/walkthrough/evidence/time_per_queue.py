"""The answered time, queue by queue: where each queue goes, and what comes again."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from console.domain.boundary_messages import BoundaryRequest
from console.domain.offsets import QueueKey, QueueOffsets
from console.domain.walkthrough import Evidence, StepKind
from console.services.read.boundary import read_boundaries
from console.services.walkthrough.evidence.context import (
    EvidenceContext,
    answered,
    gaps_of,
    queue_lines,
    search_all,
)
from console.services.walkthrough.evidence.titles import TITLES
from console.services.walkthrough.guided_run import local_zone, queue_name, show_time


async def provide(ctx: EvidenceContext) -> Evidence:
    """The answered time resolved per queue: where each queue goes and how many messages come
    again; a queue still before that time would skip messages instead, and is named."""
    answer = answered(ctx, StepKind.TIME)
    if answer is None:
        return Evidence("time-per-queue", TITLES["time-per-queue"], ("no time given yet",))
    at_ms = int(answer.value)
    o = await ctx.offsets(fresh=True)
    queues = [q for q in o.topic_queues if q.committed is not None]
    found, lacks = await search_all(ctx, queues, at_ms)
    lines = [f"{answer.shown}, local zone {local_zone()}"]
    firsts = await _first_messages(ctx, queues, found)
    per_queue: list[str] = []
    replay = skip = 0
    ahead: list[str] = []
    for q in queues:
        target = found.get(q.key)
        if target is None or q.committed is None:
            continue
        name = queue_name(*q.key)
        if target <= q.committed:
            replay += q.committed - target
            per_queue.append(
                f"{name}: {q.committed} -> {target} ({q.committed - target:,} again)"
                + firsts.get(q.key, "")
            )
        else:
            skip += target - q.committed
            ahead.append(name)
            per_queue.append(
                f"{name}: {q.committed} -> {target} (SKIPS {target - q.committed:,}: the group "
                "is still before that time here)"
            )
    lines.append(f"{replay:,} message(s) delivered again over {len(found)} queue(s)")
    if ahead:
        lines.append(
            f"{len(ahead)} queue(s) are still before that time: the reset would skip {skip:,} "
            "message(s) not yet consumed there; limit the topics or choose an earlier time"
        )
    lines += queue_lines(per_queue)
    unknown = [queue_name(*q.key) for q in o.topic_queues if q.committed is None]
    if unknown:
        lines.append(f"{len(unknown)} queue(s) never committed: left alone")
    gaps = tuple(sorted(set(gaps_of(o)) | set(lacks)))
    if gaps:
        lines.append(f"PARTIAL: {', '.join(gaps)}")
    return Evidence(
        "time-per-queue",
        TITLES["time-per-queue"],
        tuple(lines),
        {"replay": replay, "skip": skip, "targets": {queue_name(*k): v for k, v in found.items()}},
        gaps,
    )


async def _first_messages(
    ctx: EvidenceContext, queues: Sequence[QueueOffsets], targets: Mapping[QueueKey, int]
) -> dict[QueueKey, str]:
    """`; first: 10:05:02 keys K` for each queue going back: the message it is delivered first
    (read with a pull as TOOLS_CONSUMER, never as the group)."""

    wanted = [
        BoundaryRequest(q.topic, q.broker, q.queue_id, q.committed, targets[q.key])
        for q in queues
        if q.key in targets and q.committed is not None and targets[q.key] < q.committed
    ]
    out: dict[QueueKey, str] = {}
    for b in await read_boundaries(ctx.reader, wanted):
        m = b.first
        if m is None:
            out[b.request.key] = f"; first: {b.first_note}"
        else:
            keys = f" keys {' '.join(m.keys)}" if m.keys else ""
            out[b.request.key] = f"; first stored {show_time(m.store_time_ms)}{keys}"
    return out
