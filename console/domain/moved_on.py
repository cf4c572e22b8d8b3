"""After a skip: did the consumer move on? A queue's committed offset past its target says the
consumer consumed the message at the target; at the target, the reset may not have reached the
consumer yet (console/services/read/group_watch.py, `wait_moved_on`, says why the read-back cannot
tell)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from console.domain.gaps import Gap
from console.domain.offsets import GroupOffsets, QueueKey
from console.domain.stuck import queue_lacks


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
            lacks = queue_lacks(key, read)
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
