"""A cluster reader and admin client that answer from tables, for the planning service."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

from console.domain.offsets import Client, GroupOffsets, QueueOffsets
from console.rocketmq.errors import NotFoundError
from console.rocketmq.models import (
    ClientConnection,
    ConsumerConnection,
    ConsumeTimeSpan,
    MessageQueue,
    SubscriptionGroup,
)
from console.services.read.proxy_finder import ProxySearch
from console.services.read.routes import BrokerRoute


@dataclass
class FakeAdmin:
    namesrv: list[str] = field(default_factory=lambda: ["127.0.0.1:9876"])
    versions: dict[str, int] = field(default_factory=dict)
    server_side: dict[str, str] = field(default_factory=dict)
    spans: dict[tuple[str, str, str], dict[MessageQueue, ConsumeTimeSpan]] = field(
        default_factory=dict
    )
    server_versions: dict[str, int] = field(default_factory=dict)
    #: The groups as read (FakeReader's): every broker lists their clients.
    offsets: dict[str, GroupOffsets] = field(default_factory=dict)

    async def consumer_connections(self, addr: str, group: str) -> ConsumerConnection:
        read = self.offsets.get(group)
        listed = [
            ClientConnection(c.client_id, c.addr, c.language, 479)
            for c in (read.clients if read is not None else ())
        ]
        return ConsumerConnection(listed, "CONSUME_PASSIVELY" if listed else None, None, None)

    async def message_request_modes(self, addr: str) -> dict[tuple[str, str], str]:
        return {}

    async def broker_config(self, addr: str) -> dict[str, str]:
        self.server_versions[addr] = self.versions.get(addr, 479)
        flag = self.server_side.get(addr)
        return {} if flag is None else {"useServerSideResetOffset": flag}

    async def consume_time_span(
        self, addr: str, topic: str, group: str
    ) -> dict[MessageQueue, ConsumeTimeSpan]:
        return self.spans.get((addr, topic, group), {})


@dataclass
class FakeReader:
    """Groups as GroupOffsets; `clock` stamps each read so snapshots get distinct times."""

    offsets: dict[str, GroupOffsets]
    brokers_: dict[str, str]
    cluster: str | None = "c1"
    admin: FakeAdmin = field(default_factory=FakeAdmin)
    now_ms: int = 1_700_000_000_000
    #: No proxies: the brokers list every client.
    proxies: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.admin.offsets = self.offsets

    async def brokers(self) -> dict[str, str]:
        return dict(self.brokers_)

    async def find_proxies(
        self, brokers: object, hosts_of: object = None, names: object = None
    ) -> ProxySearch | None:
        return None  # the brokers list no proxy: nothing looked for

    async def groups(self, *, include_system: bool = False) -> dict[str, SubscriptionGroup]:
        return {g: SubscriptionGroup(g, True, True, False, 1, 16) for g in self.offsets}

    async def routes(self) -> dict[str, BrokerRoute]:
        return {n: BrokerRoute(n, a, {}) for n, a in self.brokers_.items()}

    async def batch(self) -> SimpleNamespace:
        # Fixed answers share nothing; a snapshot takes the masters' addresses from the routes.
        return SimpleNamespace(routes=await self.routes(), expect=lambda groups: None)

    async def group_offsets(
        self, group: str, *, topics: Sequence[str] | None = None, batch: object = None
    ) -> GroupOffsets:
        if group not in self.offsets:
            raise NotFoundError(f"consumer group {group!r} not found on any broker")
        return replace(self.offsets[group], taken_at_ms=self.now_ms)


def group(
    name: str,
    queues: Sequence[tuple[str, str, int, int, int, int | None]],
    *,
    clients: int = 0,
    model: str = "CLUSTERING",
    tps: float = 0.0,
) -> GroupOffsets:
    """queues: (topic, broker, queue id, min, max, committed)."""
    return GroupOffsets(
        group=name,
        taken_at_ms=0,
        queues=tuple(
            QueueOffsets(topic=t, broker=b, queue_id=q, min_offset=lo, max_offset=hi, committed=c)
            for t, b, q, lo, hi, c in queues
        ),
        clients=tuple(Client(f"c{i}", "127.0.0.1:1", "JAVA", 479) for i in range(clients)),
        message_model=model,
        consume_tps=tps,
    )
