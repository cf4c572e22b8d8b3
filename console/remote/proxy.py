"""The real `ClusterSource`: a proxy to the console's network process
(console.remote.network_process).

Calls are awaited on the UI loop; the RPC's reader thread takes the answers off the socket and
settles them there. Cancelling a call (a superseded refresh) cancels it in the network process
too. The operations are not written out here: each is made from `ClusterOperations`
(console.services.read.source.OPERATIONS), with the protocol's own parameters, so a new operation
reaches the network process without an edit here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, cast

from console.config import ClusterConfig, Config
from console.services.infra.rpc import ChildProcess
from console.services.read.source import (
    OPERATIONS,
    ClusterSource,
    Operation,
    Parts,
    Progress,
    SourceFactory,
)

NETWORK_PROCESS = "the console's network process"


class RemoteSource:
    """A network process for one cluster; has every `ClusterOperations` method (see
    `remote_source`, which gives it that type)."""

    def __init__(self, cluster: ClusterConfig, config: Config) -> None:
        # The process draws nothing: its output goes to a file whose tail explains a crash.
        self._child = ChildProcess(
            "console.remote.network_process", name=NETWORK_PROCESS, hello=(cluster, config)
        )

    async def call(
        self,
        operation: str,
        *args: Any,
        progress: Progress | None = None,
        parts: Parts | None = None,
    ) -> Any:
        """One operation in the network process, by name."""
        call = self._child.call(operation, *args, on_progress=progress, on_part=parts)
        return await call.wait()

    def close(self) -> None:
        self._child.close(timeout=3.0)


def _forwarder(op: Operation) -> Callable[..., Awaitable[Any]]:
    async def forward(self: RemoteSource, *args: Any, **kwargs: Any) -> Any:
        bound = op.signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        del values["self"]
        progress = values.pop("progress", None) if op.reports_progress else None
        parts = values.pop("parts", None) if op.hands_parts else None
        return await self.call(
            op.name, *map(_plain, values.values()), progress=progress, parts=parts
        )

    forward.__name__ = forward.__qualname__ = op.name
    forward.__doc__ = op.doc
    return forward


for _op in OPERATIONS.values():
    setattr(RemoteSource, _op.name, _forwarder(_op))


def _plain(value: Any) -> Any:
    """Arguments as builtins that pickle (a mapping proxy or a keys view does not)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (str, bytes, tuple, list)):
        return value
    if isinstance(value, (Sequence, AbstractSet)):
        return list(value)
    return value


def remote_source(cluster: ClusterConfig, config: Config) -> ClusterSource:
    # The operations are attached from the protocol above; tests/ui/test_remote.py checks that
    # each one is there and is served by the network process.
    return cast(ClusterSource, RemoteSource(cluster, config))


def remote_sources(config: Config, *, warm: ClusterConfig | None = None) -> SourceFactory:
    """Sources for the console. `warm` starts that cluster's network process now, so it boots
    while the UI process is still importing Textual (start-up is measured)."""
    ready: dict[ClusterConfig, ClusterSource] = {}
    if warm is not None:
        ready[warm] = remote_source(warm, config)

    def connect(cluster: ClusterConfig) -> ClusterSource:
        return ready.pop(cluster, None) or remote_source(cluster, config)

    return connect
