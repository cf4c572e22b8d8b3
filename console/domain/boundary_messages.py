"""The messages at the edge of a reset, as the operator reads them.

For each queue a plan changes, the **first** message the group will consume after the reset
(the one at the target offset) and, when the reset skips forward, the **last skipped** one (at
target - 1). A message that cannot be shown is never silently absent: its note says why in the
operator's words (the queue's end, deleted, a broker that did not answer), and `Absence` says
it for programs (exit codes, JSON).

Bodies appear only as a short head (printable text as text, anything else as hex): a view is
safe to print on a terminal, never the whole body, and never goes to a log.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from console.domain.plan import PlanRow
from console.rocketmq.message import Message

#: How much of a text body a view keeps; a binary body shows this many bytes as hex.
TEXT_HEAD_BYTES = 160
HEX_HEAD_BYTES = 32
#: Properties the Java client adds on receipt (PullAPIWrapper), not stored with the message.
CLIENT_PROPERTIES = frozenset({"MIN_OFFSET", "MAX_OFFSET"})

_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


@dataclass(frozen=True, slots=True)
class MessageView:
    """One message: where it is, when it was stored, what identifies it, and its body's head.

    `msg_id` is the producer's id (UNIQ_KEY; None when the producer set none), `offset_msg_id`
    the broker's (store host and commit-log offset, what `mqadmin queryMsgByOffset` prints as
    OffsetID). `size` is the body's length as consumed (decompressed); `body_head` its first
    bytes, as text when they are printable (newlines and tabs escaped, so it is one line),
    otherwise as hex (`body_binary`); `body_truncated` when the body is longer than the head.
    A body that could not be decompressed shows `body_note` as its head.
    """

    topic: str
    broker: str
    queue_id: int
    queue_offset: int
    store_time_ms: int
    born_time_ms: int
    keys: tuple[str, ...]
    tags: str | None
    msg_id: str | None
    offset_msg_id: str
    size: int
    reconsume_times: int
    body_head: str
    body_binary: bool
    body_truncated: bool
    commit_log_offset: int = 0
    store_host: str = ""
    born_host: str = ""
    #: The codec the producer compressed the body with; None when it did not.
    compression: str | None = None
    #: Why the body is not shown ("compressed (lz4): not shown"); None when it is.
    body_note: str | None = None
    #: Every stored property (name, value), in the broker's order.
    properties: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, message: Message, broker: str) -> MessageView:
        if message.body_note is not None:
            head, binary, truncated = message.body_note, False, False
        else:
            head, binary, truncated = body_head(message.body)
        return cls(
            topic=message.topic,
            broker=broker,
            queue_id=message.queue_id,
            queue_offset=message.queue_offset,
            store_time_ms=message.store_timestamp,
            born_time_ms=message.born_timestamp,
            keys=message.keys,
            tags=message.tags,
            msg_id=message.uniq_key,
            offset_msg_id=message.offset_msg_id,
            size=len(message.body),
            reconsume_times=message.reconsume_times,
            body_head=head,
            body_binary=binary,
            body_truncated=truncated,
            commit_log_offset=message.commit_log_offset,
            store_host=message.store_host,
            born_host=message.born_host,
            compression=message.compression,
            body_note=message.body_note,
            properties=message.properties,
        )

    @property
    def properties_dict(self) -> dict[str, str]:
        return dict(self.properties)

    @property
    def body_text(self) -> str:
        """The head as one shows it: "(empty body)", the hex or text with "…" when longer."""
        if self.body_note is not None:
            return self.body_note
        if self.size == 0:
            return "(empty body)"
        more = "…" if self.body_truncated else ""
        return f"hex {self.body_head}{more}" if self.body_binary else f"{self.body_head}{more}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (`message --json`, `plan --boundary --json`)."""
        return {
            "topic": self.topic,
            "broker": self.broker,
            "queue_id": self.queue_id,
            "queue_offset": self.queue_offset,
            "store_time": local_time(self.store_time_ms),
            "store_time_ms": self.store_time_ms,
            "born_time": local_time(self.born_time_ms),
            "born_time_ms": self.born_time_ms,
            "keys": list(self.keys),
            "tags": self.tags,
            "msg_id": self.msg_id,
            "offset_msg_id": self.offset_msg_id,
            "commit_log_offset": self.commit_log_offset,
            "store_host": self.store_host,
            "born_host": self.born_host,
            "size": self.size,
            "reconsume_times": self.reconsume_times,
            "compression": self.compression,
            "body_head": self.body_head,
            "body_binary": self.body_binary,
            "body_truncated": self.body_truncated,
            "body_note": self.body_note,
            "properties": self.properties_dict,
        }


def body_head(body: bytes) -> tuple[str, bool, bool]:
    """(head, binary, truncated): the first TEXT_HEAD_BYTES as one line of text when they are
    UTF-8 and printable, else the first HEX_HEAD_BYTES as spaced hex."""
    head = body[:TEXT_HEAD_BYTES]
    try:
        # Not final: a character cut in two at the head's end is left out, not an error.
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=len(body) <= len(head))
    except UnicodeDecodeError:
        text = None
    if text is not None and all(c.isprintable() or c in _ESCAPES for c in text):
        shown = len(text.encode("utf-8"))
        return "".join(_ESCAPES.get(c, c) for c in text), False, len(body) > shown
    raw = body[:HEX_HEAD_BYTES]
    return raw.hex(" "), True, len(body) > len(raw)


def local_time(ms: int, *, short: bool = False) -> str | None:
    """Epoch ms in this machine's zone, with the zone: what an operator compares with the
    application's logs (`short`: to the second, the zone as an offset only). None for 0
    (unknown)."""
    if ms <= 0:
        return None
    when = datetime.fromtimestamp(ms / 1000).astimezone()
    if short:
        return when.strftime("%Y-%m-%d %H:%M:%S %z")
    return when.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d} " + when.strftime("%z %Z")


# ---- the boundary of a reset ------------------------------------------------------------------


class Absence(StrEnum):
    """Why a boundary has no message, for programs; the note says it for people."""

    END = "queue end"  # the target is the max offset: nothing written there yet
    BEYOND = "beyond the end"  # the target is past the max offset
    DELETED = "deleted"  # below the min offset
    NOT_COMMITTED = "nothing committed"  # no current offset: what is skipped is not known
    NOT_FOUND = "not found"  # the broker found no message there (or the topic/queue is unknown)
    UNANSWERED = "no answer"  # the broker did not answer (down, timed out, not registered)
    REFUSED = "refused"  # the broker answered with an error (signature, permission, ...)

    @property
    def unread(self) -> bool:
        """The message may be there: the cluster could not say (a broker down, an error)."""
        return self in (Absence.UNANSWERED, Absence.REFUSED)


@dataclass(frozen=True, slots=True)
class BoundaryRequest:
    """One changed queue: the group's offset now (None: nothing committed) and the target."""

    topic: str
    broker: str
    queue_id: int
    current: int | None
    target: int

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.topic, self.broker, self.queue_id)

    @property
    def skips(self) -> bool:
        """The reset moves forward: messages current .. target-1 are never consumed."""
        return self.current is not None and self.target > self.current


@dataclass(frozen=True, slots=True)
class Boundary:
    """The messages at one queue's reset: `first` is consumed first after it (at `target`);
    `last_skipped` is the last one never consumed (at target - 1), for a skip only. Each that
    is None has a note saying why, and an `Absence`."""

    request: BoundaryRequest
    first: MessageView | None
    first_note: str | None
    last_skipped: MessageView | None
    last_note: str | None
    first_absence: Absence | None = None
    last_absence: Absence | None = None
    #: Read from the broker's slave, its master not answering.
    from_slave: bool = False

    @property
    def unread(self) -> bool:
        """Part of it could not be read (a broker down, an error): not an answer about the
        queue, so the command that shows it exits 1."""
        return any(a is not None and a.unread for a in (self.first_absence, self.last_absence))

    def to_dict(self) -> dict[str, Any]:
        r = self.request
        return {
            "topic": r.topic,
            "broker": r.broker,
            "queue_id": r.queue_id,
            "current": r.current,
            "target": r.target,
            "first": self.first.to_dict() if self.first else None,
            "first_note": self.first_note,
            "first_absence": str(self.first_absence) if self.first_absence else None,
            "last_skipped": self.last_skipped.to_dict() if self.last_skipped else None,
            "last_note": self.last_note,
            "last_absence": str(self.last_absence) if self.last_absence else None,
            "from_slave": self.from_slave,
        }


def end_note(max_offset: int) -> str:
    return f"nothing after the target: it is the queue's end (max offset {max_offset})"


def beyond_note(max_offset: int) -> str:
    return f"nothing after the target: it is beyond the queue's end (max offset {max_offset})"


def deleted_note(min_offset: int) -> str:
    return f"deleted: below the min offset {min_offset}"


NOT_COMMITTED_NOTE = (
    "nothing committed before: the group has no offset on this queue, so what the reset "
    "skips is not known"
)


def boundary_requests(rows: Iterable[PlanRow]) -> list[BoundaryRequest]:
    """A request for every queue a plan changes (a target that differs from the current
    offset), in the plan's order."""
    return [
        BoundaryRequest(r.topic, r.broker, r.queue_id, r.current, r.target)
        for r in rows
        if r.target is not None and r.changed
    ]
