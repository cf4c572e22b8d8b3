"""The cluster options every command takes (`--namesrv`, `--cluster`, TLS, `--config`, ...).

Only argparse: the command line reads them before it knows which command's code to load.
"""

from __future__ import annotations

import argparse
from typing import Any


class Joined(argparse.Action):
    """An option that may be given several times: each value is kept, ';' between them (as
    one value with ';' or ',' would be), where a plain option keeps the last only and loses the
    others without a word (`--broker-metrics URL_A --broker-metrics URL_B` read one broker's
    metrics, and named the other's in-flight unknown)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        before = getattr(namespace, self.dest, None)
        setattr(namespace, self.dest, f"{before};{values}" if before else values)


def add_target_arguments(parser: argparse.ArgumentParser, *, suppress: bool = False) -> None:
    """The cluster options. Subcommands take them too (`rmq-console lag --namesrv …`); there
    they default to SUPPRESS so they do not overwrite what was given before the subcommand."""
    kw: dict[str, Any] = {"default": argparse.SUPPRESS} if suppress else {}
    group = parser.add_argument_group("cluster")
    group.add_argument(
        "--namesrv",
        metavar="HOST:PORT",
        help="name server address(es), separated by ';' or ','",
        **kw,
    )
    group.add_argument("--cluster", metavar="NAME", help="a cluster named in the config file", **kw)
    group.add_argument(
        "--tls",
        action="store_true",
        help="speak TLS to --namesrv and its brokers, verified against the system CAs",
        **kw,
    )
    group.add_argument(
        "--tls-ca",
        metavar="FILE",
        help="speak TLS to --namesrv and its brokers, verified against this CA file (PEM)",
        **kw,
    )
    group.add_argument(
        "--proxy",
        action=Joined,
        metavar="HOST:PORT",
        help="RocketMQ 5 proxy remoting address(es), ';' or ',' between them or the option "
        "given again: their gRPC clients (the brokers do not list them)",
        **kw,
    )
    group.add_argument(
        "--broker-metrics",
        action=Joined,
        metavar="URL",
        help="the brokers' Prometheus metrics (http://HOST:5557/metrics), ';' or ',' between "
        "them or the option given again: what gRPC groups popped and did not ack",
        **kw,
    )
    group.add_argument(
        "--map-address",
        action=Joined,
        metavar="FROM=TO",
        help="connect to TO wherever the cluster names FROM (a host, every port kept, or "
        "host:port): brokers that register addresses of another network; repeatable",
        **kw,
    )
    group.add_argument(
        "--socks",
        metavar="HOST:PORT",
        help="every connection to the cluster through this SOCKS5 proxy (ssh -D 1080 BASTION "
        "opens one); names resolve on its side",
        **kw,
    )
    group.add_argument(
        "--config",
        metavar="FILE",
        help="config file (default: $RMQ_CONSOLE_CONFIG or ~/.config/rmq-console/config.yaml)",
        **kw,
    )
    group.add_argument("--timeout", type=float, metavar="SECONDS", help="request timeout", **kw)


def target_parent() -> argparse.ArgumentParser:
    """A parent parser that gives a subcommand the cluster options."""
    parent = argparse.ArgumentParser(add_help=False)
    add_target_arguments(parent, suppress=True)
    return parent
