"""The one way into a cluster: an admin client opened from the cluster's config.

Everything that talks to a configured cluster — the CLI, the console's network process, planning
and the Spark jobs (in the executors) — opens its client here, so addresses, credentials, the
timeout and the `read_only` promise are applied the same way everywhere. A client opened for
reading refuses every write request (the wire client checks each request's code); asking to
write to a cluster marked `read_only: true` fails before anything is opened or resolved.

Credentials are resolved here, in the process that connects, from the config's references; the
secret is hidden from every outward text at that moment (console.redact). A broker refusing the
signature (or its absence) is reported as `AccessRefused`, naming the access key, never the
secret.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from console.config import ClusterConfig, Config
from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import ResponseCode
from console.rocketmq.errors import BrokerError, ReadOnlyError
from console.rocketmq.frame import Command
from console.rocketmq.signing import Credentials


class AccessRefused(BrokerError):
    """A broker refused the request's identity or rights (NO_PERMISSION): no credentials, an
    unknown user, a wrong secret, or an action the user may not take. Names the cluster and
    the access key used; the broker's own remark says which."""

    def __init__(self, error: BrokerError, cluster: str, access_key: str | None) -> None:
        super().__init__(error.addr, error.request_code, error.code, error.remark)
        who = (
            f"access key {access_key!r}"
            if access_key is not None
            else "no credentials (the config gives this cluster none)"
        )
        remark = (error.remark or "no remark").strip()
        self.args = (
            f"{error.addr} of cluster {cluster!r} refused request {error.request_code} "
            f"signed with {who}: {remark}",
        )
        self.cluster = cluster
        self.access_key = access_key


class ClusterClient(AdminClient):
    """An admin client that knows the cluster config it was opened from."""

    def __init__(
        self,
        cluster: ClusterConfig,
        *,
        timeout: float,
        credentials: Credentials | None,
        read_only: str | None,
    ) -> None:
        super().__init__(
            list(cluster.namesrv), timeout=timeout, credentials=credentials, read_only=read_only
        )
        self.cluster = cluster
        self._access_key = credentials.access_key if credentials is not None else None

    async def call(
        self,
        addr: str,
        code: int,
        fields: dict[str, Any] | None = None,
        body: bytes = b"",
        *,
        timeout: float | None = None,
        ok: Iterable[int] = (ResponseCode.SUCCESS,),
    ) -> Command:
        try:
            return await super().call(addr, code, fields, body, timeout=timeout, ok=ok)
        except BrokerError as exc:
            if exc.code != ResponseCode.NO_PERMISSION or isinstance(exc, AccessRefused):
                raise
            raise AccessRefused(exc, self.cluster.name, self._access_key) from None


def open_admin(
    cluster: ClusterConfig,
    config: Config | None = None,
    *,
    write: bool = False,
    timeout: float | None = None,
) -> ClusterClient:
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
    return ClusterClient(
        cluster,
        timeout=timeout if timeout is not None else (config or Config()).timeout,
        credentials=credentials,
        read_only=refusal,
    )


def cluster_of(admin: AdminClient) -> ClusterConfig | None:
    """The config a client was opened from, when it was opened here."""
    return admin.cluster if isinstance(admin, ClusterClient) else None
