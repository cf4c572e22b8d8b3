"""Lag history values: one refresh of one group as the workspace keeps it, and the marks (applies,
undos) drawn over it.

A `LagPoint` is what the console read at one instant, cut down to what the chart, the Burrow rules
and "where was the group an hour ago" need: the total lag (None when nothing could be read: never
0), what the read lacked (a partial point's total is a lower bound), who was online, and each
queue's committed and max offset. Old points may have lost their per-queue detail (`detailed`
False) when the store thinned them; their totals stay.

The JSON form is one line per point, short keys, so a day of a busy group stays small:

    {"v":1,"t":MS,"lag":N|null,"on":N|null,"p":[missing...],"cl":1,
     "q":[[topic,broker,[[queue_id,committed|null,max],...]],...]}

`p` is absent on a complete point, `q` on a point without detail, `cl` unless the group keeps its
offsets on its clients (BROADCASTING).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from console.domain.gaps import Gap, Part
from console.domain.offsets import GroupOffsets, QueueKey
from console.rocketmq.topics import is_retry_topic

FORMAT = 1
#: Names of missing parts kept per point; more are summed up in one "+N more".
MISSING_NAMES = 10


class PointError(ValueError):
    """A line that is not a lag point (cut short, edited, of a newer format)."""


def missing(offsets: GroupOffsets) -> tuple[str, ...]:
    """What a read lacks, by name ("broker-b", "queue orders/broker-a/3"): the reader's gaps
    and the brokers it names unreachable (either may say so; they may say it of the same one)."""
    named = {_gap_name(g) for g in offsets.gaps}
    named |= set(offsets.unreachable_brokers)
    return tuple(sorted(named))


def _gap_name(g: Gap) -> str:
    return g.name if g.part is Part.BROKER else f"{g.part} {g.name}"


@dataclass(frozen=True, slots=True)
class QueuePoint:
    topic: str
    broker: str
    queue_id: int
    #: None: nothing committed, or the read could not tell (the point's `missing` then says so).
    committed: int | None
    max_offset: int

    @property
    def key(self) -> QueueKey:
        return (self.topic, self.broker, self.queue_id)

    @property
    def lag(self) -> int | None:
        if self.committed is None:
            return None
        return max(self.max_offset - self.committed, 0)

    @property
    def retry(self) -> bool:
        return is_retry_topic(self.topic)


@dataclass(frozen=True, slots=True)
class LagPoint:
    at_ms: int
    #: Lag over the group's topics (retry excluded), a lower bound when `partial`; None when
    #: nothing could be read (no broker answered, nothing committed, or client-local offsets).
    total_lag: int | None
    #: What the read lacked, by name; empty on a complete read.
    missing: tuple[str, ...] = ()
    #: Clients online; None when no broker could say who is connected.
    online: int | None = None
    queues: tuple[QueuePoint, ...] = ()
    #: False when the store dropped the per-queue detail of this (old) point.
    detailed: bool = True
    #: A BROADCASTING group: its offsets live on its clients, the brokers' numbers mean nothing.
    client_local: bool = False

    @property
    def partial(self) -> bool:
        return bool(self.missing)

    @property
    def topic_queues(self) -> tuple[QueuePoint, ...]:
        return tuple(q for q in self.queues if not q.retry)

    def committed(self) -> dict[QueueKey, int | None]:
        """Each queue's committed offset (None: unknown), retry queues included."""
        return {q.key: q.committed for q in self.queues}

    def without_detail(self) -> LagPoint:
        return replace(self, queues=(), detailed=False)

    @classmethod
    def of(cls, offsets: GroupOffsets, at_ms: int) -> LagPoint:
        """The point a read makes, timed `at_ms` (the console's clock, not the reader's)."""
        queues = tuple(
            QueuePoint(q.topic, q.broker, q.queue_id, q.committed, q.max_offset)
            for q in offsets.queues
        )
        topic = [q for q in queues if not q.retry]
        known = [q.lag for q in topic if q.lag is not None]
        # A POP group's popped-but-unacked messages are past its committed offsets: its lag.
        # A lite group's is what its brokers count: it has no queue of its own.
        lite = offsets.lite.total if offsets.lite is not None else None
        total = (
            sum(known) + offsets.popped_unacked + (lite or 0)
            if (known or lite is not None) and offsets.answered and not offsets.client_local
            else None
        )
        online = len(offsets.clients) if offsets.clients_known else None
        return cls(
            at_ms=at_ms,
            total_lag=total,
            missing=_capped(missing(offsets)),
            online=online,
            queues=queues,
            client_local=offsets.client_local,
        )

    # ---- the line ----------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"v": FORMAT, "t": self.at_ms, "lag": self.total_lag}
        out["on"] = self.online
        if self.missing:
            out["p"] = list(self.missing)
        if self.client_local:
            out["cl"] = 1
        if self.detailed:
            by: dict[tuple[str, str], list[list[int | None]]] = {}
            for q in self.queues:
                by.setdefault((q.topic, q.broker), []).append(
                    [q.queue_id, q.committed, q.max_offset]
                )
            out["q"] = [[t, b, rows] for (t, b), rows in by.items()]
        return out

    @classmethod
    def from_json(cls, raw: Any) -> LagPoint:
        if not isinstance(raw, Mapping):
            raise PointError("not an object")
        if raw.get("v") != FORMAT:
            raise PointError(f"format {raw.get('v')!r}, not {FORMAT}")
        at = _int(raw.get("t"), "t")
        total = _opt_int(raw.get("lag"), "lag")
        online = _opt_int(raw.get("on"), "on")
        lacks = raw.get("p", [])
        if not isinstance(lacks, list) or not all(isinstance(x, str) for x in lacks):
            raise PointError("p is not a list of names")
        detail = raw.get("q")
        queues: list[QueuePoint] = []
        if detail is not None:
            if not isinstance(detail, list):
                raise PointError("q is not a list")
            for entry in detail:
                queues += _queues(entry)
        return cls(
            at_ms=at,
            total_lag=total,
            missing=tuple(lacks),
            online=online,
            queues=tuple(queues),
            detailed=detail is not None,
            client_local=bool(raw.get("cl", 0)),
        )


def _capped(names: tuple[str, ...]) -> tuple[str, ...]:
    if len(names) <= MISSING_NAMES:
        return names
    return (*names[:MISSING_NAMES], f"+{len(names) - MISSING_NAMES} more")


def _queues(entry: Any) -> list[QueuePoint]:
    if not (isinstance(entry, list) and len(entry) == 3):
        raise PointError("a q entry is not [topic, broker, queues]")
    topic, broker, rows = entry
    if not (isinstance(topic, str) and isinstance(broker, str) and isinstance(rows, list)):
        raise PointError("a q entry is not [topic, broker, queues]")
    out = []
    for row in rows:
        # `type(...) is int` rather than the helpers: a day's file holds ~40,000 of these.
        if not (isinstance(row, list) and len(row) == 3):
            raise PointError("a queue is not [queue id, committed, max]")
        qid, committed, high = row
        if type(qid) is not int or type(high) is not int:
            raise PointError("a queue id or max offset is not an integer")
        if committed is not None and type(committed) is not int:
            raise PointError("a committed offset is not an integer")
        out.append(QueuePoint(topic, broker, qid, committed, high))
    return out


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PointError(f"{name} is not an integer")
    return value


def _opt_int(value: Any, name: str) -> int | None:
    return None if value is None else _int(value, name)


@dataclass(frozen=True, slots=True)
class LagSeries:
    """One group's points over a time range, oldest first, and how many lines of its file could
    not be read (cut short by a console killed mid-write, or edited)."""

    cluster: str
    group: str
    points: tuple[LagPoint, ...]
    skipped: int = 0

    @property
    def newest(self) -> LagPoint | None:
        return self.points[-1] if self.points else None

    def between(self, since_ms: int | None, until_ms: int | None) -> LagSeries:
        kept = tuple(
            p
            for p in self.points
            if (since_ms is None or p.at_ms >= since_ms)
            and (until_ms is None or p.at_ms <= until_ms)
        )
        return replace(self, points=kept)


@dataclass(frozen=True, slots=True)
class Mark:
    """An apply or an undo of the group, drawn on the chart at the time it started."""

    at_ms: int
    kind: str  # apply or undo
    apply_id: str
    status: str  # how it ended: finished, stopped, running, interrupted
    queues: int = 0
    verified: int = 0


def at_or_before(points: Iterable[LagPoint], at_ms: int) -> LagPoint | None:
    """The newest point with per-queue detail taken at or before `at_ms`."""
    best: LagPoint | None = None
    for p in points:
        if p.detailed and p.at_ms <= at_ms and (best is None or p.at_ms >= best.at_ms):
            best = p
    return best
