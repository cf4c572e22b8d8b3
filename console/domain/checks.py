"""Checks a spec against what a snapshot holds, before any plan row is computed.

The plan job sums the snapshot up per (group, topic, broker) in one small Spark action and hands
the cells to these plain functions, so every rule — and every message naming the field at fault —
is testable without Spark.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from console.domain.spec import ResetSpec, Scope, ShiftBy, SpecError, ToGroup
from console.rocketmq.topics import DLQ_PREFIX, RETRY_PREFIX


@dataclass(frozen=True, slots=True)
class ScopeCell:
    """The queues of one group on one topic of one broker, as far as the spec cares."""

    group: str
    topic: str
    broker: str
    queue_ids: tuple[int, ...]  # those of scope.queue_ids present here (empty without a filter)
    room_up: int | None  # largest max - committed among the queues in scope
    room_down: int | None  # largest committed - min among the queues in scope


def topic_in_scope(scope: Scope, group: str, topic: str) -> bool:
    """Named topics, or every topic the group consumes; its retry topic only on request."""
    own_retry = topic.startswith(RETRY_PREFIX + group)
    if own_retry and scope.include_retry:
        return True
    if scope.topics:
        return topic in scope.topics
    return not (topic.startswith(RETRY_PREFIX) or topic.startswith(DLQ_PREFIX))


def check_scope(spec: ResetSpec, cells: Sequence[ScopeCell], snapshot_id: str) -> None:
    scope = spec.scope
    present = sorted({c.group for c in cells})
    for i, group in enumerate(scope.groups):
        if group not in present:
            raise SpecError(
                f"scope.groups[{i}]",
                f"group {group!r} has no offsets in snapshot {snapshot_id}"
                f" (groups there: {_list(present)})",
            )
    if isinstance(spec.strategy, ToGroup) and spec.strategy.group not in present:
        raise SpecError(
            "strategy.to-group",
            f"group {spec.strategy.group!r} has no offsets in snapshot {snapshot_id}",
        )
    mine = [c for c in cells if c.group in scope.groups]
    topics = sorted({c.topic for c in mine})
    for i, topic in enumerate(scope.topics):
        if topic not in topics:
            raise SpecError(
                f"scope.topics[{i}]",
                f"{_list(scope.groups)} consume(s) no topic {topic!r} (topics: {_list(topics)})",
            )
    brokers = sorted({c.broker for c in mine})
    for i, broker in enumerate(scope.brokers):
        if broker not in brokers:
            raise SpecError(
                f"scope.brokers[{i}]",
                f"broker {broker!r} holds no queue of {_list(scope.groups)}"
                f" (brokers: {_list(brokers)})",
            )
    chosen = [
        c
        for c in mine
        if topic_in_scope(scope, c.group, c.topic)
        and (not scope.brokers or c.broker in scope.brokers)
    ]
    if not chosen:
        raise SpecError("scope", "matches no queue in the snapshot")
    if scope.queue_ids:
        ids = {q for c in chosen for q in c.queue_ids}
        for i, queue_id in enumerate(scope.queue_ids):
            if queue_id not in ids:
                raise SpecError(
                    f"scope.queue_ids[{i}]",
                    f"no queue {queue_id} on the topics and brokers in scope",
                )
        chosen = [c for c in chosen if c.queue_ids]
    if isinstance(spec.strategy, ShiftBy):
        _check_shift(spec.strategy.delta, chosen)


def _check_shift(delta: int, cells: Iterable[ScopeCell]) -> None:
    """A shift that no queue in scope can honour is a typo, not a plan full of clamps."""
    cells = list(cells)
    where = "strategy.shift-by"
    if delta > 0:
        room = max((c.room_up for c in cells if c.room_up is not None), default=None)
        if room is None:
            raise SpecError(where, "no queue in scope has a committed offset to shift from")
        if delta > room:
            raise SpecError(
                where,
                f"+{delta} is beyond the range of every queue in scope: at most {room} "
                "message(s) are left to skip",
            )
    else:
        room = max((c.room_down for c in cells if c.room_down is not None), default=None)
        if room is None:
            raise SpecError(where, "no queue in scope has a committed offset to shift from")
        if -delta > room:
            raise SpecError(
                where,
                f"{delta} is beyond the range of every queue in scope: at most {room} "
                "message(s) can be re-consumed",
            )


def check_source_groups(groups: Iterable[str], present: Iterable[str], snapshot_id: str) -> None:
    have = set(present)
    missing = [g for g in groups if g not in have]
    if missing:
        raise SpecError(
            "strategy.to-snapshot",
            f"snapshot {snapshot_id} has no offsets for {_list(missing)}",
        )


def _list(items: Iterable[str]) -> str:
    items = list(items)
    return ", ".join(items) if items else "none"
