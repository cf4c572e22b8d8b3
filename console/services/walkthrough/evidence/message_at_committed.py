"""The message the group is at on the chosen queue: the one a +1 skip gives up."""

from __future__ import annotations

from console.domain.boundary_messages import BoundaryRequest
from console.domain.walkthrough import Evidence, StepKind
from console.services.read.boundary import read_boundaries
from console.services.walkthrough.evidence.context import EvidenceContext, answered
from console.services.walkthrough.evidence.titles import TITLES
from console.services.walkthrough.guided_run import show_time


async def provide(ctx: EvidenceContext) -> Evidence:
    """The message the group is at on the chosen queue (the one a +1 skip gives up): read
    with a pull as TOOLS_CONSUMER, never as the group."""

    answer = answered(ctx, StepKind.QUEUE)
    if answer is None:
        return Evidence("message-at-committed", TITLES["message-at-committed"], ("no queue yet",))
    e = answer.extras
    committed = int(e["committed"])
    request = BoundaryRequest(e["topic"], e["broker"], int(e["queue_id"]), committed, committed + 1)
    (boundary,) = await read_boundaries(ctx.reader, [request])
    m = boundary.last_skipped
    if m is None:
        note = boundary.last_note or "could not be read"
        return Evidence(
            "message-at-committed",
            TITLES["message-at-committed"],
            (f"{answer.shown} at {committed}: {note}",),
            {},
            (note,) if boundary.unread else (),
        )
    lines = [
        f"{answer.shown} at offset {m.queue_offset}: stored {show_time(m.store_time_ms)}, "
        f"{m.size} bytes, delivered again {m.reconsume_times} time(s)",
        f"keys {' '.join(m.keys) or '-'} · tags {m.tags or '-'}",
        f"msg id {m.msg_id or '-'} · offset msg id {m.offset_msg_id}",
        "its body shows in the preview's boundary pane (never in reports or logs)",
    ]
    nxt = boundary.first
    if nxt is not None:
        lines.append(f"next: offset {nxt.queue_offset} stored {show_time(nxt.store_time_ms)}")
    return Evidence(
        "message-at-committed",
        TITLES["message-at-committed"],
        tuple(lines),
        {"offset": m.queue_offset, "msg_id": m.msg_id or m.offset_msg_id},
    )
