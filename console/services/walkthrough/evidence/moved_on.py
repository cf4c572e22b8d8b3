"""After an apply: did online consumers take up the new offsets and consume past them."""

from __future__ import annotations

from console.domain.journal import QueueState
from console.domain.moved_on import Progress
from console.domain.walkthrough import Evidence
from console.services.read.group_watch import wait_moved_on
from console.services.walkthrough.evidence.context import SHOWN_QUEUES, EvidenceContext, missing_of
from console.services.walkthrough.evidence.titles import TITLES
from console.services.walkthrough.guided_run import queue_name


async def provide(ctx: EvidenceContext) -> Evidence:
    """After an apply: whether online consumers took the new offsets up and consumed past them
    (a read-back only proves the broker holds the target; a consumer that never pulls again
    would leave it there), or, with nobody online, that the offsets wait at their targets."""

    journal = ctx.run.journal
    if journal is None:
        return Evidence("moved-on", TITLES["moved-on"], ("nothing was applied",))
    targets = {
        (q.topic, q.broker, q.queue_id): q.target
        for q in journal.queues
        if q.group == ctx.group and q.state is QueueState.VERIFIED
    }
    o = await ctx.offsets(fresh=True)
    if not o.clients:
        return Evidence(
            "moved-on",
            TITLES["moved-on"],
            (
                f"no consumer online: {len(targets)} queue(s) wait at their targets for the next "
                "start",
            ),
            {"online": False, "moved": 0, "not_moved": 0},
        )
    report = await wait_moved_on(ctx.reader, ctx.group, targets, timeout=ctx.moved_on_s)
    moved = [q for q in report.queues if q.state is Progress.MOVED_ON]
    # Nothing after the target yet is not a failure to move on: nothing shows either way.
    waiting = [q for q in report.queues if q.state is Progress.NOTHING_AFTER]
    stuck = [q for q in report.queues if q not in moved and q not in waiting]
    lines = [
        f"{len(moved)}/{len(report.queues)} queue(s) consumed past their targets within "
        f"{report.seconds:.0f}s"
    ]
    if waiting:
        lines.append(f"{len(waiting)} queue(s) at their targets with no message after them yet")
    for q in stuck[:SHOWN_QUEUES]:
        lines.append(
            f"  {queue_name(q.topic, q.broker, q.queue_id)}: {q.state} ({q.target}); the "
            "consumer may not have pulled since: if it holds a full cache, restart it"
        )
    return Evidence(
        "moved-on",
        TITLES["moved-on"],
        tuple(lines),
        {"online": True, "moved": len(moved), "not_moved": len(stuck)},
        tuple(missing_of(report.gaps)),
    )
