"""A cluster's reader, built from the cluster's configuration: the one place that does.

Every door reads a cluster through a `ClusterReader` (the CLI's read commands, snapshots, plans,
the apply session's checks and read-backs, walkthroughs, the console's network process). What
the reader must know of the cluster beyond its admin client lives in the config: the RocketMQ
cluster's name inside its name server, the proxies that list gRPC clients (or the port the
proxies the brokers list are looked for on, when none is named: proxy_finder.py), the brokers'
metrics endpoints. A reader built anywhere else without them reads a proxied cluster's offline
groups as partial ("proxies nobody asked") and a gRPC group as offline: built here, every door
asks the same places.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from console.config import ClusterConfig, Config
from console.rocketmq.admin import AdminClient
from console.services.infra.access import open_admin
from console.services.read.reader import ClusterReader


def reader_for(
    admin: AdminClient, cluster: ClusterConfig, *, routes_ttl: float = 0.0
) -> ClusterReader:
    """The reader of `cluster` through `admin` (a client opened from that cluster's config).
    `routes_ttl`: how long one name-server answer about the brokers serves the reads after it
    (a refresh of many groups)."""
    return ClusterReader(
        admin,
        cluster.rocketmq_cluster,
        cluster.proxies,
        cluster.broker_metrics,
        routes_ttl=routes_ttl,
        proxy_port=cluster.proxy_port,
    )


@asynccontextmanager
async def open_reader(
    cluster: ClusterConfig, config: Config | None = None, *, write: bool = False
) -> AsyncIterator[ClusterReader]:
    """An admin client opened from `cluster`'s config (console/services/infra/access.py: a
    read-only one unless `write`) and the reader built on it; closed on leaving."""
    async with open_admin(cluster, config, write=write) as admin:
        yield reader_for(admin, cluster)
