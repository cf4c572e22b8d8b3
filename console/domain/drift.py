"""The check right before an apply writes: has the cluster moved since the plan was made?

A plan is a compare-and-set: each queue's target was chosen knowing its committed offset then
(`current`). Read again just before writing, a queue whose offset changed in a way the plan did
not expect is drift, and the apply refuses until re-planned or explicitly accepted:

- a group with no consumer online should not move at all: any change is drift (someone else is
  committing, or a consumer came and went);
- a group with consumers online moves forward as it consumes: forward progress is expected, any
  other change (moved back, no longer committed) is drift.

Targets below the queue's min offset now (the commit log was cleaned since planning) are clamped
again to the new min and reported, so nothing is written that the broker would not serve.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from console.domain.plan import PlanRow

#: A queue of a plan: group, topic, broker, queue id.
RowKey = tuple[str, str, str, int]


def row_key(row: PlanRow) -> RowKey:
    return (row.group, row.topic, row.broker, row.queue_id)


def key_text(key: RowKey) -> str:
    group, topic, broker, queue_id = key
    return f"{group} {topic}/{broker}/{queue_id}"


@dataclass(frozen=True, slots=True)
class Drift:
    """A queue someone else moved: since the plan was made (an apply's check), or since the
    apply wrote it (a resume's check, which knows the target it was written to)."""

    key: RowKey
    planned: int | None  # the committed offset the plan saw (a resume: before the apply)
    now: int | None  # the committed offset read right before writing
    why: str
    #: A resume's: the target the apply wrote (None: the drift of an apply's check).
    target: int | None = None

    def line(self) -> str:
        def show(v: int | None) -> str:
            return "nothing committed" if v is None else str(v)

        if self.target is not None:
            moved = f"before the apply {show(self.planned)}, target {self.target}"
            return f"{key_text(self.key)}: {moved}, now {show(self.now)}"
        moved = f"planned from {show(self.planned)}, now {show(self.now)}"
        return f"{key_text(self.key)}: {moved} ({self.why})"


@dataclass(frozen=True, slots=True)
class Reclamped:
    key: RowKey
    planned_target: int
    target: int  # the new min offset
    line: str


def find_drift(
    rows: Iterable[PlanRow], now: Mapping[RowKey, int | None], *, online: bool
) -> tuple[Drift, ...]:
    """Queues of `rows` (the ones the apply will write) whose committed offset moved unexpectedly.
    A queue missing from `now` was not read: that is not drift, it is a read that failed, and the
    caller must not write before it has read every queue."""
    out = []
    for row in rows:
        key = row_key(row)
        if key not in now:
            raise KeyError(f"{key_text(key)} was not read again before writing")
        before, after = row.current, now[key]
        if before == after:
            continue
        if after is None:
            out.append(Drift(key, before, after, "no longer committed"))
        elif not online:
            out.append(Drift(key, before, after, "moved while no consumer was online"))
        elif before is not None and after < before:
            out.append(Drift(key, before, after, "moved back"))
    return tuple(out)


def reclamp(
    rows: Iterable[PlanRow], min_now: Mapping[tuple[str, str, int], int]
) -> tuple[tuple[PlanRow, ...], tuple[Reclamped, ...]]:
    """Rows with targets below the queue's current min offset (keyed by topic, broker, queue id)
    raised to it, and what was raised. A queue whose min was not read keeps its target."""
    out: list[PlanRow] = []
    raised: list[Reclamped] = []
    for row in rows:
        low = min_now.get((row.topic, row.broker, row.queue_id))
        if row.target is None or low is None or row.target >= low:
            out.append(row)
            continue
        delta = None if row.current is None else low - row.current
        out.append(replace(row, target=low, delta=delta, clamp="below_min"))
        raised.append(
            Reclamped(
                row_key(row),
                row.target,
                low,
                f"{key_text(row_key(row))}: target {row.target} is below the min offset {low} "
                f"now (already deleted): writing {low}",
            )
        )
    return tuple(out), tuple(raised)


def holds(before: int | None, target: int, stored: int | None, *, online: bool) -> bool:
    """Whether a queue read back is where it would be had the write taken (not proof of it).

    With no consumer online nothing else moves it: it must hold the target. With consumers
    online it moves on from the target as they consume, so anything at or past the target
    holds, except, for a replay (target below the offset before), an offset still at or past
    the old one: that is the old position.
    """
    if stored is None:
        return False
    if not online:
        return stored == target
    if is_replay(before, target):
        assert before is not None
        return target <= stored < before
    return stored >= target


def proves(before: int | None, target: int, stored: int | None, *, online: bool) -> bool:
    """Whether a queue read back proves the write took: a value it can only hold through it.

    Offline, the target itself. Online, a replay's offset between the target and the old
    position (consumers only move forward). A skip online (a target past the offset before, or
    a first commit) is proved only by the target itself: a consumer that never saw the reset
    reaches and passes the target by consuming. A target equal to the offset before asked for
    no move at all: anything at or past it is consumption.
    """
    if not holds(before, target, stored, online=online):
        return False
    if online and not is_replay(before, target) and before != target:
        return stored == target
    return True


def is_replay(before: int | None, target: int) -> bool:
    return before is not None and target < before
