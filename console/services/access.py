"""The one way into a cluster: an admin client opened from the cluster's config.

Everything that talks to a configured cluster — the CLI, the console's network process, planning
and the Spark jobs — opens its client here, so addresses, credentials, the timeout and the
`read_only` promise are applied the same way everywhere. A client opened for reading refuses
every write request (the wire client checks each request's code); asking to write to a cluster
marked `read_only: true` fails before anything is opened.
"""

from __future__ import annotations

from console.config import ClusterConfig, Config
from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import ReadOnlyError


def open_admin(
    cluster: ClusterConfig,
    config: Config | None = None,
    *,
    write: bool = False,
    timeout: float | None = None,
) -> AdminClient:
    """An admin client for `cluster`. `write=True` asks for one that may change offsets; a
    read-only cluster refuses it. `timeout` overrides the config's request timeout."""
    if write and cluster.read_only:
        raise ReadOnlyError(
            f"cluster {cluster.name!r} is read-only (read_only: true in the config): "
            "nothing is written to it"
        )
    if write:
        refusal = None
    elif cluster.read_only:
        refusal = f"cluster {cluster.name!r} is read-only"
    else:
        refusal = f"this connection to {cluster.name!r} was opened for reading"
    credentials = cluster.credentials.resolve() if cluster.credentials else None
    return AdminClient(
        list(cluster.namesrv),
        timeout=timeout if timeout is not None else (config or Config()).timeout,
        credentials=credentials,
        read_only=refusal,
    )
