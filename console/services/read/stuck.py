"""Queues where a consumer group is stuck, and whether it moved on after a skip.

A group is stuck on a queue when, over a window of several reads, its committed offset there did
not move while messages waited (lag above 0) and clients were online: Burrow's STALL, whose rule
lives in `console.domain.triage` and is applied here queue by queue. An orderly consumer that
fails one message (a *poison* message) forever looks exactly like that: its committed offset
stays at the message while the rest of the queue piles up behind it. A concurrent consumer that
fails a message sends it to the group's %RETRY% topic instead and moves on, so the sign there is
a retry queue that grows while the group is online; it is reported too, with the same evidence.

`find_stuck` is pure (reads in, report out); `watch_group` takes the reads, some seconds apart,
and asks the clients that hold the stuck queues what they cache for them.

Unknown is never "fine": a queue missing from a read (its broker did not answer, its committed
offset could not be read) or with nothing committed is listed as unknown with the reason, and a
broker missing from every read is named in `missing`; either makes the report partial.

**Why "moved on" and not the read-back.** On a 5.x broker with server-side reset (5.3.3's
default), a reset of an online group is held by the broker and handed to the consumer only as
the answer to its next pull (PULL_OFFSET_MOVED). Until then the broker's read-back already says
the target, so an apply reads "verified" while the consumer is still on the old message. Two
things delay that pull, measured on the sandbox's 5.3.3 brokers:

- a pull the broker is holding (long polling) is answered when a message arrives on the queue,
  or at the latest when its hold expires (15 s, checked every 5 s): a skip reached a stuck
  orderly consumer in about 1 s with messages arriving, in 6.5 to 19 s without;
- a Java push consumer whose cache for the queue is past a threshold (`pullThresholdForQueue`,
  default 1,000 messages; `pullThresholdSizeForQueue`, 100 MiB; for a concurrent consumer also a
  span of `consumeConcurrentlyMaxSpan` offsets) sends **no pull at all** for it. A stuck queue
  with messages arriving fills that cache, and then the skip never reaches the consumer: the
  broker reads back the target for good while the consumer redelivers the poison message. Only
  a restart of the consumer (or the queue moving to another one) picks it up; the restarted
  consumer starts from the target. `ConsumerCache.flow_controlled` says so before the apply.

So after a skip, `wait_moved_on` waits for the committed offset to pass the target: the consumer
has then consumed the message at the target, i.e. it really moved on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from console.domain.gaps import Gap, Part, distinct
from console.domain.offsets import GroupOffsets, QueueKey, QueueOffsets
from console.domain.triage import Sample, Status, as_samples, queue_status
from console.rocketmq.errors import RocketMQError
from console.rocketmq.models import MessageQueue
from console.rocketmq.running_info import ConsumerRunningInfo, consumer_running_info
from console.rocketmq.topics import is_retry_topic, retry_topic
from console.services.read.reader import ClusterReader, read_addrs

#: Seconds to watch a group by default. Longer than a Java consumer's commit interval
#: (`persistConsumerOffsetInterval`, 5 s by default) with room to spare: a healthy queue whose
#: consumer has not committed yet must not read as stuck.
DEFAULT_WATCH_S = 15.0
DEFAULT_READS = 3
#: How long `wait_moved_on` waits by default: a held pull's 15 s plus the broker's 5 s check, a
#: commit interval (5 s) and a margin.
DEFAULT_MOVE_ON_S = 30.0

#: Gaps that say nothing about committed offsets, lag or who is online.
_BESIDE_THE_POINT = frozenset({Part.MIN_OFFSETS, Part.DLQ})


class Finding(StrEnum):
    #: Committed offset unchanged over the window, lag above 0, clients online (Burrow STALL).
    STALLED = "stalled"
    #: The group's %RETRY% queue grew over the window while clients were online.
    RETRY_GROWING = "retry growing"


@dataclass(frozen=True, slots=True)
class ConsumerCache:
    """What the client holding a queue has pulled and not committed (GET_CONSUMER_RUNNING_INFO),
    with the thresholds past which it stops pulling that queue."""

    client_id: str
    cached: int  # messages
    cached_min: int
    cached_max: int
    cached_mib: int
    threshold: int | None  # pullThresholdForQueue; None: the client did not say
    threshold_mib: int | None  # pullThresholdSizeForQueue
    orderly: bool | None
    max_span: int | None  # consumeConcurrentlyMaxSpan (concurrent consumers only)

    @property
    def flow_controlled(self) -> bool:
        """The client sends no pull for the queue now, so it does not hear of a server-side
        reset until it restarts or the queue is rebalanced away."""
        if self.threshold is not None and self.cached > self.threshold:
            return True
        if self.threshold_mib is not None and self.cached_mib > self.threshold_mib:
            return True
        span = self.cached_max - self.cached_min if self.cached else 0
        return self.orderly is False and self.max_span is not None and span > self.max_span

    def line(self) -> str:
        limit = "?" if self.threshold is None else str(self.threshold)
        state = "full: no pull is sent" if self.flow_controlled else "pulling"
        return (
            f"{self.client_id} caches {self.cached} message(s) "
            f"({self.cached_min}-{self.cached_max}), threshold {limit}: {state}"
        )


@dataclass(frozen=True, slots=True)
class StuckQueue:
    """One queue found stuck, with the evidence."""

    kind: Finding
    topic: str
    broker: str
    queue_id: int
    #: At the last read (the same at every read for STALLED); None only for a retry queue on
    #: which nothing is committed (its growth is the finding).
    committed: int | None
    max_offset: int  # at the last read
    seconds: float  # from the first read to the last
    reads: int
    arrived: int  # messages written to the queue between the first and the last read
    retry_growth: int  # messages added to the group's %RETRY% queues meanwhile
    rule: str  # the rule that fired, in words
    cache: ConsumerCache | None = None  # None: not asked, or the client did not answer

    @property
    def key(self) -> QueueKey:
        return (self.topic, self.broker, self.queue_id)

    @property
    def lag(self) -> int | None:
        return None if self.committed is None else max(self.max_offset - self.committed, 0)


@dataclass(frozen=True, slots=True)
class UnknownQueue:
    """A queue that is neither declared stuck nor clear, and why."""

    topic: str
    broker: str
    queue_id: int
    why: str

    @property
    def key(self) -> QueueKey:
        return (self.topic, self.broker, self.queue_id)


@dataclass(frozen=True, slots=True)
class StuckReport:
    group: str
    first_ms: int  # when the first read was taken
    last_ms: int
    reads: int
    #: Clients were online at every read; None: who is online could not be read at some read.
    online: bool | None
    stuck: tuple[StuckQueue, ...]
    #: Read at every read and not stuck (moving, caught up, or nobody online).
    clear: tuple[QueueKey, ...]
    unknown: tuple[UnknownQueue, ...]
    #: What the reads lacked that bears on the answer (brokers, queues, clients), by name.
    missing: tuple[str, ...]
    gaps: tuple[Gap, ...]  # every gap of every read, each once
    #: Clients whose cache could not be read, one line each.
    cache_missing: tuple[str, ...] = ()

    @property
    def seconds(self) -> float:
        return (self.last_ms - self.first_ms) / 1000.0

    @property
    def partial(self) -> bool:
        return bool(self.missing or self.unknown)

    @property
    def stalled(self) -> tuple[StuckQueue, ...]:
        return tuple(s for s in self.stuck if s.kind is Finding.STALLED)

    @property
    def retry_growing(self) -> tuple[StuckQueue, ...]:
        return tuple(s for s in self.stuck if s.kind is Finding.RETRY_GROWING)


def find_stuck(reads: Sequence[GroupOffsets]) -> StuckReport:
    """The stuck queues of one group over two or more reads of it (in any order)."""
    if len(reads) < 2:
        raise ValueError("finding a stuck queue takes at least two reads")
    if len({r.group for r in reads}) != 1:
        raise ValueError("the reads are of different groups")
    ordered = sorted(reads, key=lambda r: r.taken_at_ms)
    window = as_samples(ordered)
    first, last = ordered[0], ordered[-1]
    seconds = (last.taken_at_ms - first.taken_at_ms) / 1000.0
    online = _online(ordered)
    by_read = [{q.key: q for q in r.queues} for r in ordered]
    keys = sorted({k for queues in by_read for k in queues})
    retry_growth = sum(
        _arrived([queues[k] for queues in by_read])
        for k in keys
        if is_retry_topic(k[0]) and all(k in queues for queues in by_read)
    )

    stuck: list[StuckQueue] = []
    clear: list[QueueKey] = []
    unknown: list[UnknownQueue] = []
    for key in keys:
        series = [queues.get(key) for queues in by_read]
        # A retry queue is judged on its growth: its max offsets are enough.
        why = _unread(key, series, ordered, need_committed=not is_retry_topic(key[0]))
        if why is not None:
            unknown.append(UnknownQueue(*key, why))
            continue
        seen = [q for q in series if q is not None]
        evidence = _Evidence(seen, seconds, retry_growth)
        if is_retry_topic(key[0]):
            found = _retry_growing(evidence, online)
        else:
            found = _stalled(seen[-1], window, evidence, online)
        if isinstance(found, StuckQueue):
            stuck.append(found)
        elif isinstance(found, UnknownQueue):
            unknown.append(found)
        else:
            clear.append(key)

    gaps = distinct(g for r in ordered for g in r.gaps)
    return StuckReport(
        group=first.group,
        first_ms=first.taken_at_ms,
        last_ms=last.taken_at_ms,
        reads=len(ordered),
        online=online,
        stuck=tuple(stuck),
        clear=tuple(clear),
        unknown=tuple(unknown),
        missing=_missing(ordered),
        gaps=tuple(gaps),
    )


@dataclass(frozen=True, slots=True)
class _Evidence:
    series: Sequence[QueueOffsets]  # the queue at every read, oldest first
    seconds: float
    retry_growth: int

    def finding(self, kind: Finding, rule: str) -> StuckQueue:
        last = self.series[-1]
        return StuckQueue(
            kind=kind,
            topic=last.topic,
            broker=last.broker,
            queue_id=last.queue_id,
            committed=last.committed,
            max_offset=last.max_offset,
            seconds=self.seconds,
            reads=len(self.series),
            arrived=_arrived(self.series),
            retry_growth=self.retry_growth,
            rule=rule,
        )


def _stalled(
    latest: QueueOffsets, window: Sequence[Sample], evidence: _Evidence, online: bool | None
) -> StuckQueue | UnknownQueue | None:
    # Unknown clients are taken as online here: a queue that would then stall is unknown
    # (stuck, or nobody consuming), one that moves is clear either way.
    verdict = queue_status(
        latest.key, latest.lag or 0, window, online is not False, min_samples=len(window)
    )
    if verdict.status is not Status.STALL:
        return None
    if online is None:
        why = "committed offset unchanged with lag, but who is online could not be read"
        return UnknownQueue(latest.topic, latest.broker, latest.queue_id, why)
    return evidence.finding(Finding.STALLED, verdict.reason)


def _retry_growing(evidence: _Evidence, online: bool | None) -> StuckQueue | UnknownQueue | None:
    grew = _arrived(evidence.series)
    if grew <= 0 or online is False:
        # Offline, a retry topic keeps growing from retries scheduled earlier: not a sign.
        return None
    last = evidence.series[-1]
    if online is None:
        why = f"grew by {grew}, but who is online could not be read"
        return UnknownQueue(last.topic, last.broker, last.queue_id, why)
    rule = (
        f"{last.topic}@{last.broker}:{last.queue_id} grew by {grew} in "
        f"{evidence.seconds:.0f}s with clients online: messages keep failing"
    )
    return evidence.finding(Finding.RETRY_GROWING, rule)


def _arrived(series: Sequence[QueueOffsets]) -> int:
    return max(series[-1].max_offset - series[0].max_offset, 0)


def _online(reads: Sequence[GroupOffsets]) -> bool | None:
    if not all(r.clients_known and r.answered for r in reads):
        return None
    return all(r.online for r in reads)


def _unread(
    key: QueueKey,
    series: Sequence[QueueOffsets | None],
    reads: Sequence[GroupOffsets],
    *,
    need_committed: bool,
) -> str | None:
    """Why the queue cannot be judged (None: it can): not in every read, or (when it counts)
    no committed offset."""
    absent = [
        r
        for q, r in zip(series, reads, strict=True)
        if q is None or (need_committed and q.committed is None)
    ]
    if not absent:
        return None
    if all(q is not None for q in series):
        if all(q is not None and q.committed is None for q in series):
            return "nothing committed: lag unknown"
    lacks = sorted({line for r in absent for line in _lacks(key, r)})
    said = f": {'; '.join(lacks)}" if lacks else ""
    return f"not read at {len(absent)} of {len(reads)} reads{said}"


def _lacks(key: QueueKey, read: GroupOffsets) -> list[str]:
    topic, broker, queue_id = key
    names = {broker, f"{topic}/{broker}/{queue_id}"}
    lines = [g.line() for g in read.gaps if g.name in names]
    if broker in read.unreachable_brokers and not lines:
        lines.append(f"broker {broker} did not answer")
    return lines


def _missing(reads: Sequence[GroupOffsets]) -> tuple[str, ...]:
    named: set[str] = set()
    for r in reads:
        named |= {_gap_name(g) for g in r.gaps if g.part not in _BESIDE_THE_POINT}
        named |= set(r.unreachable_brokers)
        if not r.answered:
            named.add("every broker")
    return tuple(sorted(named))


def _gap_name(g: Gap) -> str:
    return g.name if g.part is Part.BROKER else f"{g.part} {g.name}"


# ---- watching the cluster ----------------------------------------------------------------------


async def watch_group(
    reader: ClusterReader,
    group: str,
    *,
    seconds: float = DEFAULT_WATCH_S,
    reads: int = DEFAULT_READS,
    topics: Sequence[str] | None = None,
    caches: bool = True,
) -> StuckReport:
    """Read the group `reads` times spread over `seconds` and report its stuck queues.

    `topics` limits the reads to those topics (the group's retry topic is always read).
    With `caches`, the clients holding stalled queues are asked what they cache for them
    (`StuckQueue.cache`). NotFoundError when no broker knows the group.
    """
    if reads < 2:
        raise ValueError("watching takes at least two reads")
    wanted = [*topics, retry_topic(group)] if topics else None
    interval = max(seconds, 0.0) / (reads - 1)
    start = time.monotonic()
    taken: list[GroupOffsets] = []
    for i in range(reads):
        await asyncio.sleep(max(0.0, start + i * interval - time.monotonic()))
        taken.append(await reader.group_offsets(group, topics=wanted))
    report = find_stuck(taken)
    if not caches or not report.stalled:
        return report
    found, lacking = await consumer_caches(reader, taken[-1], [s.key for s in report.stalled])
    return StuckReport(
        group=report.group,
        first_ms=report.first_ms,
        last_ms=report.last_ms,
        reads=report.reads,
        online=report.online,
        stuck=tuple(_with_cache(s, found.get(s.key)) for s in report.stuck),
        clear=report.clear,
        unknown=report.unknown,
        missing=report.missing,
        gaps=report.gaps,
        cache_missing=lacking,
    )


def _with_cache(s: StuckQueue, cache: ConsumerCache | None) -> StuckQueue:
    if cache is None:
        return s
    return StuckQueue(
        s.kind,
        s.topic,
        s.broker,
        s.queue_id,
        s.committed,
        s.max_offset,
        s.seconds,
        s.reads,
        s.arrived,
        s.retry_growth,
        s.rule,
        cache,
    )


async def consumer_caches(
    reader: ClusterReader, read: GroupOffsets, keys: Iterable[QueueKey]
) -> tuple[dict[QueueKey, ConsumerCache], tuple[str, ...]]:
    """The cache of each queue of `keys` in the client that holds it, asked of every client
    online in `read`; and one line per client that did not answer."""
    wanted = set(keys)
    clients = [c.client_id for c in read.clients]
    if not wanted or not clients:
        return {}, ()
    try:
        addrs = read_addrs(await reader.routes())
    except RocketMQError as exc:
        return {}, (f"no client asked: the name server did not say where the brokers are ({exc})",)
    # The broker forwards the request over the client's own connection: ask through the broker
    # of a stalled queue, which that client pulls from and so certainly heartbeats.
    brokers = sorted({k[1] for k in wanted if k[1] in addrs}) or sorted(addrs)
    if not brokers:
        return {}, tuple(f"{c}: no broker to ask through" for c in clients)
    addr = addrs[brokers[0]]
    answers = await asyncio.gather(
        *(consumer_running_info(reader.admin, addr, read.group, c) for c in clients),
        return_exceptions=True,
    )
    found: dict[QueueKey, ConsumerCache] = {}
    lacking: list[str] = []
    for client, answer in zip(clients, answers, strict=True):
        if isinstance(answer, BaseException):
            if not isinstance(answer, RocketMQError):
                raise answer
            lacking.append(f"{client}: {' '.join(str(answer).split())}")
            continue
        for key, cache in _caches(answer).items():
            if key in wanted:
                found.setdefault(key, cache)
    return found, tuple(lacking)


def _caches(info: ConsumerRunningInfo) -> dict[QueueKey, ConsumerCache]:
    props = info.properties
    orderly = props.get("PROP_CONSUMEORDERLY")
    return {
        _key(mq): ConsumerCache(
            client_id=info.client_id,
            cached=pq.cached_count,
            cached_min=pq.cached_min,
            cached_max=pq.cached_max,
            cached_mib=pq.cached_mib,
            threshold=_int(props.get("pullThresholdForQueue")),
            threshold_mib=_int(props.get("pullThresholdSizeForQueue")),
            orderly=None if orderly is None else orderly.strip().lower() == "true",
            max_span=_int(props.get("consumeConcurrentlyMaxSpan")),
        )
        for mq, pq in info.process_queues.items()
        if not pq.dropped
    }


def _key(mq: MessageQueue) -> QueueKey:
    return (mq.topic, mq.broker_name, mq.queue_id)


def _int(value: str | None) -> int | None:
    try:
        return None if value is None else int(value)
    except ValueError:
        return None


# ---- after a skip: did the consumer move on? ---------------------------------------------------


class Progress(StrEnum):
    #: Committed past the target: the consumer consumed the message at the target.
    MOVED_ON = "moved on"
    #: Committed at the target with messages after it: not consumed yet (a server-side reset
    #: the consumer has not pulled reads back as exactly this).
    AT_TARGET = "at the target, not past it"
    #: Committed at the target and nothing after it yet: nothing shows whether it moved on.
    NOTHING_AFTER = "at the target, no message after it yet"
    #: Committed below the target: the skip did not hold (the consumer wrote its old offset).
    BEHIND = "behind the target"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class QueueProgress:
    topic: str
    broker: str
    queue_id: int
    target: int
    committed: int | None
    max_offset: int | None
    state: Progress
    why: str = ""

    @property
    def key(self) -> QueueKey:
        return (self.topic, self.broker, self.queue_id)


@dataclass(frozen=True, slots=True)
class MoveOnReport:
    group: str
    seconds: float  # how long it was watched
    queues: tuple[QueueProgress, ...]
    gaps: tuple[Gap, ...]  # of the last read

    @property
    def moved_on(self) -> bool:
        return all(q.state is Progress.MOVED_ON for q in self.queues)


def progress_past(read: GroupOffsets, targets: Mapping[QueueKey, int]) -> tuple[QueueProgress, ...]:
    """Where the group stands on each queue of `targets` relative to its target."""
    queues = {q.key: q for q in read.queues}
    out: list[QueueProgress] = []
    for key, target in sorted(targets.items()):
        q = queues.get(key)
        if q is None or q.committed is None:
            lacks = _lacks(key, read)
            if lacks:
                why = "; ".join(lacks)
            else:
                why = "not in the read" if q is None else "nothing committed"
            out.append(QueueProgress(*key, target, None, None, Progress.UNKNOWN, why))
            continue
        if q.committed > target:
            state = Progress.MOVED_ON
        elif q.committed < target:
            state = Progress.BEHIND
        elif q.max_offset > target:
            state = Progress.AT_TARGET
        else:
            state = Progress.NOTHING_AFTER
        out.append(QueueProgress(*key, target, q.committed, q.max_offset, state))
    return tuple(out)


async def wait_moved_on(
    reader: ClusterReader,
    group: str,
    targets: Mapping[QueueKey, int],
    *,
    timeout: float = DEFAULT_MOVE_ON_S,
    interval: float = 1.0,
) -> MoveOnReport:
    """Read the group until its committed offset is past every target, or `timeout` passed;
    the report says where each queue stood at the last read."""
    topics = sorted({k[0] for k in targets})
    start = time.monotonic()
    while True:
        read = await reader.group_offsets(group, topics=topics)
        queues = progress_past(read, targets)
        elapsed = time.monotonic() - start
        if all(q.state is Progress.MOVED_ON for q in queues) or elapsed >= timeout:
            return MoveOnReport(group, elapsed, queues, read.gaps)
        await asyncio.sleep(min(interval, max(0.0, timeout - elapsed)))
