"""The evidence a walkthrough shows, by name: what the cluster says that bears on the step.

Each provider reads the cluster (never writes) and returns an `Evidence`: lines for the screen
and the report, values a spec template or a later step may use, and what could not be read —
a broker that did not answer leaves its queues unknown, never counted as fine.

Walkthrough files name these providers (`evidence: [group, clients]`); `EVIDENCE` is the list
a file is checked against.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from console.config import Config
from console.domain.gaps import Gap
from console.domain.journal import Journal, QueueState
from console.domain.offsets import GroupOffsets, QueueKey, QueueOffsets
from console.domain.plan import choose_reset_path, stamp
from console.domain.spec import is_one_time, strategy_kind
from console.domain.triage import missing
from console.domain.walkthrough import Evidence, StepKind
from console.rocketmq.errors import NotFoundError, RocketMQError
from console.rocketmq.topics import dlq_topic, retry_topic
from console.services.infra.workspace import Workspace
from console.services.read.broker_facts import broker_facts
from console.services.read.reader import ClusterReader, read_addrs
from console.services.walkthrough.runner import (
    Answer,
    AnswerError,
    WalkthroughRun,
    check_plain_answer,
    local_zone,
    parse_time,
    queue_name,
    show_time,
)

#: How long `rates` and `stuck` watch the group by default (two or more reads that far apart).
WATCH_S = 10.0
#: How long `moved-on` waits for online consumers to consume past the targets, in watches.
MOVED_ON_FACTOR = 6
MOVED_ON_S = WATCH_S * MOVED_ON_FACTOR
#: Queue lines shown per evidence before "... and N more".
SHOWN_QUEUES = 12


@dataclass
class EvidenceContext:
    """What a provider may read: the cluster, the workspace, the run so far."""

    reader: ClusterReader
    run: WalkthroughRun
    config: Config
    now_ms: Callable[[], int] = lambda: int(time.time() * 1000)
    watch_s: float = WATCH_S
    moved_on_s: float = MOVED_ON_S
    _offsets: GroupOffsets | None = field(default=None, repr=False)

    @classmethod
    def of(cls, reader: ClusterReader, run: WalkthroughRun, config: Config) -> EvidenceContext:
        """With the config's watch window (`walkthrough_watch`)."""
        watch = config.walkthrough_watch
        return cls(reader, run, config, watch_s=watch, moved_on_s=watch * MOVED_ON_FACTOR)

    @property
    def group(self) -> str:
        return self.run.group

    @property
    def workspace(self) -> Workspace:
        return Workspace(self.config.workspace_path)

    async def offsets(self, *, fresh: bool = False) -> GroupOffsets:
        """The group's offsets, read once per gathering unless asked fresh."""
        if self._offsets is None or fresh:
            self._offsets = await self.reader.group_offsets(self.group)
        return self._offsets

    async def addrs(self) -> dict[str, str]:
        return read_addrs(await self.reader.routes())


Provider = Callable[[EvidenceContext], Awaitable[Evidence]]


async def gather(ctx: EvidenceContext, names: Iterable[str]) -> list[Evidence]:
    """The evidence named, in order. A provider whose read fails entirely gives an Evidence that
    says what failed, so the walkthrough goes on and the report shows the hole."""
    out: list[Evidence] = []
    for name in names:
        try:
            out.append(await EVIDENCE[name](ctx))
        except RocketMQError as exc:
            out.append(
                Evidence(name, TITLES[name], (f"could not be read: {exc}",), {}, (str(exc),))
            )
    return out


# ---- answers that need the cluster ------------------------------------------------------------


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
    from console.services.read.snapshots import SnapshotNotFound, SnapshotStore

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
    from console.services.read.lag_history import LagHistory

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


# ---- providers ---------------------------------------------------------------------------------


def _lag_text(lag: int | None, partial: bool) -> str:
    if lag is None:
        return "unknown"
    return f"≥{lag:,}" if partial else f"{lag:,}"


def _queue_lines(lines: Sequence[str]) -> list[str]:
    if len(lines) <= SHOWN_QUEUES:
        return list(lines)
    return [*lines[:SHOWN_QUEUES], f"… and {len(lines) - SHOWN_QUEUES} more queue(s)"]


def _gaps(offsets: GroupOffsets) -> tuple[str, ...]:
    return tuple(missing(offsets))


async def _group(ctx: EvidenceContext) -> Evidence:
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
            f"{_lag_text(sum(lags), partial)}{extra}"
        )
    if o.retry_queues:
        lines.append(f"{retry_topic(ctx.group)}: retry backlog {o.retry_backlog:,}")
    if o.dlq_messages:
        lines.append(f"{dlq_topic(ctx.group)}: {o.dlq_messages:,} dead-lettered message(s)")
    below = o.below_min_queues
    if below:
        lines.append(f"{below} queue(s) committed below the min offset (messages deleted)")
    if partial:
        lines.append(f"PARTIAL: {', '.join(_gaps(o))}")
    total = None if not o.answered else o.total_lag
    return Evidence(
        "group",
        TITLES["group"],
        tuple(lines) or ("no queues",),
        {"topics": topics, "lag": total, "partial": partial},
        _gaps(o),
    )


async def _clients(ctx: EvidenceContext) -> Evidence:
    o = await ctx.offsets()
    if not o.clients_known:
        return Evidence(
            "clients",
            TITLES["clients"],
            ("who is online could not be read",),
            {"online": None},
            ("clients",),
        )
    ids = [c.client_id for c in o.clients]
    if not ids:
        lines = ["no consumer online: offsets stay where they are put until one starts"]
    else:
        lines = [f"{len(ids)} consumer(s) online ({o.message_model or 'model unknown'}):"]
        lines += [f"  {c.client_id} {c.addr} {c.language} v{c.version}" for c in o.clients[:6]]
        if len(ids) > 6:
            lines.append(f"  … and {len(ids) - 6} more")
    return Evidence("clients", TITLES["clients"], tuple(lines), {"online": len(ids)})


async def _reset_path(ctx: EvidenceContext) -> Evidence:
    o = await ctx.offsets()
    routes = await ctx.reader.routes()
    brokers = sorted({q.broker for q in o.queues})
    facts = await broker_facts(
        ctx.reader.admin, {b: routes[b].master_addr if b in routes else None for b in brokers}
    )
    spec = ctx.run.draft_spec()
    if spec is not None:
        one_time = spec.one_time_per_topic
    else:
        # Answers still to come: the kind the walkthrough names, when it names one.
        one_time = is_one_time(strategy_kind(ctx.run.walkthrough.spec.get("strategy")))
    path = choose_reset_path(
        list(facts.values()),
        consumers_online=len(o.clients),
        broadcasting=o.client_local,
        per_queue=not one_time,
    )
    lines = [f"{path.kind}: {path.reason}"]
    if path.blocker:
        lines.append(f"before applying: {path.blocker}")
    unknown = [f.name for f in facts.values() if f.version is None]
    if unknown:
        lines.append(f"version unknown for {', '.join(unknown)}: the apply asks again")
    return Evidence(
        "reset-path", TITLES["reset-path"], tuple(lines), {"kind": str(path.kind)}, tuple(unknown)
    )


async def _rates(ctx: EvidenceContext) -> Evidence:
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
    lacks = tuple(sorted(set(_gaps(first)) | set(_gaps(second))))
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


def _answered(ctx: EvidenceContext, kind: StepKind) -> Answer | None:
    for step in ctx.run.walkthrough.steps:
        if step.kind is kind and step.id in ctx.run.answers:
            return ctx.run.answers[step.id]
    return None


async def _source_group(ctx: EvidenceContext) -> Evidence:
    answer = _answered(ctx, StepKind.GROUP)
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
    lacks = tuple(sorted(set(_gaps(source)) | set(_gaps(mine))))
    if lacks:
        lines.append(f"PARTIAL: {', '.join(lacks)}")
    return Evidence(
        "source-group",
        TITLES["source-group"],
        tuple(lines),
        {"new_group": new_group, "topics": topics},
        lacks,
    )


async def _retry_backlog(ctx: EvidenceContext) -> Evidence:
    o = await ctx.offsets()
    addrs = await ctx.addrs()
    now = ctx.now_ms()
    lines: list[str] = []
    lacks: list[str] = list(_gaps(o))
    retry = retry_topic(ctx.group)
    spans: dict[tuple[str, str, int], int] = {}
    for broker in sorted({q.broker for q in o.retry_queues}):
        addr = addrs.get(broker)
        if addr is None:
            lacks.append(f"{broker}: no address")
            continue
        try:
            for mq, span in (
                await ctx.reader.admin.consume_time_span(addr, retry, ctx.group)
            ).items():
                if span.delay_ms > 0 and span.delay_ms < now:
                    spans[(mq.topic, mq.broker_name, mq.queue_id)] = span.delay_ms
        except RocketMQError as exc:
            lacks.append(f"{broker}: {exc}")
    for q in o.retry_queues:
        age = spans.get(q.key)
        old = f", oldest waiting {_age(age)}" if age else ""
        lines.append(f"{retry} {q.broker}/{q.queue_id}: {_lag_text(q.lag, False)} waiting{old}")
    if not o.retry_queues:
        lines.append(f"{retry}: nothing committed or nothing there")
    dlq = await ctx.reader.dlq_queues(ctx.group)
    dlq_total = sum(s.max_offset - s.min_offset for s in dlq.queues)
    for broker in dlq.unreachable:
        lacks.append(f"{dlq_topic(ctx.group)} on {broker}: no answer")
    for stats in dlq.queues:
        mq = stats.queue
        addr = addrs.get(mq.broker_name)
        oldest = None
        if addr is not None and stats.max_offset > stats.min_offset:
            try:
                oldest = await ctx.reader.admin.earliest_store_time(addr, mq.topic, mq.queue_id)
            except RocketMQError as exc:
                lacks.append(f"{mq.topic} {mq.broker_name}/{mq.queue_id}: {exc}")
        when = ""
        if oldest and stats.last_update_timestamp:
            when = f", stored {show_time(oldest)} .. {show_time(stats.last_update_timestamp)}"
        lines.append(
            f"{mq.topic} {mq.broker_name}/{mq.queue_id}: "
            f"{stats.max_offset - stats.min_offset:,} message(s){when}"
        )
    if dlq_total:
        lines.append(
            "dead letters are not replayed by moving offsets (nothing consumes the DLQ): "
            "re-send them, e.g. mqadmin queryMsgById -i MSGID -g GROUP -d CLIENTID"
        )
    return Evidence(
        "retry-backlog",
        TITLES["retry-backlog"],
        tuple(_queue_lines(lines)),
        {"retry_topic": retry, "retry_lag": o.retry_backlog, "dlq_messages": dlq_total},
        tuple(lacks),
    )


async def _search_all(
    ctx: EvidenceContext, queues: Sequence[QueueOffsets], at_ms: int
) -> tuple[dict[tuple[str, str, int], int], list[str]]:
    """Per queue, the offset of the first message stored at or after `at_ms` (what the plan
    job asks too), and the queues whose broker did not say."""
    addrs = await ctx.addrs()
    found: dict[tuple[str, str, int], int] = {}
    lacks: list[str] = []

    async def one(q: QueueOffsets) -> None:
        addr = addrs.get(q.broker)
        if addr is None:
            lacks.append(f"{queue_name(*q.key)}: {q.broker} has no address")
            return
        try:
            found[q.key] = await ctx.reader.admin.search_offset(addr, q.topic, q.queue_id, at_ms)
        except RocketMQError as exc:
            lacks.append(f"{queue_name(*q.key)}: {exc}")

    await asyncio.gather(*(one(q) for q in queues))
    return found, sorted(lacks)


async def _time_per_queue(ctx: EvidenceContext) -> Evidence:
    """The answered time resolved per queue: where each queue goes and how many messages come
    again; a queue still before that time would skip messages instead, and is named."""
    answer = _answered(ctx, StepKind.TIME)
    if answer is None:
        return Evidence("time-per-queue", TITLES["time-per-queue"], ("no time given yet",))
    at_ms = int(answer.value)
    o = await ctx.offsets(fresh=True)
    queues = [q for q in o.topic_queues if q.committed is not None]
    found, lacks = await _search_all(ctx, queues, at_ms)
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
    lines += _queue_lines(per_queue)
    unknown = [queue_name(*q.key) for q in o.topic_queues if q.committed is None]
    if unknown:
        lines.append(f"{len(unknown)} queue(s) never committed: left alone")
    gaps = tuple(sorted(set(_gaps(o)) | set(lacks)))
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
    from console.domain.messages import BoundaryRequest
    from console.services.read.boundary import read_boundaries

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


async def _skip_span(ctx: EvidenceContext) -> Evidence:
    """What a skip forward gives up: per topic, how many messages and stored over which span
    (from the oldest unconsumed one to the newest, or to the time given)."""
    answer = _answered(ctx, StepKind.TARGET)
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
    found, lacks = await _search_all(ctx, queues, int(at_ms)) if at_ms else ({}, [])
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
    gaps = tuple(sorted(set(_gaps(o)) | set(lacks)))
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


def _age(ms: int) -> str:
    s = ms // 1000
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


async def _history(ctx: EvidenceContext) -> Evidence:
    return await asyncio.to_thread(_history_now, ctx)


def _history_now(ctx: EvidenceContext) -> Evidence:
    from console.services.infra.journal_store import JournalStore
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
        from console.services.read.lag_history import LagHistory

        series = LagHistory(root).series(ctx.run.cluster, ctx.group)
        if series.points:
            first, last = series.points[0], series.points[-1]
            lines.append(
                f"lag history: {len(series.points)} sample(s) of its committed offsets, "
                f"{show_time(first.at_ms)} .. {show_time(last.at_ms)}"
            )
    latest = mine[-1].snapshot_id if mine else None
    return Evidence("history", TITLES["history"], tuple(lines), {"latest_snapshot": latest})


async def _moved_on(ctx: EvidenceContext) -> Evidence:
    """After an apply: whether online consumers took the new offsets up and consumed past them
    (a read-back only proves the broker holds the target; a consumer that never pulls again
    would leave it there), or, with nobody online, that the offsets wait at their targets."""
    from console.services.read.stuck import Progress, wait_moved_on

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


async def _stuck(ctx: EvidenceContext) -> Evidence:
    """Queues whose committed offset did not move while messages waited and clients were
    online, or whose retry topic grew: read a few times over the watch window."""
    from console.services.read.stuck import Finding, watch_group

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
            f"{i}. {name}: {what} at {q.committed}, lag {_lag_text(q.lag, False)}, "
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


async def _message_at_committed(ctx: EvidenceContext) -> Evidence:
    """The message the group is at on the chosen queue (the one a +1 skip gives up): read
    with a pull as TOOLS_CONSUMER, never as the group."""
    from console.domain.messages import BoundaryRequest
    from console.services.read.boundary import read_boundaries

    answer = _answered(ctx, StepKind.QUEUE)
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


TITLES: Mapping[str, str] = {
    "group": "The group now",
    "clients": "Consumers online",
    "reset-path": "How an apply moves the offsets",
    "rates": "Produce and consume rates",
    "source-group": "Offsets to copy",
    "retry-backlog": "Retry and dead-letter backlog",
    "history": "Snapshots and applies of the group",
    "moved-on": "Did the consumers move on",
    "time-per-queue": "The time, queue by queue",
    "stuck": "Stuck queues",
    "message-at-committed": "The message it cannot get past",
    "skip-span": "What the skip gives up",
}

EVIDENCE: dict[str, Provider] = {
    "group": _group,
    "clients": _clients,
    "reset-path": _reset_path,
    "rates": _rates,
    "source-group": _source_group,
    "retry-backlog": _retry_backlog,
    "history": _history,
    "moved-on": _moved_on,
    "time-per-queue": _time_per_queue,
    "stuck": _stuck,
    "message-at-committed": _message_at_committed,
    "skip-span": _skip_span,
}


def missing_of(gaps: Iterable[Gap]) -> list[str]:
    return sorted({g.line() for g in gaps})
