"""What an answer built from several requests could not get.

A read that fans out (a group over its brokers, the fleet over its groups, a snapshot) returns
what it read and a `Gap` for every piece it lacks: which part, which one, and why. A total over
an answer with gaps is a lower bound, never "caught up"; a status over it is never OK; the CLI
exits 1 (2 when nothing could be read). See README "Exit codes".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from console.rocketmq.errors import (
    AccessDenied,
    BrokerError,
    ConnectError,
    ConnectionLost,
    NotFoundError,
    RequestTimeout,
    RocketMQError,
    TlsRefused,
    UnreachableAddress,
)


class Part(StrEnum):
    """What kind of piece is missing."""

    BROKER = "broker"
    GROUP = "group"
    QUEUE = "queue"
    #: The queues of one topic on one broker (`orders/broker-a`).
    QUEUES = "queues"
    MIN_OFFSETS = "min offsets"
    DLQ = "DLQ"
    CLIENTS = "clients"
    NAME_SERVER = "name server"
    #: A POP group's messages popped and not yet acked (part of its lag).
    IN_FLIGHT = "in-flight"
    #: What a broker counts of a lite group's lite topics (RocketMQ 5.5; console.domain.lite).
    LITE = "lite lag"
    #: The controller of broker sets in controller mode (who may become master).
    CONTROLLER = "controller"


class Why(StrEnum):
    """Why it is missing, in the words the operator acts on."""

    TIMEOUT = "timed out"
    DOWN = "down"  # no connection, or the connection was lost
    AUTHENTICATION = "authentication refused"  # wrong or missing secret, unknown access key
    PERMISSION = "permission denied"
    TLS = "TLS refused"  # our TLS (or its absence) refused: a configuration problem, not down
    NOT_FOUND = "not found"
    ERROR = "error"  # the server answered with another failure
    NOT_REPORTED = "not reported"  # nobody that answers keeps the number (a gRPC client's POP)
    NOT_SYNCED = "not synced yet"  # a slave has not copied the master's offsets yet
    NOT_REPLICATED = "not replicated yet"  # a slave has not copied the master's messages yet
    UNCHECKED = "could not be checked"  # a slave's answer, not checked against what it lacks
    NO_MASTER = "no master elected yet"  # controller or DLedger mode, between a loss and a vote
    OUT_OF_SYNC = "outside the SyncStateSet"  # a replica behind its master: not electable


@dataclass(frozen=True, slots=True)
class Gap:
    """One missing piece: `part` and `name` say which (broker-a; the group billing; queue
    orders/broker-a/3), `why` the kind of failure, `detail` the one line that explains it."""

    part: Part
    name: str
    why: Why
    detail: str

    def line(self) -> str:
        # A detail that already starts with the name ("broker-a refused the signature...")
        # is not told twice.
        if self.detail.startswith(self.name):
            return f"{self.part} {self.detail}"
        return f"{self.part} {self.name}: {self.detail}"

    def to_dict(self) -> dict[str, str]:
        """The JSON form (`missing: [...]` of the CLI, a snapshot file's metadata)."""
        return {
            "part": str(self.part),
            "name": self.name,
            "why": str(self.why),
            "detail": self.detail,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, str]) -> Gap:
        return cls(Part(d["part"]), d["name"], Why(d["why"]), d["detail"])


def why_of(error: RocketMQError) -> Why:
    if isinstance(error, AccessDenied):
        return Why.AUTHENTICATION if error.authentication else Why.PERMISSION
    if isinstance(error, TlsRefused):
        return Why.TLS
    if isinstance(error, RequestTimeout):
        return Why.TIMEOUT
    if isinstance(error, ConnectError | ConnectionLost):
        return Why.DOWN
    if isinstance(error, NotFoundError):
        return Why.NOT_FOUND
    if isinstance(error, BrokerError):
        return Why.ERROR
    return Why.ERROR


def gap(part: Part, name: str, error: RocketMQError, *, broker: str | None = None) -> Gap:
    """The gap a failed request leaves: its kind from the error's type, its line from the error
    (one line, whatever the error's text holds).

    `broker` is the name of the broker the request went to (by default `name` for a BROKER
    part): the line names it where the error names only its address, so a refused signature
    reads "broker-a refused the signature for access key AK: check the secret (...)".
    """
    text = " ".join(str(error).split()) or type(error).__name__
    if broker is None and part is Part.BROKER:
        broker = name
    addr = getattr(error, "addr", None)
    if isinstance(error, UnreachableAddress):
        pass  # its line names the address and who registered it
    elif broker is not None and isinstance(addr, str) and addr and addr != broker:
        if isinstance(error, AccessDenied):
            text = text.replace(addr, broker, 1)
        elif addr in text:
            text = text.replace(addr, f"{broker} at {addr}", 1)
        else:
            text = f"{broker} at {addr}: {text}"
    return Gap(part, name, why_of(error), text)


def distinct(gaps: Iterable[Gap]) -> list[Gap]:
    """Each missing piece once (by part, name and why), in first-seen order: the same broker
    missing from 2,000 group reads is one line, not 2,000."""
    seen: dict[tuple[Part, str, Why], Gap] = {}
    for g in gaps:
        seen.setdefault((g.part, g.name, g.why), g)
    return list(seen.values())


#: Exit codes (README "Exit codes").
EXIT_OK = 0
EXIT_PARTIAL = 1
EXIT_NOTHING_READ = 2


def exit_code(gaps: Iterable[Gap], *, anything_read: bool) -> int:
    """0 when nothing is missing; 1 when something is; 2 when nothing could be read at all."""
    if not anything_read:
        return EXIT_NOTHING_READ
    return EXIT_PARTIAL if any(True for _ in gaps) else EXIT_OK


def at_least(total: int, partial: bool) -> str:
    """A total as the operator must read it: `≥1980` when parts of it are missing."""
    return f"≥{total}" if partial else str(total)
