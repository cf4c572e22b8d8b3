"""What the console reads from one cluster, as one async interface.

Screens only ever talk to a `ClusterSource`; `console.remote.proxy` has the real one (a proxy to
the console's network process, where `console.services.read.reader_source.ReaderSource` does the
work: the operations done with a `ClusterReader`) and the tests hand in fakes through
`make_app(connect=...)`.

A `ClusterSource` is what the console reads a cluster through; a `ClusterReader`
(console/services/read/reader.py) reads it over the wire; a `ClusterSession`
(console/services/read/cluster_session.py) is a cluster open in the console: its source, the
refreshes of its groups and what is known of its brokers.

`ClusterOperations` is the one list of what can be asked: the network process serves, and the
proxy forwards, exactly the operations found on it (`OPERATIONS`). Adding one is an edit here
and its implementation in `ReaderSource`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from console.config import ClusterConfig
from console.domain.boundary_messages import Boundary, BoundaryRequest
from console.domain.offsets import GroupOffsets, QueueKey
from console.rocketmq.models import QueueStats
from console.services.read.routes import BrokerHealth


class ClusterOperations(Protocol):
    """The cluster operations, each a coroutine. One that takes a `progress` parameter reports
    progress through it (across the process boundary too)."""

    async def brokers(self) -> tuple[BrokerHealth, ...]:
        """Every address the name server lists now (masters and slaves, by broker name then
        id), each asked whether it is alive; a master no longer listed while its slave is, as
        down."""
        ...

    async def name_server_notices(self) -> tuple[str, ...]:
        """Name servers of the cluster that do not answer now (skipped for a while), one line
        each naming the one used instead; and each proxy found where none was named."""
        ...

    async def topics(self) -> list[str]: ...

    async def topic_queues(self, topic: str) -> list[QueueStats]:
        """Min/max of the topic's queues on every broker that answers."""
        ...

    async def groups(self) -> list[str]: ...

    async def group_offsets(self, group: str) -> GroupOffsets: ...

    async def read_groups(
        self, groups: Sequence[str], progress: Progress | None = None, parts: Parts | None = None
    ) -> dict[str, GroupOffsets | Exception]:
        """Many groups' offsets in one call, each a value or the error reading it.

        `progress(done, total)` may be called from another thread (it must be thread-safe).
        With `parts`, the reads are handed to it as they complete, several at a time (from
        another thread too), and the answer holds only those it was not handed: the caller
        works on a refresh of 10,000 groups while it is still being read. A part whose taker
        raised comes again with the answer: taking a group's read twice must be harmless.
        """
        ...

    async def read_delays(
        self, wanted: Mapping[str, Mapping[str, Sequence[str]]], progress: Progress | None = None
    ) -> dict[str, dict[QueueKey, int] | Exception]:
        """`consume_delays` for many groups: group -> topics by broker; `progress` as for
        `read_groups`."""
        ...

    async def consume_delays(
        self, group: str, topics_by_broker: Mapping[str, Sequence[str]]
    ) -> dict[QueueKey, int]:
        """Per queue: ms since the first unconsumed message was stored (0 when caught up)."""
        ...

    async def dlq_queues(self, group: str) -> list[QueueStats]:
        """The group's %DLQ% queues; empty when it has none."""
        ...

    async def assignments(
        self, group: str, client_ids: Sequence[str]
    ) -> dict[QueueKey, tuple[str, ...]]:
        """Which online client holds each queue (several for a broadcasting group)."""
        ...

    async def boundary_messages(self, wanted: Sequence[BoundaryRequest]) -> list[Boundary]:
        """The messages at each queue's reset (console.domain.boundary_messages), in the order
        asked: the first consumed after it and, for a skip, the last skipped. One that cannot be
        read carries a note saying why; this never fails for a broker."""
        ...


class ClusterSource(ClusterOperations, Protocol):
    def close(self) -> None: ...


SourceFactory = Callable[[ClusterConfig], ClusterSource]
Progress = Callable[[int, int], None]
#: Reads handed over as they complete (see `ClusterOperations.read_groups`).
Parts = Callable[[Mapping[str, GroupOffsets | Exception]], None]


@dataclass(frozen=True, slots=True)
class Operation:
    """One of the `ClusterOperations`, as the process boundary sees it."""

    name: str
    signature: inspect.Signature
    doc: str | None

    @property
    def reports_progress(self) -> bool:
        return "progress" in self.signature.parameters

    @property
    def hands_parts(self) -> bool:
        """Whether its answer may come in parts before the rest (a `parts` parameter)."""
        return "parts" in self.signature.parameters


def operations_of(protocol: type) -> dict[str, Operation]:
    """The coroutine methods `protocol` declares, in the order it declares them."""
    return {
        name: Operation(name, inspect.signature(fn), inspect.getdoc(fn))
        for name, fn in vars(protocol).items()
        if inspect.iscoroutinefunction(fn)
    }


OPERATIONS: Mapping[str, Operation] = operations_of(ClusterOperations)
