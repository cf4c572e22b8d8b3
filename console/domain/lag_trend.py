"""How a group's lag moves and how far behind it is: the trend over the refreshes that read the same
thing (a total compares only with those), the sparkline, and the time behind (now minus the store
time of the first unconsumed message, as the broker says it; unknown rather than guessed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from console.domain.offsets import GroupOffsets, QueueKey, QueueOffsets, known_delay
from console.domain.readings import Reading, below_min, is_partial

R = TypeVar("R", bound=Reading)


@dataclass(frozen=True, slots=True)
class LagTrend:
    delta: int  # total lag, last sample minus first
    seconds: float  # time between them

    @property
    def per_minute(self) -> float:
        return self.delta * 60.0 / self.seconds if self.seconds > 0 else 0.0


def comparable(window: Sequence[R]) -> Sequence[R]:
    """The refreshes at the end of the window that read what the latest read: the same queues
    with lag known, and the same parts missing. A total compares with those only."""
    if not window:
        return window
    coverage = window[-1].coverage
    start = len(window) - 1
    while start > 0 and window[start - 1].coverage == coverage:
        start -= 1
    return window[start:]


def lag_series(window: Sequence[Reading]) -> tuple[int, ...]:
    """Total lag at each comparable refresh (the sparkline)."""
    return tuple(s.total_lag for s in comparable(window))


def lag_trend(window: Sequence[Reading]) -> LagTrend | None:
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


def lagging_topics(sample: Reading) -> dict[str, tuple[str, ...]]:
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
    read: the queues not read may. A lite group's is its oldest unconsumed message among the
    lite topics its brokers list as most behind (console.domain.lite)."""
    at = offsets.taken_at_ms
    lagging = [q for q in offsets.topic_queues if q.lag]
    lite = offsets.lite
    if lite is not None and lite.total:
        oldest = lite.oldest_unconsumed_ms
        if oldest is None or (lagging and not delays):
            return None
        known = [d for q in lagging if (d := queue_delay(q, delays, at)) is not None]
        return max([max(0, at - oldest), *known])
    if not lagging:
        if is_partial(offsets):
            return None
        if lite is not None:
            return 0
        return 0 if any(q.committed is not None for q in offsets.topic_queues) else None
    if not delays:
        return None  # none asked yet (a first refresh shows the lags before)
    known = [d for q in lagging if (d := queue_delay(q, delays, at)) is not None]
    return max(known) if known else None
