"""Which cluster a command talks to: `--namesrv HOST:PORT` or `--cluster NAME` from the config
(the options themselves are console/cli/arguments.py's)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from console.config import (
    ClusterConfig,
    Config,
    ConfigError,
    TlsRef,
    is_address,
    load_config,
    parse_address_map,
    split_namesrv,
)
from console.rocketmq.admin import AdminClient
from console.services.infra.access import open_admin
from console.services.read.open_reader import open_reader
from console.services.read.reader import ClusterReader


@dataclass(frozen=True, slots=True)
class Target:
    cluster: ClusterConfig
    config: Config

    def admin(self, *, write: bool = False) -> AdminClient:
        return open_admin(self.cluster, self.config, write=write)

    def reader(self) -> AbstractAsyncContextManager[ClusterReader]:
        """The cluster's reader on a read-only client (closed on leaving), built as every
        door builds it (console/services/read/open_reader.py). A proxy it found where none
        was named is told on stderr (`proxy HOST:PORT found`)."""
        return _telling_found_proxies(open_reader(self.cluster, self.config))


@asynccontextmanager
async def _telling_found_proxies(
    opened: AbstractAsyncContextManager[ClusterReader],
) -> AsyncIterator[ClusterReader]:
    async with opened as reader:
        try:
            yield reader
        finally:
            for line in reader.proxy_news():
                print(f"rmq-console: {line}", file=sys.stderr)


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
    return Target(reached(cluster, args), target.config)


def reached(cluster: ClusterConfig, args: argparse.Namespace) -> ClusterConfig:
    """`cluster` with `--map-address` (added to its `address_map:`, taking precedence) and
    `--socks` (instead of its `socks:`)."""
    if getattr(args, "map_address", None):
        entries = [e for e in split_namesrv(args.map_address) if e]
        given = parse_address_map(entries, "--map-address")
        kept = tuple((s, t) for s, t in cluster.address_map if s not in dict(given))
        cluster = replace(cluster, address_map=kept + given)
    if getattr(args, "socks", None):
        if not is_address(args.socks):
            raise ConfigError(f"--socks: not a host:port address: {args.socks!r}")
        cluster = replace(cluster, socks=args.socks.strip())
    return cluster


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
