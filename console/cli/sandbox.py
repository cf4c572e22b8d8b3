"""`rmq-console sandbox …` and `rmq-console demo`: the local RocketMQ sandbox cluster."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from console.cli.arguments import target_parent
from console.cli.target import console_target
from console.sandbox.cli import add_arguments, print_ready, run
from console.sandbox.cluster import BROKER_NAMES
from console.sandbox.ports import free_ports
from console.ui.main import open_console


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "sandbox",
        help="a local RocketMQ 5.3.3 cluster (namesrv + 2 brokers) with seeded lag",
        description="Fetch, start, stop or inspect the local sandbox cluster.",
    )
    add_arguments(p)
    p.set_defaults(handler=_sandbox)
    demo = sub.add_parser(
        "demo",
        help="start the sandbox and open the console on it; quitting stops everything",
        parents=[target_parent()],
    )
    demo.add_argument("--free-ports", action="store_true", help="random free ports, not 9876")
    demo.set_defaults(handler=_demo)


def _sandbox(args: argparse.Namespace) -> int:
    return run(args)


def _demo(args: argparse.Namespace) -> int:
    # deferred: cryptography (the sandbox's TLS certificates)
    from console.sandbox.background import BackgroundSandbox
    from console.sandbox.runner import SandboxOptions

    options = SandboxOptions(
        ports=free_ports(BROKER_NAMES, proxy=True) if args.free_ports else None, proxy=True
    )
    print("starting the sandbox cluster (first run downloads the RocketMQ jars)…", flush=True)
    with BackgroundSandbox(options) as sb:
        print_ready(sb)
        args.namesrv = sb.namesrv_addr
        args.cluster = None
        # Its gRPC consumer is listed by the proxy only, and what it popped by the brokers'
        # metrics only.
        args.proxy = sb.proxy_addr
        args.broker_metrics = ";".join(sb.cluster.metrics_urls.values()) or None
        config, cluster = console_target(args)
        # The broadcasting consumer's offsets.json is on this host: show it beside the brokers.
        dirs = config.client_offset_dirs + sb.client_offset_dirs
        status = open_console(replace(config, client_offset_dirs=dirs), cluster)
    print("sandbox stopped", file=sys.stderr)
    return status
