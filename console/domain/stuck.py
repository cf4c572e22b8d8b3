"""Queues where a consumer group is stuck, and whether it moved on after a skip.

A group is stuck on a queue when, over a window of several reads, its committed offset there did
not move while messages waited (lag above 0) and clients were online: Burrow's STALL, whose rule
lives in `console.domain.triage` and is applied here queue by queue. An orderly consumer that
fails one message (a *poison* message) forever looks exactly like that: its committed offset
stays at the message while the rest of the queue piles up behind it. A concurrent consumer that
fails a message sends it to the group's %RETRY% topic instead and moves on, so the sign there is
a retry queue that grows while the group is online; it is reported too, with the same evidence.

`find_stuck` is pure (reads in, report out); console/services/read/group_watch.py takes the reads,
some seconds apart (`watch_group`), and asks the clients that hold the stuck queues what they
cache for them. Whether a consumer moved on after a skip is console/domain/moved_on.py's.

Unknown is never "fine": a queue missing from a read (its broker did not answer, its committed
offset could not be read) or with nothing committed is listed as unknown with the reason, and a
broker missing from every read is named in `missing`; either makes the report partial.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from console.domain.gaps import Gap, Part, distinct
from console.domain.offsets import GroupOffsets, QueueKey, QueueOffsets
from console.domain.readings import Sample, as_samples
from console.domain.triage import Status, queue_status
from console.rocketmq.models import MessageQueue
from console.rocketmq.running_info import ConsumerRunningInfo
from console.rocketmq.topics import is_retry_topic

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
    lacks = sorted({line for r in absent for line in queue_lacks(key, r)})
    said = f": {'; '.join(lacks)}" if lacks else ""
    return f"not read at {len(absent)} of {len(reads)} reads{said}"


def queue_lacks(key: QueueKey, read: GroupOffsets) -> list[str]:
    """Why `read` has no committed offset of the queue `key`: its gaps naming it or its broker."""
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


def with_cache(s: StuckQueue, cache: ConsumerCache | None) -> StuckQueue:
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


def caches_of(info: ConsumerRunningInfo) -> dict[QueueKey, ConsumerCache]:
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
