"""Which cluster a command talks to: `--namesrv HOST:PORT` or `--cluster NAME` from the config."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from console.config import (
    ClusterConfig,
    Config,
    ConfigError,
    TlsRef,
    is_address,
    load_config,
    split_namesrv,
)
from console.rocketmq.admin import AdminClient
from console.services.infra.access import open_admin


@dataclass(frozen=True, slots=True)
class Target:
    cluster: ClusterConfig
    config: Config

    def admin(self, *, write: bool = False) -> AdminClient:
        return open_admin(self.cluster, self.config, write=write)


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
        metavar="HOST:PORT",
        help="RocketMQ 5 proxy remoting address(es), ';' or ',' between them: their gRPC "
        "clients (the brokers do not list them)",
        **kw,
    )
    group.add_argument(
        "--broker-metrics",
        metavar="URL",
        help="the brokers' Prometheus metrics (http://HOST:5557/metrics), ';' or ',' between "
        "them: what gRPC groups popped and did not ack",
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


def command_config(args: argparse.Namespace) -> Config:
    """The config file (`--config`, else the default) with `--timeout` applied."""
    config = load_config(Path(args.config) if getattr(args, "config", None) else None)
    if getattr(args, "timeout", None):
        config = replace(config, timeout=float(args.timeout))
    return config


def console_target(args: argparse.Namespace) -> tuple[Config, ClusterConfig | None]:
    """The console's config and the cluster to open (None: the Clusters screen, when none is
    named)."""
    if getattr(args, "namesrv", None) or getattr(args, "cluster", None):
        target = resolve_target(args)
        return target.config, target.cluster
    return command_config(args), None


def command_tls(args: argparse.Namespace) -> TlsRef | None:
    """`--tls` / `--tls-ca FILE`: TLS for a bare `--namesrv`. The CA file is a path, read when
    connecting (as a config's `tls.ca`)."""
    ca = getattr(args, "tls_ca", None)
    if ca:
        return TlsRef(ca=str(Path(ca).expanduser().resolve()))
    return TlsRef() if getattr(args, "tls", False) else None


def resolve_target(args: argparse.Namespace) -> Target:
    target = _resolve_target(args)
    cluster = target.cluster
    if getattr(args, "proxy", None):
        proxies = split_namesrv(args.proxy)
        if not proxies:
            raise ConfigError(f"--proxy: no address given in {args.proxy!r}")
        cluster = replace(cluster, proxies=proxies)
    if getattr(args, "broker_metrics", None):
        urls = split_namesrv(args.broker_metrics)
        if not urls or not all(u.startswith(("http://", "https://")) for u in urls):
            raise ConfigError(f"--broker-metrics: not http(s) URLs: {args.broker_metrics!r}")
        cluster = replace(cluster, broker_metrics=urls)
    return Target(cluster, target.config)


def _resolve_target(args: argparse.Namespace) -> Target:
    config = command_config(args)
    tls = command_tls(args)
    if getattr(args, "namesrv", None):
        addrs = split_namesrv(args.namesrv)
        if not addrs:
            raise ConfigError(f"--namesrv: no address given in {args.namesrv!r}")
        for addr in addrs:
            if not is_address(addr):
                raise ConfigError(f"--namesrv: not a host:port address: {addr!r}")
        cluster = ClusterConfig(name=args.namesrv, namesrv=addrs, tls=tls)
        if getattr(args, "cluster", None):
            # --namesrv with --cluster: the RocketMQ cluster name inside that name server.
            cluster = ClusterConfig(
                name=args.cluster, namesrv=addrs, rocketmq_cluster=args.cluster, tls=tls
            )
        return Target(cluster, config)
    if tls is not None:
        raise ConfigError(
            "--tls and --tls-ca go with --namesrv; a configured cluster speaks TLS as its "
            "`tls:` in the config says"
        )
    if getattr(args, "cluster", None):
        return Target(config.cluster(args.cluster), config)
    if len(config.clusters) == 1:
        return Target(config.clusters[0], config)
    if not config.clusters:
        raise ConfigError(
            "no cluster given: use --namesrv HOST:PORT or --cluster NAME "
            "(clusters are listed in the config file)"
        )
    names = ", ".join(c.name for c in config.clusters)
    raise ConfigError(f"several clusters configured ({names}): choose one with --cluster NAME")
