"""`rmq-console spark up | down | status`: a warm Spark engine for the CLI.

`up` starts the Spark Connect server bundled with pyspark on loopback (master `local[*]`, or the
config's `spark://` master) and a warm job host beside it (console.services.infra.warm_host), and
`plan` then sends its job to that host instead of starting Spark, or a host, for each call. Their
records (pid, port, master, token; the host's socket) and logs live under the cache folder.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict
from typing import Any

from console.cli.arguments import target_parent
from console.cli.render import dump_json
from console.cli.target import command_config
from console.errors import BadInput
from console.services.infra import connect_server as server
from console.services.infra import warm_host
from console.services.infra.connect_server import (
    ConnectServerError,
    Probe,
    ServerHome,
    ServerRecord,
)
from console.services.infra.warm_host import WarmHostError

LOCAL_MASTER = "local[*]"
#: The warm host gets what is left of --wait after the server, and at least this.
WARM_HOST_MIN_WAIT_S = 60.0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    spark = sub.add_parser(
        "spark",
        help="a warm Spark engine: start, stop or check the Spark Connect server",
        description="Run the Spark Connect server that ships with pyspark on this machine "
        "(loopback only), so `plan` connects to a warm engine instead of starting Spark.",
    )
    commands = spark.add_subparsers(title="commands", metavar="COMMAND", required=True)
    parent = target_parent()

    p = commands.add_parser(
        "up",
        help="start the Spark Connect server",
        description="Start the Spark Connect server bundled with pyspark on 127.0.0.1 and wait "
        "until it listens. Its master is --master, else the config's spark_master when that is "
        "a local[...] or spark:// master, else local[*].",
        parents=[parent],
    )
    p.add_argument(
        "--port",
        type=int,
        default=server.DEFAULT_PORT,
        help=f"port on 127.0.0.1 (default {server.DEFAULT_PORT}; 0: any free port)",
    )
    p.add_argument("--master", help="local[N] or spark://host:7077 (default: see above)")
    p.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting for the server (repeatable), e.g. spark.driver.memory=2g",
    )
    p.add_argument(
        "--wait",
        type=float,
        default=server.START_TIMEOUT_S,
        metavar="SECONDS",
        help=f"how long to wait for it to start (default {server.START_TIMEOUT_S:.0f})",
    )
    p.set_defaults(handler=_up)

    p = commands.add_parser("down", help="stop the Spark Connect server", parents=[parent])
    p.set_defaults(handler=_down)

    p = commands.add_parser(
        "status",
        help="whether the Spark Connect server answers, and on what master",
        description="Ask the server started by `spark up` (and a configured sc:// spark_master) "
        "a Spark question. Exit status 0 when every server asked answers, 1 when one does not, "
        "3 when there is none to ask.",
        parents=[parent],
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=_status)


def _up(args: argparse.Namespace) -> int:
    home = ServerHome.default()
    found = server.running(home)
    if found is not None:
        print(f"already running: {_describe(found)}")
        if warm_host.running(home, found) is None:
            _start_host(home, found, args.wait)
        return 0
    master = args.master or _server_master(command_config(args).spark_master)
    conf = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadInput(f"--conf {item!r}: expected KEY=VALUE")
        conf[key] = value
    began = time.monotonic()
    print(f"starting the Spark Connect server (master {master}) ...", file=sys.stderr)
    try:
        record = server.start(home, master=master, port=args.port, conf=conf, timeout=args.wait)
    except ConnectServerError as exc:
        print(f"rmq-console: spark up: {exc}", file=sys.stderr)
        return 1
    print(f"up in {time.monotonic() - began:.1f}s: {_describe(record)}")
    _start_host(home, record, max(args.wait - (time.monotonic() - began), WARM_HOST_MIN_WAIT_S))
    print("`rmq-console plan` uses it until `rmq-console spark down`.")
    return 0


def _start_host(home: ServerHome, record: ServerRecord, wait: float) -> None:
    print("starting the warm job host ...", file=sys.stderr)
    began = time.monotonic()
    try:
        host = warm_host.start(home, record, timeout=wait)
    except WarmHostError as exc:
        # The server serves without it: each plan then starts a host of its own.
        print(f"rmq-console: spark up: no warm job host: {exc}", file=sys.stderr)
    else:
        took = time.monotonic() - began
        print(f"warm job host: pid {host.pid}, ready in {took:.1f}s; log: {host.log}")


def _down(args: argparse.Namespace) -> int:
    home = ServerHome.default()
    host = warm_host.stop(home)  # first: it ends with its server anyway, but sooner this way
    record = server.stop(home)
    if record is None:
        print("no Spark Connect server started by `rmq-console spark up` is running")
    else:
        print(f"stopped the Spark Connect server at {record.url} (pid {record.pid})")
    if host is not None:
        print(f"stopped the warm job host (pid {host.pid})")
    return 0


def _status(args: argparse.Namespace) -> int:
    config = command_config(args)
    asked: list[dict[str, Any]] = []
    record = server.running(ServerHome.default())
    if record is not None:
        probe = server.probe(record.url, env=record.client_env)
        host = warm_host.running(ServerHome.default(), record)
        asked.append(
            _entry(
                probe,
                "spark up",
                pid=record.pid,
                log=record.log,
                started=record.started_at_ms,
                warm_host_pid=host.pid if host else None,
            )
        )
    configured = config.spark_master
    if configured.startswith("sc://") and not (record and _same_server(configured, record)):
        asked.append(_entry(server.probe(configured), "spark_master"))
    if args.json:
        dump_json({"servers": asked})
    elif not asked:
        print(
            "no Spark Connect server: none started by `rmq-console spark up`, and "
            f"spark_master is {configured}"
        )
    for entry in [] if args.json else asked:
        print(_status_line(entry))
    if not asked:
        return 3
    return 0 if all(e["answers"] for e in asked) else 1


# ---- helpers ----------------------------------------------------------------------------------


def _server_master(configured: str) -> str:
    """The config's spark_master when the server can run on it (not another Connect URL)."""
    if configured.startswith(("local", "spark://")):
        return configured
    return LOCAL_MASTER


def _same_server(url: str, record: ServerRecord) -> bool:
    try:
        host, port = server.connect_address(url)
    except ValueError:
        return False
    return port == record.port and host in (server.CLIENT_HOST, server.LOOPBACK)


def _describe(record: ServerRecord) -> str:
    return f"{record.url} (master {record.master}, pid {record.pid}); log: {record.log}"


def _entry(probe: Probe, source: str, **extra: Any) -> dict[str, Any]:
    entry = {"source": source, **asdict(probe), "answers": probe.answers}
    entry.update({k: v for k, v in extra.items() if v is not None})
    return entry


def _status_line(entry: dict[str, Any]) -> str:
    where = f"Spark Connect server {entry['url']} ({entry['source']})"
    if entry["answers"]:
        line = f"{where}: answers; Spark {entry['spark_version']}, master {entry['master']}"
    else:
        line = f"{where}: does not answer: {entry['error']}"
    if "pid" in entry:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry["started"] / 1000))
        line += f"\n  pid {entry['pid']}, started {since}; log: {entry['log']}"
        host = entry.get("warm_host_pid")
        line += (
            f"\n  warm job host: pid {host}"
            if host
            else "\n  no warm job host: each plan starts its own (rmq-console spark up starts one)"
        )
    return line
