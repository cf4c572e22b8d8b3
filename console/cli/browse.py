"""Read-only commands: clusters, brokers, topics, groups, lag.

Each prints what it could read and exits as the README says: 0 when every broker of the
cluster answered, 1 when one did not or any piece of the answer is missing (the output then
marks what is partial, and one line on stderr names each missing piece), 2 when nothing could
be read (a refused signature on every broker included), on bad input or when the name server
cannot be reached (raised to `console.cli.main`, which prints the one line).

One piece (over 400 lines): the read-only commands share their target arguments, their partial-
answer rendering and their exit codes; the reads are console.services.read's.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any

from console.cli.arguments import target_parent
from console.cli.broker_rows import broker_rows, print_broker_rows
from console.cli.collection import for_one_answer
from console.cli.ending import ANSWERS_ONCE
from console.cli.lite_render import lite_document, lite_note, print_lite
from console.cli.render import dump_json, missing, report_missing, table, timestamp
from console.cli.target import Target, resolve_target
from console.domain.gaps import Gap, Part, Why, at_least, distinct, exit_code
from console.domain.offsets import (
    CLIENT_LOCAL_NOTE,
    FROM_SLAVE,
    ClientStore,
    GroupOffsets,
    QueueOffsets,
)
from console.rocketmq.errors import NotFoundError, RocketMQError
from console.services.infra.fanout import gather_bounded
from console.services.read.client_offset_files import with_client_stores
from console.services.read.reader import ClusterReader
from console.services.read.replication import (
    read_replication,
    replication_problems,
    with_replication,
)
from console.services.read.routes import BrokerHealth, read_addrs
from console.ui.format import consumption as fmt_consumption
from console.ui.format import version as fmt_version

#: Exit codes (README): a broker of the cluster did not answer.
BROKER_DOWN = 1
#: Groups of a `groups` scan read at the same time; the batch bounds requests per broker.
FLEET_GROUPS = 256
#: The LAG cell of a BROADCASTING group (see CLIENT_LOCAL_NOTE).
CLIENT_LOCAL = "client-local"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parent = target_parent()

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text, parents=[parent])
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.set_defaults(**{ANSWERS_ONCE: True})
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
        async with target.reader() as reader:
            admin = reader.admin
            try:
                result: int = await body(reader, target)
            finally:
                # When none answered, the command's own error line names them.
                for unanswered in admin.name_servers.news():
                    if unanswered.instead is not None:
                        print(f"rmq-console: {unanswered.line()}", file=sys.stderr)
            return result

    with for_one_answer():
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
        routes = await reader.routes()
        replication = await read_replication(reader.admin, routes)
        health = with_replication(await reader.broker_health(), replication)
        rows = broker_rows(health, info, reader.admin.reach)
        if args.json:
            dump_json(rows)
        else:
            print_broker_rows(rows, health, replication)
        code = brokers_answered(health)
        problems = replication_problems(health, replication)
        for line in problems:
            print(f"rmq-console: {line}", file=sys.stderr)
        return code or (BROKER_DOWN if problems else 0)

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
        # One batch for the scan: the brokers asked once, requests per broker bounded. The min
        # offsets (one request per topic and broker, shared by every group of the batch) tell
        # which groups are committed below them.
        batch = await reader.batch()
        if batch.routes is None:
            batch.routes = await reader.routes()  # what the name server says is the error
        asked = len(read_addrs(batch.routes))
        listed = await reader.group_list(include_system=args.all, batch=batch)
        names = list(listed.groups)
        batch.expect(len(names))
        read = await gather_bounded(
            lambda g: reader.group_offsets(g, batch=batch), names, limit=FLEET_GROUPS
        )
        rows = [_group_row(name, read[name]) for name in names]
        rows.sort(key=lambda r: (-(r["total_lag"] or 0), r["group"]))
        gaps = [*listed.gaps, *(Gap.from_dict(m) for r in rows for m in r["missing"])]
        answered = any(r["answered"] for r in rows) or len(listed.gaps) < asked
        if args.json:
            dump_json(
                {
                    "partial": bool(gaps),
                    "missing": missing(gaps),
                    "from_slave": sorted({b for r in rows for b in r["from_slave"]}),
                    "groups": [
                        {k: v for k, v in r.items() if k not in ("answered", "kind", "lite_note")}
                        for r in rows
                    ],
                }
            )
        elif answered:
            table(
                ["GROUP", "MODEL", "CONSUMPTION", "CLIENTS", "LAG", "RETRY", "DLQ", "UNKNOWN"]
                + ["BELOW-MIN", "NOTE"],
                [
                    [
                        r["group"],
                        r["message_model"],
                        r["kind"],
                        _clients_cell(r),
                        CLIENT_LOCAL if r["client_local"] else _total_cell(r, "total_lag"),
                        _total_cell(r, "retry_backlog"),
                        _total_cell(r, "dlq_messages"),
                        r["unknown_queues"],
                        _total_cell(r, "below_min_queues"),
                        _note_cell(r),
                    ]
                    for r in rows
                ],
            )
        report_missing(gaps, what="groups")
        return exit_code(gaps, anything_read=answered)

    return _run(args, body)


def _group_row(name: str, o: GroupOffsets | Exception) -> dict[str, Any]:
    """One row of `groups`: a group whose read failed or was partial says so, never lag 0."""
    if isinstance(o, GroupOffsets):
        return _group_summary(o)
    if isinstance(o, NotFoundError):
        # Listed a moment ago, gone now (deleted meanwhile).
        lost = Gap(Part.GROUP, name, Why.NOT_FOUND, " ".join(str(o).split()))
    elif isinstance(o, RocketMQError):
        lost = Gap(Part.GROUP, name, Why.ERROR, " ".join(str(o).split()))
    else:
        raise o
    return {
        "group": name,
        "message_model": None,
        "consume_type": None,
        "consumption": None,
        "popped_unacked": None,
        "kind": "-",
        "clients_online": None,
        "client_local": False,
        "total_lag": None,
        "retry_backlog": None,
        "dlq_messages": None,
        "unknown_queues": None,
        "below_min_queues": None,
        "from_slave": [],
        "lite": None,
        "lite_note": None,
        "partial": True,
        "missing": [lost.to_dict()],
        "answered": False,
    }


def _group_summary(o: GroupOffsets) -> dict[str, Any]:
    read = o.answered
    tally = o.tally()
    return {
        "group": o.group,
        "message_model": o.message_model,
        "consume_type": o.consume_type,
        # push / pull / POP, remoting or gRPC through a proxy (None: nobody online said).
        "consumption": o.consumption.label() if o.consumption.kinds else None,
        # A POP group's messages popped and not acked, counted in total_lag.
        "popped_unacked": o.popped_unacked if o.consumption.pop else None,
        # The same, short and in one word, for the table (push, pop, pop/grpc, ...).
        "kind": fmt_consumption(o.consumption, o.consume_type),
        "clients_online": len(o.clients) if read and o.clients_known else None,
        # A BROADCASTING group's lag is on its clients: the brokers' "0" would read as caught
        # up, so its total is unknown (null), as `lag` says.
        "client_local": o.client_local,
        # Lower bounds when partial; null when nothing of the group could be read.
        "total_lag": tally.total_lag if read and not o.client_local else None,
        "retry_backlog": tally.retry_backlog if read else None,
        "dlq_messages": o.dlq_messages if read else None,
        "unknown_queues": tally.unknown_queues if read else None,
        # Queues committed below their min offset (those messages are already deleted).
        "below_min_queues": tally.below_min_queues if read else None,
        # Brokers read from a slave, their master down: complete, but the operator must know.
        "from_slave": list(o.from_slave),
        # A lite group (RocketMQ 5.5): its parent topic and lite topics most behind.
        "lite": lite_document(o.lite),
        "lite_note": lite_note(o.lite) if o.lite is not None else None,
        "partial": o.partial,
        "missing": missing(o.gaps),
        "answered": read,
    }


def _clients_cell(row: dict[str, Any]) -> str:
    n = row["clients_online"]
    if n is None:
        return "?"
    return str(n) if n else "OFFLINE"


def _total_cell(row: dict[str, Any], key: str) -> str | int:
    value = row[key]
    if value is None:
        return "?"
    return at_least(value, row["partial"]) if row["partial"] else int(value)


def _note_cell(row: dict[str, Any]) -> str:
    """What the row's numbers do not say: what it lacks, where it was read, where its lag is."""
    notes = [_missing_cell(row["missing"])]
    if row["from_slave"]:
        notes.append(f"{FROM_SLAVE}: {', '.join(row['from_slave'])}")
    if row["client_local"]:
        notes.append("offsets on each consumer host (offsets.json), none on the brokers")
    if row["lite"] is not None:
        notes.append(row["lite_note"])
    return " | ".join(n for n in notes if n)


def _missing_cell(gaps: list[dict[str, str]], shown: int = 2) -> str:
    """What a row lacks, short: `broker-b timed out`, `+3 more`."""
    if not gaps:
        return ""
    words = [f"{g['name']} {g['why']}" for g in gaps[:shown]]
    if len(gaps) > shown:
        words.append(f"+{len(gaps) - shown} more")
    return "PARTIAL: " + "; ".join(words)


def _lag(args: argparse.Namespace) -> int:
    async def body(reader: ClusterReader, target: Target) -> int:
        o = await reader.group_offsets(args.group, topics=args.topic)
        o = await with_client_stores(reader, o, target.config.client_offset_dirs)
        code = exit_code(o.gaps, anything_read=o.answered)
        if args.json:
            dump_json(lag_document(o))
        elif o.answered:
            _print_lag(o)
        report_missing(o.gaps)
        return code

    return _run(args, body)


def _print_lag(o: GroupOffsets) -> None:
    model = o.message_model or "-"
    if not o.clients_known:
        state = "clients unknown"
    else:
        state = f"{len(o.clients)} client(s) online" if o.online else "OFFLINE"
    kind = f"  consumption {o.consumption.label()}" if o.consumption.kinds else ""
    print(f"group {o.group}  model {model}{kind}  {state}  taken {timestamp(o.taken_at_ms)}")
    if o.partial:
        what = ", ".join(f"{g.part} {g.name} ({g.why})" for g in distinct(o.gaps)[:4])
        more = len(distinct(o.gaps)) - 4
        print(f"PARTIAL: missing {what}" + (f" and {more} more" if more > 0 else ""))
    if o.client_local:
        print(CLIENT_LOCAL_NOTE)
        _print_client_stores(o)
        if o.client_stores:
            return
    if o.from_slave:
        print(f"{FROM_SLAVE}: {', '.join(o.from_slave)}")
        now = int(time.time() * 1000)
        for lag in o.slave_lag:
            print(lag.line(now))
    if o.lite is None or o.queues:
        _queue_table(o.queues)
    if o.lite is not None:
        print_lite(o.lite, o.partial)
    for line in client_lines(o):
        print(line)
    p = o.partial
    total = "unknown (client-local)" if o.client_local else at_least(o.total_lag, p)
    print(
        f"total lag {total}  retry backlog {at_least(o.retry_backlog, p)}  "
        f"DLQ {at_least(o.dlq_messages, p)}  unknown queues {o.unknown_queues}"
        + (f"  below min {o.below_min_queues}" if o.below_min_queues else "")
    )


def client_lines(o: GroupOffsets) -> list[str]:
    """Who consumes, how, and what the queue table does not show: a POP group's messages
    popped and not acked (counted in the total lag), clients listed on several connections."""
    lines = [
        f"client {c.client_id}  {c.language} {fmt_version(c.version)}  {c.transport}  {c.addr}"
        for c in o.clients
    ]
    if o.consumption.pop:
        where = ", ".join(f"{p.broker} {p.topic} {p.messages}" for p in o.pop_in_flight)
        source = (
            o.pop_in_flight[0].source
            if o.pop_in_flight
            else "unknown: no client reported it (see the missing parts)"
        )
        lines.append(
            f"POP: popped and not acked {o.popped_unacked}"
            + (f" ({where})" if where else "")
            + f", from the {source}: counted in the total lag"
            if o.pop_in_flight
            else f"POP: popped and not acked: {source}"
        )
    lines += [g.line() for g in o.ghosts]
    if not o.clients and not o.proxies:
        lines.append(
            "no proxy asked (--proxy, or proxies: in the config): gRPC clients connect to a "
            "proxy, and the brokers do not list them"
        )
    return lines


def _queue_table(queues: Sequence[QueueOffsets], *, committed: str = "COMMITTED") -> None:
    table(
        ["TOPIC", "BROKER", "QID", "MIN", "MAX", committed, "LAG", "IN-FLIGHT", "LAST", "NOTE"],
        [
            [
                q.topic,
                q.broker,
                q.queue_id,
                q.min_offset if q.min_offset is not None else "unknown",
                q.max_offset,
                q.committed if q.committed is not None else "unknown",
                q.lag if q.lag is not None else "unknown",
                q.in_flight if q.in_flight is not None else "unknown",
                timestamp(q.last_timestamp) or "-",
                _below_min_note(q) or "",
            ]
            for q in queues
        ],
    )


def _print_client_stores(o: GroupOffsets) -> None:
    if not o.client_stores:
        print(
            f"no offsets.json of {o.group} on this host: on each consumer host it is "
            f"~/.rocketmq_offsets/<clientId>/{o.group}/offsets.json (or where "
            "-Drocketmq.client.localOffsetStoreDir points); list more places in "
            "client_offset_dirs"
        )
        return
    for store in o.client_stores:
        print()
        print(f"client {store.client_id}  {_running(store)}  {store.path}")
        if store.error is not None:
            print(f"UNREADABLE: {store.error}: this client's lag is unknown")
            continue
        written = timestamp(store.modified_ms)
        print(
            f"written {written}"
            + ("  (from the backup: offsets.json unreadable)" if store.from_backup else "")
        )
        _queue_table(store.queues, committed="OFFSET")
        gone = ", ".join("/".join(map(str, k)) for k in store.unknown)
        print(
            f"client lag {store.total_lag}" + (f"  not on any broker now: {gone}" if gone else "")
        )


def _running(store: ClientStore) -> str:
    if store.running is None:
        return "running: unknown"
    return "RUNNING (rewrite only once stopped)" if store.running else "stopped"


def _queue_gaps(o: GroupOffsets, q: QueueOffsets) -> list[Gap]:
    """The gaps that concern one queue: its own (committed unknown) and its topic's min."""
    own = f"{q.topic}/{q.broker}/{q.queue_id}"
    topic = f"{q.topic}/{q.broker}"
    return [
        g
        for g in o.gaps
        if (g.part is Part.QUEUE and g.name == own)
        or (g.part is Part.MIN_OFFSETS and g.name == topic)
    ]


def _below_min_note(q: QueueOffsets) -> str | None:
    if not q.below_min:
        return None
    assert q.committed is not None
    assert q.min_offset is not None
    return f"below min: {q.min_offset - q.committed} already deleted"


def lag_document(o: GroupOffsets) -> dict[str, Any]:
    """`lag --json`: totals are lower bounds when `partial` (each missing piece in `missing`);
    null when nothing could be read."""
    read = o.answered
    return {
        "group": o.group,
        "taken_at": timestamp(o.taken_at_ms),
        "partial": o.partial,
        "missing": missing(o.gaps),
        "online": o.online if o.clients_known else None,
        "message_model": o.message_model,
        "consume_type": o.consume_type,
        "consumption": {
            "kinds": [str(k) for k in o.consumption.kinds],
            "remoting": o.consumption.remoting,
            "grpc": o.consumption.grpc,
            "label": o.consumption.label(),
        },
        "clients": [
            {
                "client_id": c.client_id,
                "addr": c.addr,
                "language": c.language,
                "version": c.version,
                "version_name": fmt_version(c.version),
                # The proxy a gRPC client came through; null: connected to the brokers.
                "proxy": c.proxy,
            }
            for c in o.clients
        ],
        "proxies": list(o.proxies),
        # A POP group's messages popped and not acked, where reported (in total_lag); what no
        # source reported is in `missing` (part "in-flight").
        "popped_unacked": o.popped_unacked if o.consumption.pop else None,
        "pop_in_flight": [
            {"topic": p.topic, "broker": p.broker, "messages": p.messages, "source": p.source}
            for p in o.pop_in_flight
        ],
        # A broker listing one client on several connections: the group rebalances wrongly.
        "ghost_connections": [
            {"broker": g.broker, "client_id": g.client_id, "connections": g.connections}
            for g in o.ghosts
        ],
        "slave_lag": [
            {
                "broker": s.broker,
                "slave_addr": s.slave_addr,
                "behind_bytes": s.behind_bytes,
                "last_contact_at": timestamp(s.last_contact_ms) if s.last_contact_ms else None,
            }
            for s in o.slave_lag
        ],
        # A BROADCASTING group's lag is on its clients: the brokers' "0" would read as caught up.
        "client_local": o.client_local,
        "total_lag": o.total_lag if read and not o.client_local else None,
        "retry_backlog": o.retry_backlog if read else None,
        "dlq_messages": o.dlq_messages if read else None,
        "unknown_queues": o.unknown_queues,
        "below_min_queues": o.below_min_queues,
        "unreachable_brokers": list(o.unreachable_brokers),
        "from_slave": list(o.from_slave),
        # A lite group (RocketMQ 5.5): what its brokers count, its lite topics most behind.
        "lite": lite_document(o.lite),
        "queues": [_queue_document(o, q) for q in o.queues],
        # Only for a BROADCASTING group: what its clients on this host keep in offsets.json.
        "client_offsets": [
            {
                "client_id": s.client_id,
                "path": s.path,
                "from_backup": s.from_backup,
                "written_at": timestamp(s.modified_ms) if s.error is None else None,
                "running": s.running,
                "error": s.error,
                "total_lag": s.total_lag,
                "not_on_brokers": ["/".join(map(str, k)) for k in s.unknown],
                "queues": [_queue_document(o, q) for q in s.queues],
            }
            for s in o.client_stores
        ],
    }


def _queue_document(o: GroupOffsets, q: QueueOffsets) -> dict[str, Any]:
    return {
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
        "partial": bool(gaps := _queue_gaps(o, q)),
        "missing": missing(gaps),
    }
