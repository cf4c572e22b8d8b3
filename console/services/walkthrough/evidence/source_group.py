"""The offsets another group would give this one: what a copy re-consumes and skips."""

from __future__ import annotations

from console.domain.walkthrough import Evidence, StepKind
from console.services.walkthrough.evidence.context import EvidenceContext, answered, gaps_of
from console.services.walkthrough.evidence.titles import TITLES


async def provide(ctx: EvidenceContext) -> Evidence:
    answer = answered(ctx, StepKind.GROUP)
    if answer is None:
        return Evidence("source-group", TITLES["source-group"], ("no source group chosen yet",))
    source = await ctx.reader.group_offsets(str(answer.value))
    mine = await ctx.offsets(fresh=True)
    theirs = {q.key: q for q in source.topic_queues if q.committed is not None}
    own = {q.key: q for q in mine.topic_queues}
    new_group = not any(q.committed is not None for q in mine.queues)
    lines = []
    if new_group:
        lines.append(
            f"{ctx.group} has no committed offsets yet: the copy creates them (the group is "
            "created, not moved)"
        )
    topics = sorted({k[0] for k in theirs})
    for topic in topics:
        keys = [k for k in theirs if k[0] == topic]
        back = ahead = 0
        for k in keys:
            current = own[k].committed if k in own else None
            target = theirs[k].committed
            if current is None or target is None:
                continue
            back += max(0, current - target)
            ahead += max(0, target - current)
        lines.append(
            f"{topic}: {len(keys)} queue(s) from {answer.value}; re-consume {back:,}, "
            f"skip {ahead:,}"
        )
    lacks = tuple(sorted(set(gaps_of(source)) | set(gaps_of(mine))))
    if lacks:
        lines.append(f"PARTIAL: {', '.join(lacks)}")
    return Evidence(
        "source-group",
        TITLES["source-group"],
        tuple(lines),
        {"new_group": new_group, "topics": topics},
        lacks,
    )
