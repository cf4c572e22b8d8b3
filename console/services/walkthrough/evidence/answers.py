"""Answers that need the cluster (a group, a snapshot or a time, a queue, topics), checked
before anything is planned from them; the rest are checked without it (runner.py)."""

from __future__ import annotations

import asyncio

from console.domain.plan import stamp
from console.domain.triage import missing
from console.domain.walkthrough import StepKind
from console.rocketmq.errors import NotFoundError
from console.services.read.lag_history import LagHistory
from console.services.read.snapshot_errors import SnapshotNotFound
from console.services.walkthrough.evidence.context import EvidenceContext
from console.services.walkthrough.guided_run import (
    Answer,
    AnswerError,
    check_plain_answer,
    parse_time,
    show_time,
)


async def check_answer(ctx: EvidenceContext, step_id: str, text: str) -> Answer | None:
    """The answer to a step, checked against the cluster where its kind needs it; None for an
    optional step left blank. AnswerError says what is wrong; nothing is planned from it."""
    step = ctx.run.walkthrough.step(step_id)
    t = text.strip() or (step.default or "")
    if not t:
        if step.optional:
            return None
        raise AnswerError("an answer is needed here")
    now = ctx.now_ms()
    if step.kind is StepKind.GROUP:
        return await _check_group(ctx, t)
    if step.kind is StepKind.SNAPSHOT:
        return await asyncio.to_thread(_check_snapshot, ctx, t, now)
    if step.kind is StepKind.QUEUE:
        return await _check_queue(ctx, step.choices_from or "", t)
    if step.kind is StepKind.TOPICS:
        return await _check_topics(ctx, t)
    return check_plain_answer(step, t, now)


async def _check_group(ctx: EvidenceContext, name: str) -> Answer:
    if name == ctx.group:
        raise AnswerError(f"{name} is the group being reset; name another group")
    try:
        source = await ctx.reader.group_offsets(name)
    except NotFoundError:
        raise AnswerError(f"no consumer group {name!r} on cluster {ctx.run.cluster}") from None
    committed = [q for q in source.topic_queues if q.committed is not None]
    if not committed:
        if source.partial:
            lacks = ", ".join(missing(source))
            raise AnswerError(f"{name}: nothing could be read of its offsets ({lacks})")
        raise AnswerError(f"{name} has nothing committed: there are no offsets to copy")
    shown = name if not source.partial else f"{name} (partial read: {', '.join(missing(source))})"
    return Answer(name, name, shown, {"queues": len(committed)})


def _check_snapshot(ctx: EvidenceContext, text: str, now_ms: int) -> Answer:
    """A snapshot id, or a time: the newest snapshot of the group taken at or before it. The
    value is the strategy (`to-snapshot`)."""
    # deferred: pyarrow (snapshots are Parquet files)
    from console.services.read.snapshots import SnapshotStore

    store = SnapshotStore(ctx.workspace)
    cluster = ctx.run.cluster
    refs = store.history(cluster)
    by_id = next((r for r in refs if r.snapshot_id == text), None)
    if by_id is None:
        try:
            at = parse_time(text, now_ms)
        except AnswerError:
            recent = ", ".join(r.snapshot_id for r in refs[-3:]) or "none"
            raise AnswerError(
                f"{text!r} is neither a snapshot id of {cluster} (most recent: {recent}) nor "
                "a time such as 1h ago"
            ) from None
        try:
            by_id = store.at(cluster, [ctx.group], at)
        except SnapshotNotFound as exc:
            recorded = _recorded_offsets(ctx, at, text)
            if recorded is None:
                raise AnswerError(f"{exc}, and no lag history of it goes back that far") from None
            return recorded
    if ctx.group not in store.groups_in(by_id):
        raise AnswerError(f"snapshot {by_id.snapshot_id} holds no offsets of {ctx.group}")
    shown = f"snapshot {by_id.snapshot_id} (taken {show_time(by_id.taken_at_ms)})"
    return Answer(
        text,
        {"to-snapshot": by_id.snapshot_id},
        shown,
        {"id": by_id.snapshot_id, "taken_at": by_id.taken_at_ms},
    )


def _recorded_offsets(ctx: EvidenceContext, at_ms: int, text: str) -> Answer | None:
    """The group's committed offsets at `at_ms` as the console's lag history recorded them,
    written as an offsets file for a from-file plan; None without such a record."""

    root = ctx.workspace.local_root
    if root is None:
        return None
    point = LagHistory(root).offsets_at(ctx.run.cluster, ctx.group, at_ms)
    if point is None or point.client_local:
        return None
    # The group's own topics: its retry queue keeps moving with redeliveries and is left alone.
    known = {q.key: q.committed for q in point.topic_queues if q.committed is not None}
    if not known:
        return None
    path = root / "walkthroughs" / f"{stamp(point.at_ms)}-{_safe(ctx.group)}-offsets.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["topic,broker,queue_id,offset"]
    lines += [f"{t},{b},{q},{offset}" for (t, b, q), offset in sorted(known.items())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    lacks = f"; not recorded then: {', '.join(point.missing)}" if point.partial else ""
    shown = (
        f"the offsets recorded at {show_time(point.at_ms)} (lag history, {len(known)} "
        f"queue(s){lacks})"
    )
    return Answer(text, {"from-file": str(path)}, shown, {"taken_at": point.at_ms})


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


async def _check_queue(ctx: EvidenceContext, choices_from: str, text: str) -> Answer:
    choices = ctx.run.values().get(choices_from) or []
    if not choices:
        raise AnswerError("there is no queue to choose: the evidence found none")
    picked = None
    if text.isdigit() and 1 <= int(text) <= len(choices):
        picked = choices[int(text) - 1]
    elif text in choices:
        picked = text
    if picked is None:
        listed = ", ".join(f"{i} {c}" for i, c in enumerate(choices, 1))
        raise AnswerError(f"{text!r} is not one of: {listed}")
    topic, broker, qid = str(picked).rsplit("/", 2)
    offsets = await ctx.offsets(fresh=True)
    queue = next((q for q in offsets.queues if q.key == (topic, broker, int(qid))), None)
    if queue is None:
        raise AnswerError(f"{picked} could not be read now: {', '.join(missing(offsets))}")
    if queue.committed is None:
        raise AnswerError(f"{picked} has nothing committed: there is no message to skip there")
    return Answer(
        text,
        picked,
        picked,
        {"topic": topic, "broker": broker, "queue_id": int(qid), "committed": queue.committed},
    )


async def _check_topics(ctx: EvidenceContext, text: str) -> Answer:
    wanted = [t.strip() for t in text.split(",") if t.strip()]
    offsets = await ctx.offsets()
    have = sorted({q.topic for q in offsets.queues})
    unknown = [t for t in wanted if t not in have]
    if unknown:
        raise AnswerError(
            f"{ctx.group} consumes no topic {unknown[0]!r} (topics: {', '.join(have)})"
        )
    return Answer(text, wanted, ", ".join(wanted))
