"""The one way into a cluster: an admin client opened from the cluster's config.

Everything that talks to a configured cluster — the CLI, the console's network process, planning
and the Spark jobs (in the executors) — opens its client here, so addresses, credentials, the
timeout and the `read_only` promise are applied the same way everywhere. A client opened for
reading refuses every write request (the wire client checks each request's code); asking to
write to a cluster marked `read_only: true` fails before anything is opened or resolved.

Credentials are resolved here, in the process that connects, from the config's references; the
secret is hidden from every outward text at that moment (console.redact). A broker refusing the
signature (or its absence) is reported by the wire client as `AccessDenied`, naming the access
key, never the secret. The `tls:` files are read here too, into the TLS context every connection
of the client uses; a server refusing our TLS (or its absence) is `TlsRefused`. The cluster's
`address_map:` and `socks:` say where each connection goes (console/rocketmq/reach.py).
"""

from __future__ import annotations

from console.config import ClusterConfig, Config
from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import ReadOnlyError
from console.rocketmq.reach import DIRECT, Reach
from console.rocketmq.signing import Credentials
from console.rocketmq.tls import TlsClient


class ClusterClient(AdminClient):
    """An admin client that knows the cluster config it was opened from."""

    def __init__(
        self,
        cluster: ClusterConfig,
        *,
        timeout: float,
        credentials: Credentials | None,
        read_only: str | None,
        tls: TlsClient | None = None,
        reach: Reach = DIRECT,
    ) -> None:
        super().__init__(
            list(cluster.namesrv),
            timeout=timeout,
            credentials=credentials,
            read_only=read_only,
            tls=tls,
            reach=reach,
        )
        self.cluster = cluster
        self._access_key = credentials.access_key if credentials is not None else None


def write_refusal(cluster: ClusterConfig) -> str | None:
    """Why nothing may be written to `cluster`, or None when it may be: the one place that
    decides (every write goes through console/services/apply/write_access.py, which asks here)."""
    if cluster.read_only:
        return (
            f"cluster {cluster.name!r} is read-only (read_only: true in the config): nothing "
            "is written to it"
        )
    return None


def open_admin(
    cluster: ClusterConfig,
    config: Config | None = None,
    *,
    write: bool = False,
    timeout: float | None = None,
) -> ClusterClient:
    """An admin client for `cluster`. `write=True` asks for one that may change offsets; a
    read-only cluster refuses it. `timeout` overrides the config's request timeout."""
    refusal = write_refusal(cluster)
    if write and refusal is not None:
        raise ReadOnlyError(refusal)
    # What the client answers to a write request: a read connection never sends one.
    opened_for_reading = f"this connection to {cluster.name!r} was opened for reading"
    no_writes = None if write else refusal or opened_for_reading
    credentials = cluster.credentials.resolve() if cluster.credentials else None
    return ClusterClient(
        cluster,
        timeout=timeout if timeout is not None else (config or Config()).timeout,
        credentials=credentials,
        read_only=no_writes,
        tls=cluster.tls.resolve() if cluster.tls else None,
        reach=cluster.reach(),
    )


def cluster_of(admin: AdminClient) -> ClusterConfig | None:
    """The config a client was opened from, when it was opened here."""
    return admin.cluster if isinstance(admin, ClusterClient) else None
