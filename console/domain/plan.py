"""A plan: per queue current → target with warnings, computed from a snapshot and a spec.

This module holds what both sides of the plan job agree on — the column layout of snapshots and
plan rows, warning codes, the header written next to the rows, the content hash, and which reset
path an apply would take — as plain values with no Spark or Arrow in sight.
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


# ---- reset path -------------------------------------------------------------------------------

# MQVersion ordinals (response header `version`). From V4_0_0_SNAPSHOT (212) to V5_9_9 (611)
# the enum is regular: every release x.y.z has its _SNAPSHOT just before it.
V5_1_0 = 433
_V4_0_0 = 213
_V5_9_9 = 611


def version_name(ordinal: int | None) -> str:
    """The release an ordinal means, spelled as brokers report themselves (`brokerVersionDesc`,
    what `rmq-console brokers` prints): 407 is V4_9_7."""
    if ordinal is None:
        return "unknown version"
    if not _V4_0_0 - 1 <= ordinal <= _V5_9_9:
        return f"MQVersion #{ordinal}"
    release = (ordinal - _V4_0_0 + 1) // 2  # releases since 4.0.0
    name = f"V{4 + release // 100}_{release // 10 % 10}_{release % 10}"
    return name if (ordinal - _V4_0_0) % 2 == 0 else f"{name}_SNAPSHOT"


class ResetPathKind(StrEnum):
    SERVER_SIDE = "server-side reset"
    CLIENT_PUSH = "client push"
    OFFLINE_UPDATE = "offline update"
    CLIENT_FILE = "client offsets file"  # a BROADCASTING client's offsets.json, on this host
    NONE = "no broker-side path"


@dataclass(frozen=True, slots=True)
class BrokerFacts:
    name: str
    version: int | None  # MQVersion ordinal; None when the broker did not answer
    server_side_reset: bool | None  # useServerSideResetOffset; None when unknown
    #: The broker keeps a server-side reset in memory only: after 5.3.3 its RocksDB offset
    #: store of `configManagerVersion=v2` saves a reset under topic and group swapped
    #: (ConsumerOffsetManagerV2.assignResetOffset), so the next restart loses it unless a
    #: consumer commits first.
    forgets_resets: bool = False


@dataclass(frozen=True, slots=True)
class ResetPath:
    kind: ResetPathKind
    reason: str
    blocker: str | None = None  # what the operator must do before an apply can work
    #: CLIENT_FILE: the offsets.json the apply rewrites, and whose client it is.
    file: str | None = None
    client_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": str(self.kind), "reason": self.reason, "blocker": self.blocker}
        if self.file is not None:
            d |= {"file": self.file, "client_id": self.client_id}
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ResetPath:
        return cls(
            ResetPathKind(d["kind"]),
            str(d["reason"]),
            d.get("blocker"),
            d.get("file"),
            d.get("client_id"),
        )


def choose_reset_path(
    brokers: Sequence[BrokerFacts],
    *,
    consumers_online: int,
    broadcasting: bool,
    per_queue: bool,
    pop: bool = False,
) -> ResetPath:
    """Which way an apply would move the offsets of one group, and why (protocol §4.3, §4.4).

    `per_queue` is true when targets are not "every queue of a topic to one timestamp" (explicit
    offsets, shifts, copies, or a scope limited to some queues): the legacy client push can only
    carry a timestamp, so those need the server-side path or a direct write.

    `pop`: its consumers pop (RocketMQ 5). Only the broker's own reset moves a POP group whose
    consumers are online: the proxy drops a client push for its gRPC clients, a remoting client
    resets only the queues it pulls, and their next pop writes over a direct write. The
    broker's reset clears its count of what was popped; what was popped and not acked comes
    back all the same (its checkpoints stay in the revive topic).
    """
    if broadcasting:
        return ResetPath(
            ResetPathKind.NONE,
            "broadcasting group: each client keeps its own offsets (offsets.json); "
            "the broker's offsets are not read",
            blocker="reset the clients' local offset files instead",
        )
    legacy = [b for b in brokers if not _server_side(b)]
    names = ", ".join(b.name for b in brokers)
    forgetting = [b.name for b in brokers if b.forgets_resets]
    if not legacy and forgetting and not consumers_online:
        return ResetPath(
            ResetPathKind.OFFLINE_UPDATE,
            f"{', '.join(forgetting)} would keep a server-side reset in memory only (5.4+ with "
            "configManagerVersion=v2 saves it under topic and group swapped: a restart loses "
            "it); no consumer is online: the offsets are written directly "
            "(UPDATE_CONSUMER_OFFSET per queue), which the store saves",
        )
    if not legacy:
        online = f"; the {consumers_online} online consumer(s) pick it up on their next pull"
        popped = (
            "; they pop: messages already popped and not acked still come back (their "
            "checkpoints are not cleared by a reset)"
        )
        return ResetPath(
            ResetPathKind.SERVER_SIDE,
            f"every broker ({names}) runs 5.1+ with useServerSideResetOffset=true: the broker "
            "moves the offsets itself"
            + (online if consumers_online else "")
            + (popped if pop and consumers_online else ""),
        )
    why = "; ".join(_legacy_reason(b) for b in legacy)
    if pop and consumers_online:
        return ResetPath(
            ResetPathKind.OFFLINE_UPDATE,
            f"{why}; its {consumers_online} online consumer(s) pop: a client push does not "
            "reach them (the proxy drops it for gRPC clients, a remoting client resets only "
            "the queues it pulls) and their next pop writes over a direct write",
            blocker=f"its {consumers_online} consumer(s) pop (RocketMQ 5), which only the "
            "brokers' own reset moves: stop them and apply offline, or turn on server-side "
            "reset on these brokers (useServerSideResetOffset=true, 5.1+)",
        )
    if consumers_online and not per_queue:
        return ResetPath(
            ResetPathKind.CLIENT_PUSH,
            f"{why}; {consumers_online} consumer(s) are online: the broker sends the new "
            "offsets to them (RESET_CONSUMER_CLIENT_OFFSET) and they commit them; one broker "
            "at a time, each pausing the consumers some 10 s, and sent again if it does not "
            "show on the broker",
        )
    if consumers_online:
        return ResetPath(
            ResetPathKind.OFFLINE_UPDATE,
            f"{why}; per-queue targets can only be written directly (UPDATE_CONSUMER_OFFSET)",
            blocker=f"stop the {consumers_online} online consumer(s) first: their next commit "
            "would overwrite a direct write within seconds",
        )
    return ResetPath(
        ResetPathKind.OFFLINE_UPDATE,
        f"{why}; no consumer is online: the offsets are written directly "
        "(UPDATE_CONSUMER_OFFSET per queue)",
    )


def client_file_path(file: str, client_id: str, *, running: bool | None) -> ResetPath:
    """A BROADCASTING group whose client keeps its offsets in `file` on this host: the apply
    rewrites the file, which the client reads when it starts (protocol §5.2)."""
    blocker = None
    if running is None:
        blocker = f"could not tell whether client {client_id} is running: it must be stopped"
    elif running:
        blocker = (
            f"client {client_id} is running: stop it first (a running client writes its own "
            "offsets over the file every few seconds)"
        )
    return ResetPath(
        ResetPathKind.CLIENT_FILE,
        f"broadcasting group: client {client_id} keeps its offsets in {file}; the apply "
        "rewrites that file (the previous one kept as offsets.json.bak) and the client "
        "starts from it",
        blocker=blocker,
        file=file,
        client_id=client_id,
    )


def _server_side(b: BrokerFacts) -> bool:
    return b.version is not None and b.version >= V5_1_0 and b.server_side_reset is True


def _legacy_reason(b: BrokerFacts) -> str:
    if b.version is None:
        return f"{b.name}: version unknown (broker did not answer)"
    if b.version < V5_1_0:
        return f"{b.name} runs {version_name(b.version)} (no server-side reset before 5.1)"
    return f"{b.name} ({version_name(b.version)}) has useServerSideResetOffset=false"


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
            d = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BadFile(where, f"not JSON: {exc.msg}", line=exc.lineno) from None
        except RecursionError:
            raise BadFile(where, "not a plan header (nested too deep)") from None
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


# ---- content hash ------------------------------------------------------------------------------
# A two-level SHA-256 that the plan job computes with Spark aggregates and that this module
# recomputes in plain Python, so an apply can check a plan's rows without a Spark session:
#   leaf   = sha256(group US topic US broker US queue_id US current US target), null as ""
#   topic  = sha256(concatenated leaf hex digests, rows ordered by (broker, queue_id))
#   root   = sha256(cluster LF, then "group US topic US topic-digest" lines ordered by group, topic)
SEP = "\x1f"


def leaf_digest(
    group: str, topic: str, broker: str, queue_id: int, current: int | None, target: int | None
) -> str:
    fields = (group, topic, broker, str(queue_id), _s(current), _s(target))
    return hashlib.sha256(SEP.join(fields).encode()).hexdigest()


def root_digest(cluster: str, topic_digests: Mapping[tuple[str, str], str]) -> str:
    lines = [f"{g}{SEP}{t}{SEP}{d}" for (g, t), d in sorted(topic_digests.items())]
    return "sha256:" + hashlib.sha256((cluster + "\n" + "\n".join(lines)).encode()).hexdigest()


def content_hash(cluster: str, rows: Iterable[PlanRow]) -> str:
    return root_digest(cluster, {key: d for key, (_, d) in topic_totals(rows).items()})


def topic_totals(rows: Iterable[PlanRow]) -> dict[tuple[str, str], tuple[Totals, str]]:
    """Per (group, topic): the totals and the topic digest of the content hash; the plan job
    computes the same with Spark for plans too big to add up in one process."""
    by_topic: dict[tuple[str, str], list[PlanRow]] = {}
    for r in rows:
        by_topic.setdefault((r.group, r.topic), []).append(r)
    out: dict[tuple[str, str], tuple[Totals, str]] = {}
    for (group, topic), mine in by_topic.items():
        leaves = sorted(
            (
                r.broker,
                r.queue_id,
                leaf_digest(group, topic, r.broker, r.queue_id, r.current, r.target),
            )
            for r in mine
        )
        digest = hashlib.sha256("".join(leaf for *_, leaf in leaves).encode()).hexdigest()
        deltas = [r.delta for r in mine if r.delta is not None]
        totals = Totals(
            group=group,
            topic=topic,
            queues=len(mine),
            changed=sum(1 for r in mine if r.changed),
            re_consume=sum(-d for d in deltas if d < 0),
            skip=sum(d for d in deltas if d > 0),
            warned=sum(1 for r in mine if r.warnings),
            lag_before=sum(r.max_offset - r.current for r in mine if r.current is not None),
            lag_after=sum(r.max_offset - r.target for r in mine if r.target is not None),
        )
        out[(group, topic)] = (totals, digest)
    return out


def _s(value: int | None) -> str:
    return "" if value is None else str(value)
