"""The group now: its topics' queues, lag, retry and dead letters, what could not be read."""

from __future__ import annotations

from console.domain.walkthrough import Evidence
from console.rocketmq.topics import dlq_topic, retry_topic
from console.services.walkthrough.evidence.context import EvidenceContext, gaps_of, lag_text
from console.services.walkthrough.evidence.titles import TITLES


async def provide(ctx: EvidenceContext) -> Evidence:
    o = await ctx.offsets()
    partial = o.partial
    topics = sorted({q.topic for q in o.topic_queues})
    lines = []
    if o.client_local:
        lines.append(f"{ctx.group} is BROADCASTING: each client keeps its own offsets")
    for topic in topics:
        qs = [q for q in o.topic_queues if q.topic == topic]
        lags = [q.lag for q in qs if q.lag is not None]
        unknown = sum(1 for q in qs if q.committed is None)
        brokers = len({q.broker for q in qs})
        extra = f", {unknown} never committed" if unknown else ""
        lines.append(
            f"{topic}: {len(qs)} queue(s) on {brokers} broker(s), lag "
            f"{lag_text(sum(lags), partial)}{extra}"
        )
    if o.retry_queues:
        lines.append(f"{retry_topic(ctx.group)}: retry backlog {o.retry_backlog:,}")
    if o.dlq_messages:
        lines.append(f"{dlq_topic(ctx.group)}: {o.dlq_messages:,} dead-lettered message(s)")
    below = o.below_min_queues
    if below:
        lines.append(f"{below} queue(s) committed below the min offset (messages deleted)")
    if partial:
        lines.append(f"PARTIAL: {', '.join(gaps_of(o))}")
    total = None if not o.answered else o.total_lag
    return Evidence(
        "group",
        TITLES["group"],
        tuple(lines) or ("no queues",),
        {"topics": topics, "lag": total, "partial": partial},
        gaps_of(o),
    )
