"""The mqadmin command lines that show what each console view shows, for runbooks and tickets.

Every function returns complete, shell-quoted lines; `-n` carries all name servers of the cluster
the way mqadmin takes them (';'-separated). For a cluster with `tls:`, `with_tls` puts the JVM
system properties mqadmin reads for TLS in front of each line (`JAVA_OPT=... mqadmin ...`: the
mqadmin script hands JAVA_OPT to the JVM).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from console.domain.plan import PlanHeader, PlanRow
from console.domain.reset_paths import ResetPathKind
from console.domain.spec import Latest
from console.rocketmq.topics import dlq_topic


class TlsFiles(Protocol):
    """What the TLS properties are made from: a cluster's `tls:` (console.config.TlsRef)."""

    @property
    def ca(self) -> str | None: ...

    @property
    def cert(self) -> str | None: ...

    @property
    def key(self) -> str | None: ...

    @property
    def verify(self) -> bool: ...


def java_tls_properties(tls: TlsFiles) -> dict[str, str]:
    """The system properties that make RocketMQ's Java clients, mqadmin among them, speak TLS as
    `tls` says (TlsSystemConfig, read by TlsHelper.buildSslContext(true)). Test mode must be off
    or the client trusts every server and presents no certificate; the client never checks the
    server's name, so `server_name` has no equivalent."""
    props = {
        "tls.enable": "true",
        "tls.test.mode.enable": "false",
        "tls.client.authServer": "true" if tls.verify else "false",
    }
    if tls.verify and tls.ca:
        props["tls.client.trustCertPath"] = tls.ca
    if tls.cert and tls.key:
        props["tls.client.certPath"] = tls.cert
        props["tls.client.keyPath"] = tls.key
    return props


def with_tls(lines: Iterable[str], tls: TlsFiles | None) -> list[str]:
    """`lines` with the TLS properties in front of every mqadmin command (comments as they are)."""
    if tls is None:
        return list(lines)
    java_opt = " ".join(f"-D{k}={v}" for k, v in java_tls_properties(tls).items())
    prefix = f"JAVA_OPT={shlex.quote(java_opt)} "
    return [prefix + line if line.startswith("mqadmin ") else line for line in lines]


def _line(namesrv: Sequence[str], subcommand: str, *args: str) -> str:
    return shlex.join(["mqadmin", subcommand, "-n", ";".join(namesrv), *args])


def clusters(namesrv: Sequence[str]) -> list[str]:
    return [_line(namesrv, "clusterList")]


def overview(namesrv: Sequence[str], broker_addrs: Sequence[str]) -> list[str]:
    """Cluster membership, then each broker's runtime status."""
    return [
        _line(namesrv, "clusterList"),
        *(_line(namesrv, "brokerStatus", "-b", addr) for addr in broker_addrs),
    ]


def topics(namesrv: Sequence[str], cluster: str | None = None) -> list[str]:
    return [_line(namesrv, "topicList", *(("-c", cluster) if cluster else ()))]


def topic(namesrv: Sequence[str], name: str) -> list[str]:
    return [_line(namesrv, "topicStatus", "-t", name), _line(namesrv, "topicRoute", "-t", name)]


def groups(namesrv: Sequence[str]) -> list[str]:
    """consumerProgress without -g lists every group with its total diff."""
    return [_line(namesrv, "consumerProgress")]


def group(namesrv: Sequence[str], name: str) -> list[str]:
    """Per-queue offsets with the client of each queue, who is online, and the DLQ."""
    return [
        _line(namesrv, "consumerProgress", "-g", name, "-s", "true"),
        _line(namesrv, "consumerConnection", "-g", name),
        _line(namesrv, "topicStatus", "-t", dlq_topic(name)),
    ]


def queue_resets(
    namesrv: Sequence[str],
    moves: Sequence[tuple[str, str, str, int, int]],
    limit: int = 10,
    *,
    rest: str = "see the journal",
) -> list[str]:
    """One `resetOffsetByTime -b -q -o` per queue (group, topic, broker address, queue id,
    offset): mqadmin's way to set a single queue's offset. The first `limit`; a comment says
    how many more there are and where to find them (`rest`)."""
    lines = [
        _line(
            namesrv,
            "resetOffsetByTime",
            "-g",
            group,
            "-t",
            topic,
            "-s",
            "now",
            "-b",
            addr,
            "-q",
            str(queue_id),
            "-o",
            str(offset),
        )  # fmt: skip
        for group, topic, addr, queue_id, offset in moves[:limit]
    ]
    if len(moves) > limit:
        lines.append(f"# ... and {len(moves) - limit} more queues ({rest})")
    return lines


def plan_resets(
    header: PlanHeader,
    rows: Sequence[PlanRow],
    namesrv: Sequence[str],
    broker_addrs: Mapping[str, str],
    *,
    limit: int = 50,
) -> list[str]:
    """mqadmin commands that would make the same change as a plan, for a runbook or a ticket.
    A time strategy is one command per topic; anything else one per changed queue (the first
    `limit`). These write to the cluster: the console only prints them."""
    files = {g: p for g, p in header.reset_paths.items() if p.kind is ResetPathKind.CLIENT_FILE}
    if files:
        notes = [
            f"# {g}: no mqadmin command moves a broadcasting client's own offsets; "
            f"this apply rewrites {p.file}"
            for g, p in sorted(files.items())
        ]
        rest = [r for r in rows if r.group not in files]
        return notes + (
            plan_resets(header, rest, namesrv, broker_addrs, limit=limit) if rest else []
        )
    changed = [r for r in rows if r.changed]
    topics = sorted({(r.group, r.topic) for r in changed})
    if header.timestamp_ms is not None:
        at = str(header.timestamp_ms)
        return [
            _line(namesrv, "resetOffsetByTime", "-g", g, "-t", t, "-s", at, "-f", "true")
            for g, t in topics
        ]
    if isinstance(header.spec.strategy, Latest):
        return [
            _line(namesrv, "skipAccumulatedMessage", "-g", g, "-t", t, "-f", "true")
            for g, t in topics
        ]
    moves = [
        (r.group, r.topic, broker_addrs.get(r.broker, r.broker), r.queue_id, r.target)
        for r in changed
        if r.target is not None
    ]
    return queue_resets(namesrv, moves, limit, rest="export the plan as CSV")


def message(namesrv: Sequence[str], topic: str, broker: str, queue_id: int, offset: int) -> str:
    """The one message at a queue's offset (mqadmin pulls it as TOOLS_CONSUMER, as we do)."""
    args = ["-t", topic, "-b", broker, "-i", str(queue_id), "-o", str(offset)]
    return shlex.join(["mqadmin", "queryMsgByOffset", *args, "-n", ";".join(namesrv)])
