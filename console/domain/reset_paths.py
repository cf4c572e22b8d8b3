"""How an apply moves a group's offsets, decided from what its brokers are and who consumes it:
the broker's own reset (server-side, on 5.1+ brokers with useServerSideResetOffset), a direct
commit while no consumer is online, a push to the online clients on older brokers, or a
broadcasting client's own offsets file; with why, and what blocks it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

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
