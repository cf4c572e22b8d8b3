"""Stuck queues: committed offsets that do not move while messages wait."""

from __future__ import annotations

from console.domain.stuck import Finding
from console.domain.walkthrough import Evidence
from console.services.read.group_watch import watch_group
from console.services.walkthrough.evidence.context import SHOWN_QUEUES, EvidenceContext, lag_text
from console.services.walkthrough.evidence.titles import TITLES
from console.services.walkthrough.guided_run import queue_name


async def provide(ctx: EvidenceContext) -> Evidence:
    """Queues whose committed offset did not move while messages waited and clients were
    online, or whose retry topic grew: read a few times over the watch window."""

    report = await watch_group(ctx.reader, ctx.group, seconds=ctx.watch_s)
    lines = [
        f"watched {report.seconds:.0f}s over {report.reads} reads: {len(report.stuck)} stuck, "
        f"{len(report.clear)} moving or caught up, {len(report.unknown)} unknown"
    ]
    names: list[str] = []
    for i, q in enumerate(report.stuck, 1):
        name = queue_name(q.topic, q.broker, q.queue_id)
        names.append(name)
        what = "committed unchanged" if q.kind is Finding.STALLED else "retry topic growing"
        lines.append(
            f"{i}. {name}: {what} at {q.committed}, lag {lag_text(q.lag, False)}, "
            f"{q.arrived} arrived meanwhile"
            + (f", retry +{q.retry_growth}" if q.retry_growth else "")
        )
        if q.cache is not None:
            warn = " (restart that consumer after the skip)" if q.cache.flow_controlled else ""
            lines.append(f"   {q.cache.line()}{warn}")
    for u in report.unknown[:SHOWN_QUEUES]:
        lines.append(f"   unknown: {queue_name(u.topic, u.broker, u.queue_id)}: {u.why}")
    if report.online is False:
        lines.append("no consumer online: nothing can be stuck consuming; the lag is not consumed")
    if not report.stuck:
        lines.append("no stuck queue found in this window: watch longer or look at the lag chart")
    lacks = tuple(sorted({*report.missing, *report.cache_missing}))
    return Evidence(
        "stuck", TITLES["stuck"], tuple(lines), {"queues": names, "count": len(names)}, lacks
    )
