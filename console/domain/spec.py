"""A reset spec: what the operator asks for (scope + one strategy), parsed from decoded YAML or
JSON (the files are read by console/services/plan/spec_files.py).

Every parse error is a `SpecError` that names the field (`strategy.to-timestamp`) or the file
and line (`offsets.csv:7`) so the operator can fix the input; nothing downstream runs on a spec
that did not parse.

One piece (over 400 lines): the strategies, their parsers and their writing back, which must
name every field the same way for its errors to point at it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar

from console.errors import UserError

# Offsets are Java longs; anything near the edge is a typo, and keeping shifts well inside
# 2^62 means current + shift can never overflow a long in the plan job.
MAX_OFFSET = 2**62
# Epoch milliseconds below this (March 1973) are almost certainly epoch seconds typed by mistake.
MIN_EPOCH_MS = 100_000_000_000


class SpecError(UserError, ValueError):
    """Bad input in a spec; `where` is the field path or `file:line` it is about."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem


class StrategyKind(StrEnum):
    EARLIEST = "earliest"
    LATEST = "latest"
    TO_OFFSET = "to-offset"
    SHIFT_BY = "shift-by"
    TO_TIMESTAMP = "to-timestamp"
    BY_DURATION = "by-duration"
    TO_GROUP = "to-group"
    TO_SNAPSHOT = "to-snapshot"
    FROM_FILE = "from-file"


@dataclass(frozen=True, slots=True)
class Scope:
    """Which queues a reset touches. Empty topics/brokers/queue_ids mean "all of them"."""

    cluster: str
    groups: tuple[str, ...]
    topics: tuple[str, ...] = ()
    brokers: tuple[str, ...] = ()
    queue_ids: tuple[int, ...] = ()
    include_retry: bool = False


@dataclass(frozen=True, slots=True)
class Earliest:
    kind: ClassVar[StrategyKind] = StrategyKind.EARLIEST


@dataclass(frozen=True, slots=True)
class Latest:
    kind: ClassVar[StrategyKind] = StrategyKind.LATEST


@dataclass(frozen=True, slots=True)
class ToOffset:
    kind: ClassVar[StrategyKind] = StrategyKind.TO_OFFSET

    offset: int


@dataclass(frozen=True, slots=True)
class ShiftBy:
    """Move the committed offset by `delta` messages: + skips forward, − re-consumes."""

    kind: ClassVar[StrategyKind] = StrategyKind.SHIFT_BY

    delta: int


@dataclass(frozen=True, slots=True)
class ToTimestamp:
    kind: ClassVar[StrategyKind] = StrategyKind.TO_TIMESTAMP

    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class ByDuration:
    """Go back `duration_ms` from the moment the plan is computed."""

    kind: ClassVar[StrategyKind] = StrategyKind.BY_DURATION

    duration_ms: int


@dataclass(frozen=True, slots=True)
class ToGroup:
    """Copy the committed offsets another group has on the same queues."""

    kind: ClassVar[StrategyKind] = StrategyKind.TO_GROUP

    group: str


@dataclass(frozen=True, slots=True)
class ToSnapshot:
    """Restore the offsets of a past snapshot: by its id, or the newest one taken at or before
    `at_ms`."""

    kind: ClassVar[StrategyKind] = StrategyKind.TO_SNAPSHOT

    snapshot_id: str | None = None
    at_ms: int | None = None


@dataclass(frozen=True, slots=True)
class FileOffset:
    """One line of an offsets file; `group` is None when the file applies to every group."""

    line: int
    topic: str
    broker: str
    queue_id: int
    offset: int
    group: str | None = None


@dataclass(frozen=True, slots=True)
class FromFile:
    kind: ClassVar[StrategyKind] = StrategyKind.FROM_FILE

    path: str
    rows: tuple[FileOffset, ...] = ()


Strategy = (
    Earliest
    | Latest
    | ToOffset
    | ShiftBy
    | ToTimestamp
    | ByDuration
    | ToGroup
    | ToSnapshot
    | FromFile
)
#: Reads a from-file strategy's CSV (console/services/plan/spec_files.py).
OffsetsLoader = Callable[[Path], tuple[FileOffset, ...]]

SCOPE_FIELDS = {"cluster", "groups", "group", "topics", "brokers", "queue_ids", "include_retry"}
TIME_STRATEGIES = frozenset({StrategyKind.TO_TIMESTAMP, StrategyKind.BY_DURATION})
#: Strategies that send every queue of a topic to one store time (earliest and latest are the
#: two ends of a queue): a legacy broker can push them to online clients as one timestamp.
ONE_TIME_STRATEGIES = TIME_STRATEGIES | {StrategyKind.EARLIEST, StrategyKind.LATEST}


def is_one_time(kind: StrategyKind | None) -> bool:
    return kind in ONE_TIME_STRATEGIES


def strategy_kind(value: Any) -> StrategyKind | None:
    """The kind a strategy as written names (`earliest`, `{to-timestamp: ...}`), without
    checking its value; None when it names none (a walkthrough's `"{answer}"` placeholder)."""
    if isinstance(value, Mapping) and len(value) == 1:
        value = next(iter(value))
    if not isinstance(value, str):
        return None
    try:
        return StrategyKind(value.strip().replace("_", "-"))
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class ResetSpec:
    scope: Scope
    strategy: Strategy
    # Targets outside [min, max] are moved to the nearest bound; off, they stay and are flagged.
    clamp: bool = True

    @property
    def one_time_per_topic(self) -> bool:
        """Whether every queue of each topic in scope goes to one store time (earliest, latest,
        a time, a duration back) over whole topics: what a broker's client push can carry
        (protocol §4.3). Per-queue targets (offsets, shifts, copies, files, some queues) cannot."""
        return not self.scope.queue_ids and is_one_time(self.strategy.kind)

    def as_recorded(self) -> ResetSpec:
        """The spec as a plan header keeps it: a from-file strategy's rows stay in their file
        (the plan's rows hold the targets)."""
        if isinstance(self.strategy, FromFile) and self.strategy.rows:
            return replace(self, strategy=FromFile(self.strategy.path))
        return self

    def timestamp_ms(self, now_ms: int) -> int | None:
        """The store time the strategy seeks, resolved against `now_ms`; None if not a time."""
        s = self.strategy
        if isinstance(s, ToTimestamp):
            return s.timestamp_ms
        if isinstance(s, ByDuration):
            return now_ms - s.duration_ms
        return None


def parse_spec(
    data: Any,
    *,
    base_dir: Path | None = None,
    source: str = "spec",
    offsets: Sequence[FileOffset] | None = None,
    load_offsets: OffsetsLoader | None = None,
) -> ResetSpec:
    """Build a spec from decoded YAML/JSON (or the UI's dict); raises SpecError.

    A from-file strategy takes the rows `offsets` hands over (parsed earlier: a job on a
    cluster cannot read the console's files), else its CSV as `load_offsets` reads it
    (console/services/plan/spec_files.py reads files; this module reads none).
    """
    doc = _mapping(data, source)
    _no_unknown(doc, {"scope", "strategy", "clamp"}, "")
    if "scope" not in doc:
        raise SpecError("scope", "missing; say at least which cluster and group(s)")
    if "strategy" not in doc:
        raise SpecError("strategy", f"missing; one of {', '.join(StrategyKind)}")
    scope = _scope(doc["scope"])
    strategy = _strategy(doc["strategy"], base_dir, offsets, load_offsets)
    clamp = _bool(doc.get("clamp", True), "clamp")
    if isinstance(strategy, ToGroup) and strategy.group in scope.groups:
        raise SpecError("strategy.to-group", f"{strategy.group!r} is also a group being reset")
    return ResetSpec(scope=scope, strategy=strategy, clamp=clamp)


def _scope(value: Any) -> Scope:
    doc = _mapping(value, "scope")
    _no_unknown(
        doc,
        {"cluster", "groups", "group", "topics", "brokers", "queue_ids", "include_retry"},
        "scope",
    )
    cluster = _name(doc.get("cluster"), "scope.cluster")
    if "group" in doc and "groups" in doc:
        raise SpecError("scope.group", "give either group or groups, not both")
    groups = _names(doc.get("groups", doc.get("group")), "scope.groups")
    if not groups:
        raise SpecError("scope.groups", "missing; name at least one consumer group")
    queue_ids = tuple(
        int_value(q, f"scope.queue_ids[{i}]", minimum=0)
        for i, q in enumerate(_seq(doc, "queue_ids"))
    )
    return Scope(
        cluster=cluster,
        groups=groups,
        topics=_names(doc.get("topics"), "scope.topics"),
        brokers=_names(doc.get("brokers"), "scope.brokers"),
        queue_ids=tuple(sorted(set(queue_ids))),
        include_retry=_bool(doc.get("include_retry", False), "scope.include_retry"),
    )


def _strategy(
    value: Any,
    base_dir: Path | None,
    offsets: Sequence[FileOffset] | None,
    load_offsets: OffsetsLoader | None,
) -> Strategy:
    kinds = ", ".join(StrategyKind)
    if isinstance(value, str):
        kind, arg, where = value.strip(), None, "strategy"
    else:
        doc = _mapping(value, "strategy")
        if len(doc) != 1:
            raise SpecError("strategy", f"give exactly one strategy ({kinds}), got {len(doc)}")
        kind, arg = next(iter(doc.items()))
        where = f"strategy.{kind}"
    try:
        k = StrategyKind(str(kind).replace("_", "-"))
    except ValueError:
        raise SpecError("strategy", f"unknown strategy {kind!r}; one of {kinds}") from None
    if k is StrategyKind.EARLIEST:
        return Earliest()
    if k is StrategyKind.LATEST:
        return Latest()
    if arg is None:
        raise SpecError(where, f"{k} needs a value")
    if k is StrategyKind.TO_OFFSET:
        return ToOffset(int_value(arg, where, minimum=0, maximum=MAX_OFFSET))
    if k is StrategyKind.SHIFT_BY:
        delta = int_value(arg, where, minimum=-MAX_OFFSET, maximum=MAX_OFFSET)
        if delta == 0:
            raise SpecError(where, "a shift of 0 changes nothing")
        return ShiftBy(delta)
    if k is StrategyKind.TO_TIMESTAMP:
        return ToTimestamp(parse_timestamp(arg, where))
    if k is StrategyKind.BY_DURATION:
        return ByDuration(parse_duration(arg, where))
    if k is StrategyKind.TO_GROUP:
        return ToGroup(_name(arg, where))
    if k is StrategyKind.TO_SNAPSHOT:
        return _to_snapshot(arg, where)
    path = Path(_name(arg, where)).expanduser()
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    if offsets is not None:
        return FromFile(str(path), tuple(offsets))
    if load_offsets is None:
        raise SpecError(where, "the offsets file is not read here: give its rows")
    return FromFile(str(path), load_offsets(path))


def _to_snapshot(arg: Any, where: str) -> ToSnapshot:
    if isinstance(arg, Mapping):
        _no_unknown(arg, {"id", "at"}, where)
        if ("id" in arg) == ("at" in arg):
            raise SpecError(where, "give either id (a snapshot id) or at (a time), not both")
        if "id" in arg:
            return ToSnapshot(snapshot_id=_name(arg["id"], f"{where}.id"))
        return ToSnapshot(at_ms=parse_timestamp(arg["at"], f"{where}.at"))
    return ToSnapshot(snapshot_id=_name(arg, where))


# ---- values ---------------------------------------------------------------------------------


def parse_timestamp(value: Any, where: str) -> int:
    """ISO 8601 with a zone (`2026-11-22T10:05:00+01:00`, `…Z`) or epoch milliseconds."""
    if isinstance(value, datetime):  # YAML turns unquoted timestamps into datetimes
        if value.tzinfo is None:
            raise SpecError(where, f"{value.isoformat()} has no time zone; add Z or +hh:mm")
        return int(value.timestamp() * 1000)
    if isinstance(value, bool):
        raise SpecError(where, "expected a time, got a boolean")
    if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
        ms = int(value)
        if ms < MIN_EPOCH_MS:
            raise SpecError(where, f"{ms} looks like epoch seconds; give epoch milliseconds")
        return ms
    if not isinstance(value, str) or not value.strip():
        raise SpecError(where, "expected an ISO 8601 time with a zone or epoch milliseconds")
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise SpecError(
            where, f"{text!r} is not an ISO 8601 time (e.g. 2026-11-22T10:05:00+01:00)"
        ) from None
    if parsed.tzinfo is None:
        raise SpecError(where, f"{text!r} has no time zone; add Z or an offset such as +01:00")
    return int(parsed.timestamp() * 1000)


_UNITS_MS = {
    "ms": 1,
    "s": 1000,
    "sec": 1000,
    "second": 1000,
    "m": 60_000,
    "min": 60_000,
    "minute": 60_000,
    "h": 3_600_000,
    "hr": 3_600_000,
    "hour": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
}
_PART = re.compile(r"\s*(\d+)\s*([a-z]+)\s*")
_ISO_DURATION = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?")


def parse_duration(value: Any, where: str) -> int:
    """`30m`, `30 minutes`, `1h30m`, `2 days`, or ISO 8601 `PT30M`; returns milliseconds."""
    if not isinstance(value, str) or not value.strip():
        raise SpecError(where, "expected a duration such as 30m, 2h or PT30M")
    # "30 minutes back" and "2h ago" read naturally in a spec; the direction is always back.
    text = re.sub(r"\s+(back|ago)$", "", value.strip().lower())
    iso = _ISO_DURATION.fullmatch(text.upper())
    if iso and any(iso.groups()):
        d, h, m, s = (int(g or 0) for g in iso.groups())
        ms = ((d * 24 + h) * 60 + m) * 60_000 + s * 1000
    else:
        ms, pos = 0, 0
        for part in _PART.finditer(text):
            if part.start() != pos:
                break
            word = part.group(2)
            unit = _UNITS_MS.get(word) or _UNITS_MS.get(word.removesuffix("s"))
            if unit is None:
                raise SpecError(where, f"unknown unit {part.group(2)!r} in {value!r}")
            ms += int(part.group(1)) * unit
            pos = part.end()
        if pos != len(text) or pos == 0:
            raise SpecError(where, f"{value!r} is not a duration (e.g. 30m, 1h30m, PT30M)")
    if ms <= 0:
        raise SpecError(where, "the duration must be longer than 0")
    return ms


# ---- writing back ---------------------------------------------------------------------------


def spec_to_dict(spec: ResetSpec) -> dict[str, Any]:
    """The spec as parse_spec reads it (from-file rows stay in their file)."""
    s = spec.scope
    scope: dict[str, Any] = {"cluster": s.cluster, "groups": list(s.groups)}
    if s.topics:
        scope["topics"] = list(s.topics)
    if s.brokers:
        scope["brokers"] = list(s.brokers)
    if s.queue_ids:
        scope["queue_ids"] = list(s.queue_ids)
    scope["include_retry"] = s.include_retry
    return {"scope": scope, "strategy": strategy_to_value(spec.strategy), "clamp": spec.clamp}


def strategy_to_value(strategy: Strategy) -> Any:
    match strategy:
        case Earliest() | Latest():
            return str(strategy.kind)
        case ToOffset(offset=n):
            return {str(strategy.kind): n}
        case ShiftBy(delta=n):
            return {str(strategy.kind): n}
        case ToTimestamp(timestamp_ms=ms):
            return {str(strategy.kind): format_ms(ms)}
        case ByDuration(duration_ms=ms):
            return {str(strategy.kind): f"{ms}ms"}
        case ToGroup(group=g):
            return {str(strategy.kind): g}
        case ToSnapshot(snapshot_id=sid, at_ms=at):
            if sid is not None:
                return {str(strategy.kind): {"id": sid}}
            return {str(strategy.kind): {"at": format_ms(at or 0)}}
        case FromFile(path=p):
            return {str(strategy.kind): p}


def describe(strategy: Strategy) -> str:
    """One line for a title or a log: `to-timestamp 2026-11-22T09:05:00.000Z`."""
    value = strategy_to_value(strategy)
    if isinstance(value, str):
        return value
    ((kind, arg),) = value.items()
    if isinstance(arg, Mapping):
        arg = next(iter(arg.values()))
    return f"{kind} {arg}"


def format_ms(ms: int) -> str:
    return (
        datetime.fromtimestamp(ms / 1000, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


# ---- small validators -----------------------------------------------------------------------


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SpecError(where, f"expected a mapping, got {_kind(value)}")
    return value


def _no_unknown(doc: Mapping[str, Any], known: set[str], where: str) -> None:
    for key in doc:
        if key not in known:
            path = f"{where}.{key}" if where else str(key)
            raise SpecError(path, f"unknown field; expected one of {', '.join(sorted(known))}")


def _name(value: Any, where: str) -> str:
    if value is None:
        raise SpecError(where, "missing")
    if not isinstance(value, str | int) or isinstance(value, bool) or not str(value).strip():
        raise SpecError(where, f"expected a name, got {_kind(value)}")
    return str(value).strip()


def _names(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    items: Sequence[Any] = [value] if isinstance(value, str) else value
    if not isinstance(items, Sequence):
        raise SpecError(where, f"expected a list of names, got {_kind(value)}")
    out: list[str] = []
    for i, item in enumerate(items):
        name = _name(item, f"{where}[{i}]")
        if name in out:
            raise SpecError(f"{where}[{i}]", f"{name!r} is listed twice")
        out.append(name)
    return tuple(out)


def _seq(doc: Mapping[str, Any], key: str) -> Sequence[Any]:
    value = doc.get(key)
    if value is None:
        return ()
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise SpecError(f"scope.{key}", f"expected a list, got {_kind(value)}")
    return value


def int_value(
    value: Any,
    where: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    bare: bool = False,
) -> int:
    if isinstance(value, bool):
        raise SpecError(where, "expected an integer, got a boolean")
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        value = int(value)
    if not isinstance(value, int):
        shown = repr(value) if bare else _kind(value)
        raise SpecError(where, f"expected an integer, got {shown}")
    if minimum is not None and value < minimum:
        if minimum <= -MAX_OFFSET:
            raise SpecError(where, f"{value} is beyond the offset range (at least {minimum})")
        raise SpecError(where, f"{value} is below {minimum}")
    if maximum is not None and value > maximum:
        raise SpecError(where, f"{value} is beyond the offset range (at most {maximum})")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise SpecError(where, f"expected true or false, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return f"{type(value).__name__} {value!r}"
