"""What the console reads from one cluster, as one async interface.

Screens only ever talk to a `ClusterSource`; `console.remote.proxy` has the real one (the wire
client in the console's network process) and the tests hand in fakes through
`make_app(connect=...)`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from console.config import ClusterConfig
from console.domain.offsets import GroupOffsets, QueueKey
from console.rocketmq.models import QueueStats
from console.services.cluster import BrokerHealth

#: A master broker as the console shows it: up or down, and what it says about itself.
BrokerState = BrokerHealth


class ClusterSource(Protocol):
    async def brokers(self) -> tuple[BrokerState, ...]:
        """Brokers the name server lists now, each asked whether it is alive."""
        ...

    async def topics(self) -> list[str]: ...

    async def topic_queues(self, topic: str) -> list[QueueStats]:
        """Min/max of the topic's queues on every broker that answers."""
        ...

    async def groups(self) -> list[str]: ...

    async def group_offsets(self, group: str) -> GroupOffsets: ...

    async def read_groups(
        self, groups: Sequence[str], progress: Progress | None = None
    ) -> dict[str, GroupOffsets | Exception]:
        """Many groups' offsets in one call, each a value or the error reading it.

        `progress(done, total)` may be called from another thread (it must be thread-safe).
        """
        ...

    async def read_delays(
        self, wanted: Mapping[str, Mapping[str, Sequence[str]]]
    ) -> dict[str, dict[QueueKey, int] | Exception]:
        """`consume_delays` for many groups: group -> topics by broker."""
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

    def close(self) -> None: ...


SourceFactory = Callable[[ClusterConfig], ClusterSource]
Progress = Callable[[int, int], None]
