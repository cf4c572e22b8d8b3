"""The console's network process: one admin client, serving the UI process's calls.

Why a process: decoding broker answers for a refresh of hundreds of groups keeps a CPU busy for
seconds. In a thread it would hold the GIL half of that time and double every key press's
latency; in its own process the UI keeps a whole interpreter (and, on two cores, a core) to itself.

It speaks the console's RPC (console.services.infra.rpc): the parent's hello is the (ClusterConfig,
Config) to read, then each call is one of the `ClusterOperations` (console.services.read.source),
served by `ReaderSource` under the same name. Wire-client errors cross as themselves (a BrokerError
keeps its code, an AccessDenied its access key); anything else crosses as its kind and text.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from console.rocketmq.errors import RocketMQError
from console.services.infra.fanout import Cadence
from console.services.infra.rpc import (
    AsyncHandler,
    Link,
    RemoteError,
    Reply,
    link_to_parent,
    portable_error,
    serve_async,
)
from console.services.read.reader_source import ReaderSource
from console.services.read.source import OPERATIONS, ClusterOperations, Operation

#: Seconds between two progress reports of one call (a refresh of 500 groups would otherwise
#: send 500).
PROGRESS_INTERVAL = 0.2

#: Scheduling priority of the network process: it does throughput work (a refresh may take
#: seconds either way), the UI process latency work (a key press must repaint at once).
NICENESS = 10


def portable(exc: BaseException) -> BaseException:
    """Wire-client errors cross as themselves; anything else is a surprise, and crosses as a
    RemoteError (still a RocketMQError to the screens, as every failure here was before)."""
    if isinstance(exc, RocketMQError):
        return portable_error(exc)
    return RemoteError.of(exc)


def _portable_values(value: Any) -> Any:
    """Results that carry per-item failures (read_groups, read_delays) carry them portably."""
    if isinstance(value, Mapping):
        return {k: portable(v) if isinstance(v, BaseException) else v for k, v in value.items()}
    return value


def handlers(backend: ClusterOperations) -> dict[str, AsyncHandler]:
    """One handler per operation, calling the backend's method of the same name."""

    def serve(op: Operation) -> AsyncHandler:
        method = getattr(backend, op.name)

        async def handle(reply: Reply, *args: Any) -> Any:
            callbacks: dict[str, Any] = {}
            if op.reports_progress:
                callbacks["progress"] = Cadence(reply.progress, PROGRESS_INTERVAL)
            if op.hands_parts and reply.takes_parts:
                callbacks["parts"] = lambda part: reply.part(_portable_values(part))
            return _portable_values(await method(*args, **callbacks))

        return handle

    return {name: serve(op) for name, op in OPERATIONS.items()}


def _lower_priority_once() -> Callable[[], None]:
    done = False

    def after_answer() -> None:
        nonlocal done
        if not done:
            # Full priority until the first answer (the console's first frame waits for it),
            # background priority after. Where that is not allowed, it stays at equal priority.
            done = True
            with contextlib.suppress(OSError):
                os.nice(NICENESS)

    return after_answer


async def serve(link: Link) -> None:
    hello = link.receive_hello()
    if hello is None:
        return
    cluster, config = hello
    backend = ReaderSource(cluster, config)
    operations: ClusterOperations = backend  # mypy checks here that ReaderSource has them all
    try:
        await serve_async(
            link, handlers(operations), portable=portable, on_answer=_lower_priority_once()
        )
    finally:
        await backend.close()


def main(argv: Sequence[str] | None = None) -> int:
    asyncio.run(serve(link_to_parent(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
