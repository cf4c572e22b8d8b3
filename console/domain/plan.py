"""A plan: per queue current → target with warnings, computed from a snapshot and a spec.

This module holds what both sides of the plan job agree on — the column layout of snapshots and
plan rows, warning codes, the header written next to the rows (with the reset path each group
was planned with: chosen by console/services/plan/paths_now.py from console.domain.reset_paths'
rule) and the content hash — as plain values with no Spark or Arrow in sight.

One piece (over 400 lines): the plan job (jobs/) and the console read and write the same files,
so their layout, the header's fields and how each is checked when read are kept together: a
column or a field changed here changes for both sides at once.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from console import json_text
from console.domain.reset_paths import ResetPath, ResetPathKind
from console.domain.spec import ResetSpec, SpecError, parse_spec, spec_to_dict
from console.errors import BadFile

# Column name -> logical type ("string", "int", "bigint", "double", "array<string>").
# The snapshot writer (pyarrow) and the plan job (Spark) both derive their schemas from these.
SNAPSHOT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("cluster", "string"),
    ("broker", "string"),
    ("broker_addr", "string"),
    ("topic", "string"),
    ("queue_id", "int"),
    ("group", "string"),
    ("min_offset", "bigint"),
    ("max_offset", "bigint"),
    ("committed", "bigint"),  # null: the group never committed on this queue
    ("last_timestamp", "bigint"),  # store time of message committed-1; null when unknown
    ("min_timestamp", "bigint"),  # store time of the first message; null when unknown
    ("max_timestamp", "bigint"),  # store time of the last message; null when unknown
    ("clients", "int"),  # consumers of the group online when the snapshot was taken
    ("message_model", "string"),
    ("consume_tps", "double"),  # the group's consume rate as the brokers report it
    ("taken_at", "bigint"),  # epoch ms
)

PLAN_COLUMNS: tuple[tuple[str, str], ...] = (
    ("cluster", "string"),
    ("group", "string"),
    ("topic", "string"),
    ("broker", "string"),
    ("queue_id", "int"),
    ("min_offset", "bigint"),
    ("max_offset", "bigint"),
    ("current", "bigint"),
    ("requested", "bigint"),  # what the strategy asked for, before clamping
    ("target", "bigint"),  # null: this queue is left as it is
    ("delta", "bigint"),  # target - current: + re-consumes, - skips
    ("clamp", "string"),  # why target differs from requested: below_min / above_max
    ("warnings", "array<string>"),
    ("current_time", "bigint"),  # store time at the current offset (epoch ms)
    ("target_time", "bigint"),  # store time at the target offset (estimated, see the job)
    ("span_ms", "bigint"),  # current_time - target_time: + replays that much time, - skips it
)
PLAN_KEY = ("group", "topic", "broker", "queue_id")


class PlanWarning(StrEnum):
    BELOW_MIN = "below_min"
    ABOVE_MAX = "above_max"
    NO_COMMITTED = "no_committed"
    NO_SOURCE = "no_source"
    CONSUMERS_ONLINE = "consumers_online"
    BROADCASTING = "broadcasting"
    CURRENT_BELOW_MIN = "current_below_min"
    AFTER_NEWEST = "after_newest"
    MIN_UNKNOWN = "min_unknown"

    @property
    def text(self) -> str:
        return WARNING_TEXT[self]


WARNING_TEXT = {
    PlanWarning.BELOW_MIN: "target below the min offset: those messages are already deleted",
    PlanWarning.ABOVE_MAX: "target above the max offset: nothing has been written there yet",
    PlanWarning.NO_COMMITTED: "nothing committed on this queue: the current offset is unknown",
    PlanWarning.NO_SOURCE: "the source has no offset for this queue: it is left as it is",
    PlanWarning.CONSUMERS_ONLINE: "consumers of the group are online",
    PlanWarning.BROADCASTING: "broadcasting group: its offsets live on the clients, not the broker",
    PlanWarning.CURRENT_BELOW_MIN: "the current offset is below the min offset: the messages "
    "between them are already deleted",
    PlanWarning.AFTER_NEWEST: "the time is after the newest message of the queue: the target is "
    "its max offset, every message not yet consumed is skipped",
    PlanWarning.MIN_UNKNOWN: "the min offset of the queue could not be read: the target is not "
    "checked against it (it may point at messages already deleted)",
}


def warning_text(code: str) -> str:
    """The sentence for a warning code; a code this version does not know is shown as is."""
    try:
        return PlanWarning(code).text
    except ValueError:
        return code


class Clamp(StrEnum):
    BELOW_MIN = "below_min"
    ABOVE_MAX = "above_max"


@dataclass(frozen=True, slots=True)
class PlanRow:
    cluster: str
    group: str
    topic: str
    broker: str
    queue_id: int
    min_offset: int
    max_offset: int
    current: int | None
    requested: int | None
    target: int | None
    delta: int | None
    clamp: str | None
    warnings: tuple[str, ...]
    current_time: int | None = None
    target_time: int | None = None
    span_ms: int | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PlanRow:
        values: dict[str, Any] = {name: d.get(name) for name, _ in PLAN_COLUMNS}
        values["warnings"] = tuple(values["warnings"] or ())
        return cls(**values)

    @property
    def changed(self) -> bool:
        return self.target is not None and self.target != self.current


@dataclass(frozen=True, slots=True)
class Totals:
    """Sums over the rows of one group (topic None) or one topic of a group."""

    group: str
    topic: str | None
    queues: int
    changed: int
    re_consume: int  # messages delivered again: the sum of -delta over the negative deltas
    skip: int  # messages never delivered: the sum of the positive deltas
    warned: int  # rows with at least one warning
    lag_before: int  # sum of max - current where current is known
    lag_after: int  # sum of max - target where target is known

    @property
    def net(self) -> int:
        """The sum of the deltas (target - current)."""
        return self.skip - self.re_consume

    @staticmethod
    def combine(group: str, parts: Iterable[Totals]) -> Totals:
        parts = list(parts)
        return Totals(
            group=group,
            topic=None,
            queues=sum(p.queues for p in parts),
            changed=sum(p.changed for p in parts),
            re_consume=sum(p.re_consume for p in parts),
            skip=sum(p.skip for p in parts),
            warned=sum(p.warned for p in parts),
            lag_before=sum(p.lag_before for p in parts),
            lag_after=sum(p.lag_after for p in parts),
        )


@dataclass(frozen=True, slots=True)
class Impact:
    """How long a group (topic None) or one of its topics would take to catch up."""

    group: str
    topic: str | None
    re_consume: int
    lag_after: int
    rate: float | None  # messages per second
    rate_source: str | None  # "history" (snapshots) or "broker tps"
    catch_up_s: float | None

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Impact:
        values: dict[str, Any] = {name: d.get(name) for name in cls.__dataclass_fields__}
        return cls(**values)


# ---- header -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    cluster: str
    snapshot_id: str
    taken_at_ms: int


@dataclass(frozen=True, slots=True)
class PlanHeader:
    """plan.json: everything about a plan except its rows (rows.parquet).

    The spec is the typed value, parsed once when the file is read: every stage after the plan
    (the apply's check, the history, the mqadmin commands) reads it, never the mapping the file
    holds. A from-file strategy's rows are not in it: the plan's rows hold the targets."""

    plan_id: str
    spec: ResetSpec
    snapshot: SnapshotInfo
    created_at_ms: int
    content_hash: str
    rows: int
    totals: tuple[Totals, ...]
    timestamp_ms: int | None = None  # the store time a time strategy resolved to
    reset_paths: dict[str, ResetPath] = field(default_factory=dict)
    source_snapshot: SnapshotInfo | None = None  # to-snapshot: the snapshot restored
    imported_from: str | None = None
    format: int = 1

    def to_json(self) -> str:
        doc = {
            "format": self.format,
            "id": self.plan_id,
            "created_at": _iso(self.created_at_ms),
            "created_at_ms": self.created_at_ms,
            "spec": spec_to_dict(self.spec),
            "snapshot": _snapshot_dict(self.snapshot),
            "source_snapshot": _snapshot_dict(self.source_snapshot)
            if self.source_snapshot
            else None,
            "timestamp_ms": self.timestamp_ms,
            "content_hash": self.content_hash,
            "rows": self.rows,
            "totals": [_totals_dict(t) for t in self.totals],
            "reset_paths": {g: p.to_dict() for g, p in sorted(self.reset_paths.items())},
            "imported_from": self.imported_from,
        }
        return json.dumps(doc, indent=2, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, text: str, where: str = "plan.json") -> PlanHeader:
        """Parse plan.json's text; anything wrong is a BadFile naming `where` (and the line,
        for text that is not JSON)."""
        try:
            d = json_text.loads(text)
        except json_text.TooDeep as exc:
            raise BadFile(where, f"not a plan header ({exc.msg})", line=exc.lineno) from None
        except json.JSONDecodeError as exc:
            raise BadFile(where, f"not JSON: {exc.msg}", line=exc.lineno) from None
        if not isinstance(d, dict):
            raise BadFile(where, "not a plan header (a JSON object is expected)")
        try:
            spec = parse_spec(_get(d, "spec", dict), offsets=())
        except SpecError as exc:
            raise BadFile(where, f"the plan's spec: {exc}") from None
        except _BadField as exc:
            raise BadFile(where, f"not a plan header: {exc}") from None
        try:
            src = _get(d, "source_snapshot", dict, optional=True)
            paths = _get(d, "reset_paths", dict, optional=True) or {}
            return cls(
                plan_id=_get(d, "id", str),
                spec=spec,
                snapshot=_snapshot_info(_get(d, "snapshot", dict)),
                created_at_ms=_get(d, "created_at_ms", int),
                content_hash=_get(d, "content_hash", str),
                rows=_get(d, "rows", int),
                totals=tuple(_totals(t) for t in _get(d, "totals", list)),
                timestamp_ms=_get(d, "timestamp_ms", int, optional=True),
                reset_paths={str(g): _reset_path(g, p) for g, p in paths.items()},
                source_snapshot=_snapshot_info(src) if src else None,
                imported_from=_get(d, "imported_from", str, optional=True),
                format=_get(d, "format", int, optional=True) or 1,
            )
        except _BadField as exc:
            raise BadFile(where, f"not a plan header: {exc}") from None

    def group_totals(self) -> list[Totals]:
        return [t for t in self.totals if t.topic is None]


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def _snapshot_dict(s: SnapshotInfo) -> dict[str, Any]:
    return {"cluster": s.cluster, "id": s.snapshot_id, "taken_at_ms": s.taken_at_ms}


def _snapshot_info(d: Mapping[str, Any]) -> SnapshotInfo:
    return SnapshotInfo(
        _get(d, "cluster", str, at="snapshot"),
        _get(d, "id", str, at="snapshot"),
        _get(d, "taken_at_ms", int, at="snapshot"),
    )


class _BadField(Exception):
    pass


_KINDS: dict[type, str] = {
    str: "a string",
    int: "an integer",
    dict: "an object",
    list: "a list",
}


def _get(
    d: Mapping[str, Any], key: str, kind: type, *, optional: bool = False, at: str = ""
) -> Any:
    """`d[key]`, which must be of `kind` (None allowed when optional); _BadField says which."""
    value = d.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        name = f"{at}.{key}" if at else key
        got = "nothing" if value is None else type(value).__name__
        raise _BadField(f"field {name!r} must be {_KINDS[kind]}, got {got}")
    return value


def _totals(t: Any) -> Totals:
    if not isinstance(t, dict):
        raise _BadField("field 'totals' must be a list of objects")
    topic = _get(t, "topic", str, optional=True, at="totals")
    ints = {
        name: _get(t, name, int, at="totals")
        for name in Totals.__dataclass_fields__
        if name not in ("group", "topic")
    }
    return Totals(group=_get(t, "group", str, at="totals"), topic=topic, **ints)


def _reset_path(group: str, p: Any) -> ResetPath:
    if not isinstance(p, dict):
        raise _BadField(f"reset path of {group!r} must be an object")
    try:
        kind = ResetPathKind(str(p.get("kind")))
    except ValueError:
        raise _BadField(f"reset path of {group!r}: unknown kind {p.get('kind')!r}") from None
    at = f"reset_paths.{group}"
    return ResetPath(
        kind,
        _get(p, "reason", str, at=at),
        _get(p, "blocker", str, optional=True, at=at),
        _get(p, "file", str, optional=True, at=at),
        _get(p, "client_id", str, optional=True, at=at),
    )


def _totals_dict(t: Totals) -> dict[str, Any]:
    return {
        "group": t.group,
        "topic": t.topic,
        "queues": t.queues,
        "changed": t.changed,
        "re_consume": t.re_consume,
        "skip": t.skip,
        "warned": t.warned,
        "lag_before": t.lag_before,
        "lag_after": t.lag_after,
    }


# ---- ids ----------------------------------------------------------------------------------------


def stamp(ms: int) -> str:
    """Sortable, file-name safe UTC time: 20261122T030101123Z."""
    t = datetime.fromtimestamp(ms / 1000, UTC)
    return t.strftime("%Y%m%dT%H%M%S") + f"{ms % 1000:03d}Z"


_STAMP = re.compile(r"(\d{8}T\d{6})(\d{3})Z")


def parse_stamp(text: str) -> int | None:
    m = _STAMP.fullmatch(text)
    if not m:
        return None
    t = datetime.strptime(m.group(1), "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
    return int(t.timestamp()) * 1000 + int(m.group(2))


def new_plan_id(created_at_ms: int, groups: Sequence[str], kind: str, salt: str) -> str:
    """`<stamp>-<first group>-<strategy>-<6 hex>`; readable in a listing, unique by the salt."""
    first = re.sub(r"[^A-Za-z0-9._-]+", "-", groups[0] if groups else "plan").strip("-")
    digest = hashlib.sha256(f"{created_at_ms}:{salt}".encode()).hexdigest()[:6]
    return f"{stamp(created_at_ms)}-{first[:40]}-{kind}-{digest}"


#: Minutes after which a plan no longer describes the cluster: an apply refuses it (re-plan).
PLAN_MAX_AGE_MIN = 15
