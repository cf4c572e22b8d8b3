"""A journal: what one apply (or undo) set out to write and what became of each queue.

It is written before the first write, with every queue's before-image and target, and updated as
answers arrive, so a broker that dies part-way or a console killed mid-apply leaves a record that
says exactly which queues moved: `resume` finishes the rest, `undo` writes the before-images back.
Values only: the store (console/services/infra/journal_store.py) reads and writes the files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from console import json_text
from console.errors import UserError

FORMAT = 1


class JournalError(UserError, ValueError):
    """A journal that cannot be used: unknown, truncated, corrupt, or of a newer format."""


class QueueState(StrEnum):
    PENDING = "pending"  # not written yet
    WRITTEN = "written"  # the broker answered the write; not read back yet
    VERIFIED = "verified"  # a read-back proved it (console/domain/drift.py, `proves`)
    NOT_YET = "not yet"  # read back, not there yet (online paths converge later)
    #: A skip with consumers online, read back only beyond its target: the consumers may have
    #: simply consumed past it while the write was lost. Not verified, and not written again
    #: (that would move the group back).
    PAST_TARGET = "past the target, the reset not seen"
    KEPT_OTHER = "kept another value"  # the broker said SUCCESS and holds something else
    FAILED = "failed"  # the write or the read-back failed

    @property
    def done(self) -> bool:
        """Nothing more to do for the queue: resume leaves it alone."""
        return self in (QueueState.VERIFIED, QueueState.PAST_TARGET)


class ApplyStatus(StrEnum):
    RUNNING = "running"  # writes under way, or the console stopped before it finished
    STOPPED = "stopped"  # stopped on purpose (ctrl-c) or by a fault, part-way
    FINISHED = "finished"  # every queue was attempted; see each queue's state
    #: Every queue verified on its master, and a replica that may be elected master had not
    #: copied some when the wait for it ended: a switch now would roll them back (`verify`).
    NOT_COPIED = "written on the master, not copied to every replica"


@dataclass(frozen=True, slots=True)
class JournalQueue:
    group: str
    topic: str
    broker: str
    broker_addr: str
    queue_id: int
    #: The committed offset read right before writing (the drift check); None: nothing committed.
    before: int | None
    target: int
    state: QueueState = QueueState.PENDING
    #: What the read-back found, when it was read.
    stored: int | None = None
    #: One line: the broker's remark, the error, or why the queue was left.
    detail: str | None = None

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.group, self.topic, self.broker, self.queue_id)

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "topic": self.topic,
            "broker": self.broker,
            "broker_addr": self.broker_addr,
            "queue_id": self.queue_id,
            "before": self.before,
            "target": self.target,
            "state": self.state.value,
            "stored": self.stored,
            "detail": self.detail,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> JournalQueue:
        return cls(
            group=_str(raw, "group"),
            topic=_str(raw, "topic"),
            broker=_str(raw, "broker"),
            broker_addr=_str(raw, "broker_addr"),
            queue_id=_int(raw, "queue_id"),
            before=_int(raw, "before", optional=True),
            target=_int(raw, "target"),
            state=_enum(QueueState, raw, "state"),
            stored=_int(raw, "stored", optional=True),
            detail=_str(raw, "detail", optional=True),
        )


@dataclass(frozen=True, slots=True)
class Journal:
    apply_id: str
    #: "apply", or "undo" (then `undo_of` names the apply it reverses).
    kind: str
    plan_id: str
    plan_hash: str
    cluster: str
    #: The reset path per group, as the plan named it and the check before writing confirmed.
    paths: Mapping[str, str]
    #: OS user@host that ran it.
    who: str
    started_at_ms: int
    queues: tuple[JournalQueue, ...]
    status: ApplyStatus = ApplyStatus.RUNNING
    finished_at_ms: int | None = None
    #: Queues found moved since planning and written anyway (--accept-drift), as "topic/broker/q".
    drift_accepted: tuple[str, ...] = ()
    undo_of: str | None = None
    #: Why it stopped part-way, when it did.
    stopped_because: str | None = None
    #: What became of the write on each broker's replicas, one line per broker (copied, not
    #: waited for, or not copied in time).
    replicas: tuple[str, ...] = ()
    format: int = field(default=FORMAT)

    @property
    def groups(self) -> tuple[str, ...]:
        return tuple(sorted({q.group for q in self.queues}))

    def count(self, state: QueueState) -> int:
        return sum(1 for q in self.queues if q.state is state)

    @property
    def unfinished(self) -> tuple[JournalQueue, ...]:
        """Queues resume would write: every one not verified."""
        return tuple(q for q in self.queues if not q.state.done)

    def with_queues(self, updated: Iterable[JournalQueue]) -> Journal:
        """This journal with the given queues' entries replaced (matched by key)."""
        by_key = {q.key: q for q in updated}
        unknown = set(by_key) - {q.key for q in self.queues}
        if unknown:
            raise ValueError(f"not in journal {self.apply_id}: {sorted(unknown)[:3]}")
        return replace(self, queues=tuple(by_key.get(q.key, q) for q in self.queues))

    def to_json(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "apply_id": self.apply_id,
            "kind": self.kind,
            "undo_of": self.undo_of,
            "plan_id": self.plan_id,
            "plan_hash": self.plan_hash,
            "cluster": self.cluster,
            "paths": dict(self.paths),
            "who": self.who,
            "started_at_ms": self.started_at_ms,
            "finished_at_ms": self.finished_at_ms,
            "status": self.status.value,
            "stopped_because": self.stopped_because,
            "drift_accepted": list(self.drift_accepted),
            "replicas": list(self.replicas),
            "queues": [q.to_json() for q in self.queues],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1)

    @classmethod
    def loads(cls, text: str, where: str) -> Journal:
        """Parse a journal file's text; anything wrong is a JournalError naming `where`."""
        try:
            raw = json_text.loads(text)
        except json_text.TooDeep as exc:
            raise JournalError(f"{where}: not a journal ({exc.msg}, line {exc.lineno})") from None
        except json.JSONDecodeError as exc:
            raise JournalError(
                f"{where}: not a whole journal ({exc.msg} at line {exc.lineno})"
            ) from None
        if not isinstance(raw, dict):
            raise JournalError(f"{where}: not a journal (a JSON object is expected)")
        fmt = raw.get("format")
        if fmt != FORMAT:
            raise JournalError(f"{where}: journal format {fmt!r}, this console reads {FORMAT}")
        try:
            queues = raw.get("queues")
            if not isinstance(queues, list):
                raise _Bad("queues", "a list")
            paths = raw.get("paths")
            if not isinstance(paths, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in paths.items()
            ):
                raise _Bad("paths", "an object of group -> reset path")
            drift = raw.get("drift_accepted", [])
            if not isinstance(drift, list) or not all(isinstance(d, str) for d in drift):
                raise _Bad("drift_accepted", "a list of queue names")
            copies = raw.get("replicas", [])
            if not isinstance(copies, list) or not all(isinstance(c, str) for c in copies):
                raise _Bad("replicas", "a list of lines")
            return cls(
                apply_id=_str(raw, "apply_id"),
                kind=_str(raw, "kind"),
                plan_id=_str(raw, "plan_id"),
                plan_hash=_str(raw, "plan_hash"),
                cluster=_str(raw, "cluster"),
                paths=dict(paths),
                who=_str(raw, "who"),
                started_at_ms=_int(raw, "started_at_ms"),
                queues=tuple(JournalQueue.from_json(_obj(q)) for q in queues),
                status=_enum(ApplyStatus, raw, "status"),
                finished_at_ms=_int(raw, "finished_at_ms", optional=True),
                drift_accepted=tuple(drift),
                undo_of=_str(raw, "undo_of", optional=True),
                stopped_because=_str(raw, "stopped_because", optional=True),
                replicas=tuple(copies),
            )
        except _Bad as exc:
            raise JournalError(f"{where}: {exc}") from None


class _Bad(Exception):
    def __init__(self, key: str, expected: str) -> None:
        super().__init__(f"field {key!r} must be {expected}")


def _obj(value: object) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _Bad("queues", "a list of objects")
    return value


def _str(raw: Mapping[str, Any], key: str, *, optional: bool = False) -> Any:
    value = raw.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _Bad(key, "a string")
    return value


def _int(raw: Mapping[str, Any], key: str, *, optional: bool = False) -> Any:
    value = raw.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise _Bad(key, "an integer")
    return value


def _enum(kind: Any, raw: Mapping[str, Any], key: str) -> Any:
    value = raw.get(key)
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(repr(m.value) for m in kind)
        raise _Bad(key, f"one of {allowed}") from None


@dataclass(frozen=True, slots=True)
class ApplyProgress:
    """How far an apply's writes have come: what a door shows while they go out (the writer
    reports it, console/services/apply/writer.py; the session passes it on)."""

    total: int
    settled: int  # queues with an answer (written, failed, verified ...)
    verified: int
    stage: str  # "writing", "verifying", "done"
    #: What the writes wait for right now, and for how long at most (None: nothing): no wait
    #: of the write path is silent.
    waiting: str | None = None
