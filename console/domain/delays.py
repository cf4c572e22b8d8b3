"""How far behind a group's queues are, without asking the broker what it already said.

The broker's answer (QUERY_CONSUME_TIME_SPAN) is "now minus the store time of the next message
to consume", and it reads several messages of every queue to give it. A stored message's time
never changes, so while a group's committed offset on a queue stays where it was, its delay
follows from the clock alone. A refresh of 500 stalled groups asked the brokers 1000 times for
answers they had already given; with this, only queues whose committed offset moved are asked.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping

from console.domain.offsets import QueueKey, QueueOffsets
from console.rocketmq.models import ConsumeTimeSpan


class NextStoreTimes:
    """Per group and queue: the committed offset seen, and the store time of the message at it
    (on this process's clock, so the broker's clock does not matter)."""

    def __init__(self, clock_ms: Callable[[], int] | None = None) -> None:
        self._clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self._known: dict[tuple[str, QueueKey], tuple[int, int]] = {}

    def delays(self, group: str, queues: Iterable[QueueOffsets]) -> dict[QueueKey, int] | None:
        """The delay of every queue, or None when any of them has to be asked."""
        now = self._clock_ms()
        out: dict[QueueKey, int] = {}
        for q in queues:
            if q.committed is None:
                return None  # the broker decides where such a queue's consumer stands
            if q.committed >= q.max_offset:
                out[q.key] = 0  # caught up: nothing is waiting
                continue
            known = self._known.get((group, q.key))
            if known is None or known[0] != q.committed:
                return None
            out[q.key] = max(now - known[1], 0)
        return out

    def learn(
        self,
        group: str,
        queues: Iterable[QueueOffsets],
        spans: Mapping[QueueKey, ConsumeTimeSpan],
        answered_at_ms: int,
    ) -> None:
        """Keep what an answer says about queues with messages waiting."""
        for q in queues:
            span = spans.get(q.key)
            slot = (group, q.key)
            if span is None or q.committed is None or q.committed >= q.max_offset:
                self._known.pop(slot, None)
            elif span.delay_ms > 0:
                self._known[slot] = (q.committed, answered_at_ms - span.delay_ms)
            else:
                self._known.pop(slot, None)  # waiting but no time given: ask again next time

    def forget_except(self, groups: Iterable[str]) -> None:
        """Drop the groups no longer listed (deleted groups must not pile up)."""
        keep = set(groups)
        for slot in [s for s in self._known if s[0] not in keep]:
            del self._known[slot]
