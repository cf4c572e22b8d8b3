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

A read that lacks parts (a broker that did not answer, a gap the reader names) is *partial*:
its total is a lower bound, its status is never OK (ERR when what was read is fine), and no
trend or sparkline is drawn across a change in what was read. Otherwise a broker going down
would read as a recovery: its share of the lag leaves the total, which falls.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from console.domain.gaps import Gap, Part
from console.domain.offsets import (
    CLIENT_LOCAL_NOTE,
    GroupOffsets,
    QueueKey,
    QueueOffsets,
    known_delay,
)

#: Refreshes kept per group; Burrow's default window is 10 offsets.
DEFAULT_WINDOW = 10
#: Refreshes needed before the trend rules (STALL, WARN) may fire.
MIN_SAMPLES = 3


class Status(StrEnum):
    OK = "OK"
    #: Parts of the read are missing and what was read says nothing worse: unknown, not OK.
    ERR = "ERR"
    WARN = "WARN"
    REWIND = "REWIND"
    STALL = "STALL"
    STOP = "STOP"

    @property
    def severity(self) -> int:
        return _SEVERITY[self]


# ERR ranks above OK and below every status the queues read show: when a broker goes down,
# every group on it turns ERR, and those must not bury the groups known to be in trouble.
_SEVERITY = {
    Status.OK: 0,
    Status.ERR: 1,
    Status.WARN: 2,
    Status.REWIND: 3,
    Status.STALL: 4,
    Status.STOP: 5,
}

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
    (Status.ERR, "the read lacks parts (a broker did not answer) and what was read is OK"),
)
"""Per queue, the first rule that matches decides; the group takes its worst queue
(STOP > STALL > REWIND > WARN > OK), the one with most lag among equals. Only the group's topics
vote: the retry queue has its own column, and a queue with nothing committed has unknown lag and
no say. Over a partial read an OK becomes ERR ("partial read"), and any status says the read
was partial."""


@dataclass(frozen=True, slots=True)
class Verdict:
    status: Status
    reason: str
    #: Whether the window held enough refreshes for every rule to be tried.
    complete: bool
    queue: QueueKey | None = None
    #: The read lacked parts: the status speaks for what was read only.
    partial: bool = False


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
    #: What the read covered: the queues whose lag is in the total, and what it lacked. Two
    #: totals compare only when this is the same.
    coverage: tuple[frozenset[QueueKey], frozenset[str]]

    @property
    def partial(self) -> bool:
        return bool(self.coverage[1])

    @classmethod
    def of(cls, offsets: GroupOffsets) -> Sample:
        points = {
            q.key: (q.committed, q.lag)
            for q in offsets.topic_queues
            if q.committed is not None and q.lag is not None
        }
        coverage = (frozenset(points), frozenset(missing(offsets)))
        return cls(offsets, offsets.taken_at_ms, offsets.total_lag, points, coverage)


def as_samples(offsets: Iterable[GroupOffsets]) -> list[Sample]:
    return [Sample.of(o) for o in offsets]


# ---- what a read lacks -------------------------------------------------------------------------


def missing(offsets: GroupOffsets) -> tuple[str, ...]:
    """What the read lacks, by name ("broker-b", "queue orders/broker-a/3"): the reader's gaps
    and the brokers it names unreachable (either may say so; they may say it of the same one)."""
    named = {_gap_name(g) for g in offsets.gaps}
    named |= set(offsets.unreachable_brokers)
    return tuple(sorted(named))


def _gap_name(g: Gap) -> str:
    return g.name if g.part is Part.BROKER else f"{g.part} {g.name}"


def is_partial(offsets: GroupOffsets) -> bool:
    """Whether parts of the read are missing: its totals are lower bounds, its status not OK."""
    return offsets.partial or bool(offsets.unreachable_brokers)


def below_min(q: QueueOffsets) -> bool:
    """The committed offset points at messages already deleted (the commit log was cleaned up
    past it): the consumer will be moved to the min offset, and no store time is known for it."""
    return q.below_min


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """One line of the group list: the latest offsets and what the window says about them."""

    offsets: GroupOffsets
    verdict: Verdict
    #: None with fewer than two comparable refreshes, or over a partial read
    trend: LagTrend | None
    time_behind_ms: int | None
    #: Total lag of each refresh since what was read last changed (the sparkline)
    lag_history: tuple[int, ...]
    #: What the latest read lacks, by name (see `missing`)
    missing: tuple[str, ...] = ()
    #: The window held older refreshes that read something else: they are not drawn
    restarted: bool = False

    @property
    def group(self) -> str:
        return self.offsets.group

    @property
    def partial(self) -> bool:
        return bool(self.missing)


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
    known = _evaluate_read(window, min_samples)
    lacks = missing(window[-1].offsets)
    if not lacks:
        return known
    note = f"partial read: no answer from {', '.join(lacks)}"
    if known.status is Status.OK:
        return Verdict(Status.ERR, note, True, known.queue, partial=True)
    return Verdict(known.status, f"{known.reason} ({note})", known.complete, known.queue, True)


def _evaluate_read(window: Sequence[Sample], min_samples: int) -> Verdict:
    """The rules over what the latest refresh read."""
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
    worst_lag = -1
    for q in voters:
        verdict = queue_status(q, window, latest.online, min_samples)
        lag = q.lag or 0
        severity = verdict.status.severity
        if worst is None or (severity, lag) > (worst.status.severity, worst_lag):
            worst, worst_lag = verdict, lag
    assert worst is not None
    return Verdict(worst.status, worst.reason, complete, worst.queue)


def queue_status(
    q: QueueOffsets, window: Sequence[Sample], online: bool, min_samples: int
) -> Verdict:
    """One queue of the latest refresh (`q`) under `STATUS_RULES` over the window."""
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


def comparable(window: Sequence[Sample]) -> Sequence[Sample]:
    """The refreshes at the end of the window that read what the latest read: the same queues
    with lag known, and the same parts missing. A total compares with those only."""
    if not window:
        return window
    coverage = window[-1].coverage
    start = len(window) - 1
    while start > 0 and window[start - 1].coverage == coverage:
        start -= 1
    return window[start:]


def lag_series(window: Sequence[Sample]) -> tuple[int, ...]:
    """Total lag at each comparable refresh (the sparkline)."""
    return tuple(s.total_lag for s in comparable(window))


def lag_trend(window: Sequence[Sample]) -> LagTrend | None:
    """How total lag moved over the comparable refreshes; None with fewer than two, and over a
    partial read (a lower bound has no rate)."""
    run = comparable(window)
    if len(run) < 2 or run[-1].partial:
        return None
    first, last = run[0], run[-1]
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


def queue_delay(q: QueueOffsets, delays: Mapping[QueueKey, int], at_ms: int) -> int | None:
    """Time behind on one queue: 0 when caught up; None when unknown (nothing committed, the
    committed offset below min, no answer, or an answer that is no time)."""
    if q.committed is None or below_min(q):
        return None
    if q.lag == 0:
        return 0
    delay = delays.get(q.key)
    return None if delay is None else known_delay(delay, at_ms)


def time_behind_ms(offsets: GroupOffsets, delays: Mapping[QueueKey, int]) -> int | None:
    """The oldest unconsumed message's age over the group's topics; 0 when nothing lags.

    Unknown (None) when no lagging queue's age is known, and when nothing lags in a partial
    read: the queues not read may."""
    at = offsets.taken_at_ms
    lagging = [q for q in offsets.topic_queues if q.lag]
    if not lagging:
        if is_partial(offsets):
            return None
        return 0 if any(q.committed is not None for q in offsets.topic_queues) else None
    known = [d for q in lagging if (d := queue_delay(q, delays, at)) is not None]
    return max(known) if known else None


def summarize(
    window: Sequence[Sample],
    delays: Mapping[QueueKey, int],
    *,
    min_samples: int = MIN_SAMPLES,
) -> GroupSummary:
    if not window:
        raise ValueError("a summary needs at least one refresh")
    latest = window[-1].offsets
    history = lag_series(window)
    return GroupSummary(
        offsets=latest,
        verdict=evaluate(window, min_samples=min_samples),
        trend=lag_trend(window),
        time_behind_ms=time_behind_ms(latest, delays),
        lag_history=history,
        missing=missing(latest),
        restarted=len(history) < len(window),
    )


def rank(status: Status, lag: int | None, group: str) -> tuple[int, int, str]:
    """Where a group stands in "worst first": status, then lag (unknown as none), then name."""
    return (-status.severity, -(lag or 0), group)


def worst_first(summaries: Iterable[GroupSummary]) -> list[GroupSummary]:
    """Worst status first, then most lag, then name."""
    return sorted(summaries, key=lambda s: rank(s.verdict.status, s.offsets.total_lag, s.group))


# ---- brokers -----------------------------------------------------------------------------------

NOT_REGISTERED = "not registered with the name server"


def vanished(known: Mapping[str, str], listed: Iterable[str]) -> dict[str, str]:
    """Brokers seen earlier (name -> address) that the name server no longer lists.

    A stopped broker unregisters (or its channel closes), so the name server simply stops naming
    it; to an operator that broker is down, not gone.
    """
    names = set(listed)
    return {n: a for n, a in sorted(known.items()) if n not in names}
