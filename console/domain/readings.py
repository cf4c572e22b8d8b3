"""What the triage rules read of a group's refreshes: one refresh worked out once (`Reading`, from
a live read as `Sample` or from a point of the lag history), and the last refreshes of each group
the console keeps (`Refreshes`). A read that lacks parts is partial: its total is a lower bound."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from console.domain.lag import LagPoint
from console.domain.lag import missing as missing  # what a read lacks, by name
from console.domain.offsets import GroupOffsets, QueueKey, QueueOffsets
from console.rocketmq.topics import is_retry_topic


@dataclass(frozen=True, slots=True)
class Reading:
    """What the rules read of one refresh of one group, worked out once (a window is read on
    every refresh). Made from a live read (`Sample`) or from a point of the lag history
    (`Reading.of_point`), so the same rules judge both."""

    taken_at_ms: int
    #: Lag summed over the topic queues with a committed offset (0 when there is none).
    total_lag: int
    #: committed offset and lag of each topic queue that has a committed offset
    points: Mapping[QueueKey, tuple[int, int]]
    #: What the read covered: the queues whose lag is in the total, and what it lacked. Two
    #: totals compare only when this is the same.
    coverage: tuple[frozenset[QueueKey], frozenset[str]]
    #: Whether any client was online.
    online: bool
    #: Topic queues in the read, committed or not.
    topic_queues: int
    #: A BROADCASTING group (its offsets live on its clients).
    client_local: bool

    @property
    def partial(self) -> bool:
        return bool(self.coverage[1])

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(sorted(self.coverage[1]))

    @classmethod
    def of_point(cls, point: LagPoint) -> Reading:
        # One pass, the retry check once per topic: a day's window is thousands of points.
        points: dict[QueueKey, tuple[int, int]] = {}
        retry: dict[str, bool] = {}
        topic_queues = 0
        for q in point.queues:
            is_retry = retry.get(q.topic)
            if is_retry is None:
                is_retry = retry[q.topic] = is_retry_topic(q.topic)
            if is_retry:
                continue
            topic_queues += 1
            if q.committed is not None:
                points[(q.topic, q.broker, q.queue_id)] = (
                    q.committed,
                    max(q.max_offset - q.committed, 0),
                )
        return cls(
            taken_at_ms=point.at_ms,
            total_lag=sum(lag for _, lag in points.values()),
            points=points,
            coverage=(frozenset(points), frozenset(point.missing)),
            online=bool(point.online),
            topic_queues=topic_queues,
            client_local=point.client_local,
        )


@dataclass(frozen=True, slots=True)
class Sample(Reading):
    """One refresh of one group as the console read it (kept in memory, in `Refreshes`)."""

    offsets: GroupOffsets

    @classmethod
    def of(cls, offsets: GroupOffsets) -> Sample:
        # One pass: a refresh of 10,000 groups makes 10,000 of these, 160,000 queues.
        points: dict[QueueKey, tuple[int, int]] = {}
        topic_queues = offsets.topic_queues  # worked out once: its row reads them too
        for q in topic_queues:
            committed = q.committed
            if committed is not None:
                points[q.key] = (committed, max(q.max_offset - committed, 0))
        return cls(
            taken_at_ms=offsets.taken_at_ms,
            total_lag=offsets.total_lag,
            points=points,
            coverage=(frozenset(points), frozenset(missing(offsets))),
            online=offsets.online,
            topic_queues=len(topic_queues),
            client_local=offsets.client_local,
            offsets=offsets,
        )


def as_samples(offsets: Iterable[GroupOffsets]) -> list[Sample]:
    return [Sample.of(o) for o in offsets]


def is_partial(offsets: GroupOffsets) -> bool:
    """Whether parts of the read are missing: its totals are lower bounds, its status not OK."""
    return offsets.partial or bool(offsets.unreachable_brokers)


def below_min(q: QueueOffsets) -> bool:
    """The committed offset points at messages already deleted (the commit log was cleaned up
    past it): the consumer will be moved to the min offset, and no store time is known for it."""
    return q.below_min


#: Refreshes kept per group; Burrow's default window is 10 offsets.
DEFAULT_WINDOW = 10


class Refreshes:
    """The last `window` refreshes of each group, oldest first (what the rules judge).

    Refreshes of different views may add from different threads; a lock keeps each change whole.
    """

    def __init__(self, window: int = DEFAULT_WINDOW) -> None:
        if window < 1:
            raise ValueError("the window holds at least one refresh")
        self.window_size = window
        self._samples: dict[str, deque[Sample]] = {}
        self._lock = threading.Lock()

    def add(self, offsets: GroupOffsets) -> tuple[Sample, ...]:
        sample = Sample.of(offsets)
        with self._lock:
            samples = self._samples.setdefault(offsets.group, deque(maxlen=self.window_size))
            if samples and samples[-1].taken_at_ms >= offsets.taken_at_ms:
                samples.pop()  # the same instant read twice: keep the newer reading only
            samples.append(sample)
            return tuple(samples)

    def window(self, group: str) -> tuple[Sample, ...]:
        with self._lock:
            return tuple(self._samples.get(group, ()))

    def groups(self) -> list[str]:
        with self._lock:
            return sorted(self._samples)

    def retain(self, groups: Iterable[str]) -> None:
        """Forget groups that no longer exist."""
        keep = set(groups)
        with self._lock:
            for name in [g for g in self._samples if g not in keep]:
                del self._samples[name]
