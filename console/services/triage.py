"""Triage of consumer groups over the console's refresh history: status, lag trend, time behind.

Pure functions over `GroupOffsets` samples: no I/O and no clock (callers pass `now_ms`), so every
rule can be tested with hand-made samples.

Status follows Burrow (github.com/linkedin/Burrow, "Consumer Lag Evaluation Rules"), evaluated
per queue over the last refreshes (the *window*) and reported for the group as its worst queue.
Burrow's STOP means "the consumer stopped committing"; a RocketMQ consumer commits on a timer
whether it progresses or not, so commit arrivals say nothing and STOP is read as "nobody is
online to consume". The rules, in the order they are tried, are `STATUS_RULES`.

Time behind = now - store time of the first unconsumed message. The broker computes exactly that
per queue (QUERY_CONSUME_TIME_SPAN `delayTime`), so the console asks it for the queues with lag
and passes the answers in as `delays`. The consume stats' `lastTimestamp` (store time of the last
*consumed* message) is not used as a stand-in: after a quiet hour the first new message is seconds
old while the last consumed one is an hour old, so it would overstate a fresh backlog. A lagging
queue without an answer leaves the time behind unknown rather than guessed.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from console.domain.offsets import CLIENT_LOCAL_NOTE, GroupOffsets, QueueKey, QueueOffsets

#: Refreshes kept per group; Burrow's default window is 10 offsets.
DEFAULT_WINDOW = 10
#: Refreshes needed before the trend rules (STALL, WARN) may fire.
MIN_SAMPLES = 3


class Status(StrEnum):
    OK = "OK"
    WARN = "WARN"
    REWIND = "REWIND"
    STALL = "STALL"
    STOP = "STOP"

    @property
    def severity(self) -> int:
        return _SEVERITY[self]


_SEVERITY = {Status.OK: 0, Status.WARN: 1, Status.REWIND: 2, Status.STALL: 3, Status.STOP: 4}

STATUS_RULES: tuple[tuple[Status, str], ...] = (
    (Status.OK, "lag is 0 on the queue now"),
    (Status.STOP, "lag above 0 and no client online: nobody is consuming"),
    (Status.OK, "lag was 0 at some refresh in the window"),
    (Status.REWIND, "the committed offset went backwards between two refreshes"),
    (
        Status.STALL,
        f"clients online, lag above 0, committed offset unchanged over {MIN_SAMPLES}+ refreshes",
    ),
    (
        Status.WARN,
        f"committed offset moves, but lag grew over {MIN_SAMPLES}+ refreshes and never shrank",
    ),
    (Status.OK, "otherwise"),
)
"""Per queue, the first rule that matches decides; the group takes its worst queue
(STOP > STALL > REWIND > WARN > OK). Only the group's topics vote: the retry queue has its own
column, and a queue with nothing committed has unknown lag and no say."""


@dataclass(frozen=True, slots=True)
class Verdict:
    status: Status
    reason: str
    #: Whether the window held enough refreshes for every rule to be tried.
    complete: bool
    queue: QueueKey | None = None


@dataclass(frozen=True, slots=True)
class LagTrend:
    delta: int  # total lag, last sample minus first
    seconds: float  # time between them

    @property
    def per_minute(self) -> float:
        return self.delta * 60.0 / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True, slots=True)
class Sample:
    """One refresh of one group, with what the rules read from it worked out once (a window is
    read on every refresh; the offsets' own totals are recomputed on every access)."""

    offsets: GroupOffsets
    taken_at_ms: int
    total_lag: int
    #: committed offset and lag of each topic queue that has a committed offset
    points: Mapping[QueueKey, tuple[int, int]]

    @classmethod
    def of(cls, offsets: GroupOffsets) -> Sample:
        points = {
            q.key: (q.committed, q.lag)
            for q in offsets.topic_queues
            if q.committed is not None and q.lag is not None
        }
        return cls(offsets, offsets.taken_at_ms, offsets.total_lag, points)


def as_samples(offsets: Iterable[GroupOffsets]) -> list[Sample]:
    return [Sample.of(o) for o in offsets]


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """One line of the group list: the latest offsets and what the window says about them."""

    offsets: GroupOffsets
    verdict: Verdict
    trend: LagTrend | None
    time_behind_ms: int | None
    lag_history: tuple[int, ...]

    @property
    def group(self) -> str:
        return self.offsets.group


# ---- history ---------------------------------------------------------------------------------


class History:
    """The last `window` refreshes of each group, oldest first.

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


# ---- status ------------------------------------------------------------------------------------


def evaluate(window: Sequence[Sample], *, min_samples: int = MIN_SAMPLES) -> Verdict:
    """The group's status: its worst queue under `STATUS_RULES`."""
    if not window:
        return Verdict(Status.OK, "not refreshed yet", complete=False)
    latest = window[-1].offsets
    complete = len(window) >= min_samples
    voters = [q for q in latest.topic_queues if q.committed is not None]
    if not voters:
        if latest.client_local:
            why = CLIENT_LOCAL_NOTE  # a broadcasting group's lag is on its clients, not here
        elif latest.topic_queues:
            why = "no committed offsets: lag unknown"
        else:
            why = "no queues"
        return Verdict(Status.OK, why, complete=complete)
    worst: Verdict | None = None
    for q in voters:
        verdict = _queue_status(q, window, latest.online, min_samples)
        if worst is None or verdict.status.severity > worst.status.severity:
            worst = verdict
            if verdict.status is Status.STOP:
                break  # nothing is worse; spare the other queues the work
    assert worst is not None
    return Verdict(worst.status, worst.reason, complete, worst.queue)


def _queue_status(
    q: QueueOffsets, window: Sequence[Sample], online: bool, min_samples: int
) -> Verdict:
    where = f"{q.topic}@{q.broker}:{q.queue_id}"
    lag = q.lag or 0
    if lag == 0:
        return Verdict(Status.OK, f"{where} caught up", True, q.key)
    if not online:
        return Verdict(Status.STOP, f"{where} lag {lag}, no client online", True, q.key)
    # (taken at, committed, lag) at every refresh where the queue had a committed offset
    key = q.key
    series = [(s.taken_at_ms, *s.points[key]) for s in window if key in s.points]
    lags = [s[2] for s in series]
    commits = [s[1] for s in series]
    if 0 in lags:
        return Verdict(Status.OK, f"{where} was caught up in the window", True, q.key)
    for (_, before, _), (_, after, _) in zip(series, series[1:], strict=False):
        if after < before:
            return Verdict(
                Status.REWIND, f"{where} committed went back {before} -> {after}", True, q.key
            )
    if len(series) < min_samples:
        return Verdict(Status.OK, f"{where} lag {lag}", False, q.key)
    span = _seconds(series[-1][0] - series[0][0])
    if len(set(commits)) == 1:
        return Verdict(
            Status.STALL,
            f"{where} committed {commits[0]} unchanged for {span}, lag {lag}",
            True,
            q.key,
        )
    growing = all(b >= a for a, b in zip(lags, lags[1:], strict=False)) and lags[-1] > lags[0]
    if growing:
        return Verdict(
            Status.WARN, f"{where} lag grew {lags[0]} -> {lags[-1]} over {span}", True, q.key
        )
    return Verdict(Status.OK, f"{where} lag {lag}, consuming", True, q.key)


def _seconds(ms: int) -> str:
    return f"{ms / 1000:.0f}s"


# ---- trend and time behind -----------------------------------------------------------------------


def lag_series(window: Sequence[Sample]) -> tuple[int, ...]:
    """Total lag at each refresh of the window (the sparkline)."""
    return tuple(s.total_lag for s in window)


def lag_trend(window: Sequence[Sample]) -> LagTrend | None:
    """How total lag moved from the first to the last refresh; None with fewer than two."""
    if len(window) < 2:
        return None
    first, last = window[0], window[-1]
    return LagTrend(
        delta=last.total_lag - first.total_lag,
        seconds=(last.taken_at_ms - first.taken_at_ms) / 1000.0,
    )


def lagging_topics(sample: Sample) -> dict[str, tuple[str, ...]]:
    """Topics with lag, by broker: what to ask QUERY_CONSUME_TIME_SPAN about."""
    out: dict[str, set[str]] = {}
    for (topic, broker, _), (_, lag) in sample.points.items():
        if lag:
            out.setdefault(broker, set()).add(topic)
    return {b: tuple(sorted(t)) for b, t in sorted(out.items())}


def time_behind_ms(offsets: GroupOffsets, delays: Mapping[QueueKey, int]) -> int | None:
    """The oldest unconsumed message's age over the group's topics; 0 when nothing lags."""
    lagging = [q for q in offsets.topic_queues if q.lag]
    if not lagging:
        return 0 if any(q.committed is not None for q in offsets.topic_queues) else None
    known = [delays[q.key] for q in lagging if q.key in delays]
    return max(known) if known else None


def summarize(
    window: Sequence[Sample],
    delays: Mapping[QueueKey, int],
    *,
    min_samples: int = MIN_SAMPLES,
) -> GroupSummary:
    if not window:
        raise ValueError("a summary needs at least one refresh")
    return GroupSummary(
        offsets=window[-1].offsets,
        verdict=evaluate(window, min_samples=min_samples),
        trend=lag_trend(window),
        time_behind_ms=time_behind_ms(window[-1].offsets, delays),
        lag_history=lag_series(window),
    )


def worst_first(summaries: Iterable[GroupSummary]) -> list[GroupSummary]:
    """Worst status first, then most lag, then name."""
    return sorted(
        summaries,
        key=lambda s: (-s.verdict.status.severity, -s.offsets.total_lag, s.group),
    )


# ---- brokers -----------------------------------------------------------------------------------

NOT_REGISTERED = "not registered with the name server"


def vanished(known: Mapping[str, str], listed: Iterable[str]) -> dict[str, str]:
    """Brokers seen earlier (name -> address) that the name server no longer lists.

    A stopped broker unregisters (or its channel closes), so the name server simply stops naming
    it; to an operator that broker is down, not gone.
    """
    names = set(listed)
    return {n: a for n, a in sorted(known.items()) if n not in names}
