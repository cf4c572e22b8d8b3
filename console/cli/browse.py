"""Read-only commands: clusters, brokers, topics, groups, lag.

Each prints what it could read and exits as the README says: 0 when every broker of the
cluster answered, 1 when one did not (the output then lacks that broker's part, and one line on
stderr names it), 2 on bad input or when the name server cannot be reached (raised to
`console.cli.main`, which prints the one line).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Iterable
from typing import Any

from console.cli.render import dump_json, table, timestamp
from console.cli.target import Target, resolve_target, target_parent
from console.domain.offsets import CLIENT_LOCAL_NOTE, GroupOffsets, QueueOffsets
from console.services.cluster import BrokerHealth, ClusterReader

#: Exit codes (README): a broker of the cluster did not answer.
BROKER_DOWN = 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parent = target_parent()

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text, parents=[parent])
        p.add_argument("--json", action="store_true", help="machine-readable output")
        return p

    command("clusters", "RocketMQ clusters and their brokers").set_defaults(handler=_clusters)
    command("brokers", "brokers with address, version and health").set_defaults(handler=_brokers)
    p = command("topics", "topics (system topics hidden)")
    p.add_argument("--all", action="store_true", help="include system, retry and DLQ topics")
    p.set_defaults(handler=_topics)
    p = command("groups", "consumer groups, worst lag first")
    p.add_argument("--all", action="store_true", help="include the brokers' own system groups")
    p.set_defaults(handler=_groups)
    p = command("lag", "per-queue offsets and lag of one consumer group")
    p.add_argument("-g", "--group", required=True, help="consumer group")
    p.add_argument("-t", "--topic", action="append", help="only this topic (repeatable)")
    p.set_defaults(handler=_lag)


def _run(args: argparse.Namespace, body: Any) -> int:
    target = resolve_target(args)

    async def go() -> int:
        async with target.admin() as admin:
            reader = ClusterReader(admin, target.cluster.rocketmq_cluster)
            result: int = await body(reader, target)
            return result

    return asyncio.run(go())


def brokers_answered(health: Iterable[BrokerHealth], unreachable: Iterable[str] = ()) -> int:
    """0 if every broker checked is up and none is in `unreachable` (brokers that failed a read
    a moment ago); else BROKER_DOWN, with one line on stderr naming each broker that is not."""
    down = {h.name: h for h in health if not h.up}
    for name in sorted(unreachable):
        down.setdefault(name, BrokerHealth(name, "", up=False, error="did not answer"))
    if not down:
        return 0
    what = "broker down" if len(down) == 1 else f"{len(down)} brokers down"
    named = "; ".join(_why(h) for _, h in sorted(down.items()))
    print(f"rmq-console: {what}: {named}", file=sys.stderr)
    return BROKER_DOWN


def _why(h: BrokerHealth) -> str:
    where = f" at {h.addr}" if h.addr else ""
    reason = " ".join((h.error or "no answer").split())  # one line, whatever the error says
    return f"{h.name}{where}: {reason}"


def _clusters(args: argparse.Namespace) -> int:
    async def body(reader: ClusterReader, target: Target) -> int:
        info = await reader.cluster_info()
        rows = [
            {"cluster": name, "brokers": members} for name, members in sorted(info.clusters.items())
        ]
        if args.json:
            dump_json(rows)
        else:
            table(["CLUSTER", "BROKERS"], [[r["cluster"], ", ".join(r["brokers"])] for r in rows])
        return brokers_answered(await reader.broker_health())

    return _run(args, body)


def _brokers(args: argparse.Namespace) -> int:
    async def body(reader: ClusterReader, target: Target) -> int:
        info = await reader.cluster_info()
        health = {h.name: h for h in await reader.broker_health()}
        rows = []
        for name in sorted(health):
            h = health[name]
            broker = info.brokers[name]
            rows.append(
                {
                    "broker": name,
                    "cluster": broker.cluster,
                    "addr": h.addr,
                    "status": "UP" if h.up else "DOWN",
                    "version": h.version,
                    "error": h.error,
                }
            )
        if args.json:
            dump_json(rows)
        else:
            table(
                ["BROKER", "CLUSTER", "ADDRESS", "STATUS", "VERSION"],
                [[r["broker"], r["cluster"], r["addr"], r["status"], r["version"]] for r in rows],
            )
        return brokers_answered(health.values())

    return _run(args, body)


def _topics(args: argparse.Namespace) -> int:
    async def body(reader: ClusterReader, target: Target) -> int:
        topics = await reader.topics(include_system=args.all)
        if args.json:
            dump_json(topics)
        else:
            for t in topics:
                print(t)
        return brokers_answered(await reader.broker_health())

    return _run(args, body)


def _groups(args: argparse.Namespace) -> int:
    async def body(reader: ClusterReader, target: Target) -> int:
        groups = await reader.groups(include_system=args.all)
        batch = await reader.batch()
        offsets = await asyncio.gather(
            *(reader.group_offsets(g, batch=batch) for g in groups), return_exceptions=True
        )
        rows: list[dict[str, Any]] = []
        unreachable: set[str] = set()
        for name, o in zip(groups, offsets, strict=True):
            if isinstance(o, BaseException):
                rows.append({"group": name, "error": str(o)})
                continue
            rows.append(_group_summary(o))
            unreachable.update(o.unreachable_brokers)
        rows.sort(key=lambda r: (-(r.get("total_lag") or 0), r["group"]))
        if args.json:
            dump_json(rows)
        else:
            table(
                ["GROUP", "MODEL", "CLIENTS", "LAG", "RETRY", "DLQ", "UNKNOWN"],
                [
                    [
                        r["group"],
                        r.get("message_model"),
                        r.get("clients_online", "ERROR") or "OFFLINE",
                        r.get("total_lag"),
                        r.get("retry_backlog"),
                        r.get("dlq_messages"),
                        r.get("unknown_queues"),
                    ]
                    for r in rows
                ],
            )
        return brokers_answered(await reader.broker_health(), unreachable)

    return _run(args, body)


def _group_summary(o: GroupOffsets) -> dict[str, Any]:
    return {
        "group": o.group,
        "message_model": o.message_model,
        "consume_type": o.consume_type,
        "clients_online": len(o.clients),
        "total_lag": o.total_lag,
        "retry_backlog": o.retry_backlog,
        "dlq_messages": o.dlq_messages,
        "unknown_queues": o.unknown_queues,
    }


def _lag(args: argparse.Namespace) -> int:
    async def body(reader: ClusterReader, target: Target) -> int:
        o = await reader.group_offsets(args.group, topics=args.topic)
        if args.json:
            dump_json(lag_document(o))
            # The read asked every broker: those that did not answer are known already.
            return brokers_answered((), o.unreachable_brokers)
        model = o.message_model or "-"
        state = f"{len(o.clients)} client(s) online" if o.online else "OFFLINE"
        print(f"group {o.group}  model {model}  {state}  taken {timestamp(o.taken_at_ms)}")
        if o.client_local:
            print(CLIENT_LOCAL_NOTE)
        if o.unreachable_brokers:
            print(f"unreachable brokers: {', '.join(o.unreachable_brokers)}")
        table(
            [
                "TOPIC",
                "BROKER",
                "QID",
                "MIN",
                "MAX",
                "COMMITTED",
                "LAG",
                "IN-FLIGHT",
                "LAST",
                "NOTE",
            ],
            [
                [
                    q.topic,
                    q.broker,
                    q.queue_id,
                    q.min_offset,
                    q.max_offset,
                    q.committed if q.committed is not None else "unknown",
                    q.lag if q.lag is not None else "unknown",
                    q.in_flight,
                    timestamp(q.last_timestamp) or "-",
                    _below_min_note(q) or "",
                ]
                for q in o.queues
            ],
        )
        total = "unknown (client-local)" if o.client_local else o.total_lag
        print(
            f"total lag {total}  retry backlog {o.retry_backlog}  "
            f"DLQ {o.dlq_messages}  unknown queues {o.unknown_queues}"
            + (f"  below min {o.below_min_queues}" if o.below_min_queues else "")
        )
        return brokers_answered((), o.unreachable_brokers)

    return _run(args, body)


def _below_min_note(q: QueueOffsets) -> str | None:
    if not q.below_min:
        return None
    assert q.committed is not None
    return f"below min: {q.min_offset - q.committed} already deleted"


def lag_document(o: GroupOffsets) -> dict[str, Any]:
    return {
        "group": o.group,
        "taken_at": timestamp(o.taken_at_ms),
        "online": o.online,
        "message_model": o.message_model,
        "consume_type": o.consume_type,
        "clients": [
            {"client_id": c.client_id, "addr": c.addr, "language": c.language, "version": c.version}
            for c in o.clients
        ],
        # A BROADCASTING group's lag is on its clients: the brokers' "0" would read as caught up.
        "client_local": o.client_local,
        "total_lag": None if o.client_local else o.total_lag,
        "retry_backlog": o.retry_backlog,
        "dlq_messages": o.dlq_messages,
        "unknown_queues": o.unknown_queues,
        "below_min_queues": o.below_min_queues,
        "unreachable_brokers": list(o.unreachable_brokers),
        "queues": [
            {
                "topic": q.topic,
                "broker": q.broker,
                "queue_id": q.queue_id,
                "min_offset": q.min_offset,
                "max_offset": q.max_offset,
                "committed": q.committed,
                "below_min": q.below_min,
                "lag": q.lag,
                "in_flight": q.in_flight,
                "last_consumed_at": timestamp(q.last_timestamp),
            }
            for q in o.queues
        ],
    }
