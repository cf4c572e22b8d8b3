"""Reads a cluster the way an operator looks at it: brokers, topics, groups, and a group's offsets.

One `ClusterReader` wraps one admin client and one cluster name. A method that reads brokers
asks all masters concurrently, and what a broker that does not answer does to the answer is
the method's: `broker_health` marks it down, `group_offsets` names it among the unreachable
brokers and returns the others' queues, `groups` lists what the other brokers know (and fails
only when none answers), `topic_stats` fails.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from console.domain.gaps import Why, why_of
from console.domain.offsets import Client, GroupOffsets, QueueOffsets
from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import ResponseCode
from console.rocketmq.errors import BrokerError, NotFoundError, RocketMQError
from console.rocketmq.models import (
    ClusterInfo,
    ConsumerConnection,
    ConsumeStats,
    MessageQueue,
    QueueConsumeStats,
    QueueStats,
    SubscriptionGroup,
)
from console.rocketmq.topics import dlq_topic

T = TypeVar("T")

# Groups every broker creates for itself; never an operator's group.
SYSTEM_GROUPS = frozenset(
    {
        "TOOLS_CONSUMER",
        "FILTERSRV_CONSUMER",
        "SELF_TEST_C_GROUP",
        "CID_ONS-HTTP-PROXY",
        "CID_ONSAPI_PULL",
        "CID_ONSAPI_PERMISSION",
        "CID_ONSAPI_OWNER",
        "CID_RMQ_SYS_TRANS",
    }
)
SYSTEM_TOPICS = frozenset(
    {
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "OFFSET_MOVED_EVENT",
        "SELF_TEST_TOPIC",
        "BenchmarkTest",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "CHECKPOINT_TOPIC",
        "RMQ_SYS_TRACE_TOPIC",
    }
)
SYSTEM_TOPIC_PREFIXES = ("%RETRY%", "%DLQ%", "RMQ_SYS_", "rmq_sys_", "%SYS%", "%LMQ%")


def is_system_group(name: str) -> bool:
    return name in SYSTEM_GROUPS or name.startswith("CID_RMQ_SYS_")


@dataclass(frozen=True, slots=True)
class BrokerHealth:
    """A master broker: up or down, and what it says about itself."""

    name: str
    addr: str
    up: bool
    version: str | None = None
    put_today: int | None = None  # messages stored today (broker runtime msgPutTotalTodayNow)
    get_today: int | None = None  # messages delivered today (msgGetTotalTodayNow)
    error: str | None = None
    why: Why | None = None  # why it did not answer (a refused signature is not "down")


@dataclass(frozen=True, slots=True)
class QueuesRead:
    """The queues of one topic across the brokers asked, and the brokers that did not answer
    (by name): their queues are missing here, not empty."""

    queues: tuple[QueueStats, ...]
    unreachable: tuple[str, ...] = ()


class ReadBatch:
    """What the group reads of one batch (a refresh, a snapshot, a listing) share.

    Five hundred groups on one topic need that topic's min offsets once, not five hundred times,
    and a group's DLQ topic is asked for only when the name server lists it. Good for the length
    of one batch only: min offsets move, topics come and go.
    """

    def __init__(self, admin: AdminClient, topics: frozenset[str] | None) -> None:
        self._admin = admin
        #: Every topic of the cluster; None when the name server did not say.
        self.topics = topics
        self._stats: dict[tuple[str, str], asyncio.Future[dict[MessageQueue, QueueStats]]] = {}

    def may_exist(self, topic: str) -> bool:
        return self.topics is None or topic in self.topics

    async def topic_stats(self, addr: str, topic: str) -> dict[MessageQueue, QueueStats]:
        future = self._stats.get((addr, topic))
        if future is None:
            future = asyncio.ensure_future(self._admin.topic_stats(addr, topic))
            future.add_done_callback(_retrieve)
            self._stats[(addr, topic)] = future
        # One reader giving up (a superseded refresh) must not cancel the answer for the others.
        return await asyncio.shield(future)


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a shared answer's error as seen: it is every waiter's to handle, or nobody's."""
    if not future.cancelled():
        future.exception()


class ClusterReader:
    def __init__(self, admin: AdminClient, cluster: str | None = None) -> None:
        self.admin = admin
        self.cluster = cluster

    # ---- brokers ------------------------------------------------------------------------------

    async def cluster_info(self) -> ClusterInfo:
        return await self.admin.cluster_info()

    async def brokers(self) -> dict[str, str]:
        """Master address by broker name, limited to this reader's cluster when it has one."""
        info = await self.admin.cluster_info()
        names = info.clusters.get(self.cluster, []) if self.cluster else list(info.brokers)
        if self.cluster and self.cluster not in info.clusters:
            known = ", ".join(sorted(info.clusters)) or "none"
            raise NotFoundError(f"cluster {self.cluster!r} is not registered (known: {known})")
        out: dict[str, str] = {}
        for name in sorted(names):
            broker = info.brokers.get(name)
            if broker and broker.master_addr:
                out[name] = broker.master_addr
        return out

    async def broker_health(self, brokers: dict[str, str] | None = None) -> list[BrokerHealth]:
        """Each master (of `brokers`, else of the cluster) asked for its runtime info."""
        if brokers is None:
            brokers = await self.brokers()
        results = await _each(brokers, self.admin.broker_runtime)
        health = []
        for name, addr in brokers.items():
            r = results[name]
            if isinstance(r, BaseException):
                if not isinstance(r, RocketMQError):
                    raise r
                health.append(BrokerHealth(name, addr, up=False, error=str(r), why=why_of(r)))
                continue
            health.append(
                BrokerHealth(
                    name,
                    addr,
                    up=True,
                    version=r.get("brokerVersionDesc"),
                    put_today=_int(r.get("msgPutTotalTodayNow")),
                    get_today=_int(r.get("msgGetTotalTodayNow")),
                )
            )
        return health

    # ---- topics and groups --------------------------------------------------------------------

    async def topics(self, *, include_system: bool = False) -> list[str]:
        if self.cluster:
            names = await self.admin.topics_by_cluster(self.cluster)
        else:
            names = await self.admin.topic_list()
        info = await self.admin.cluster_info()
        # Brokers register their cluster and broker names (and <cluster>_REPLY_TOPIC) as topics.
        infrastructure = set(info.clusters) | set(info.brokers)
        infrastructure |= {f"{c}_REPLY_TOPIC" for c in info.clusters}
        return [
            t
            for t in names
            if include_system
            or not (
                t in SYSTEM_TOPICS or t in infrastructure or t.startswith(SYSTEM_TOPIC_PREFIXES)
            )
        ]

    async def topic_queues(self, topic: str) -> QueuesRead:
        """Min/max of the topic's queues on every broker of its route that answers."""
        route = await self.admin.topic_route(topic)
        addrs = {b.name: b.master_addr for b in route.brokers if b.master_addr}
        return await self._queues_on(addrs, topic)

    async def topic_stats(self, topic: str) -> dict[MessageQueue, QueueStats]:
        """Min/max of every queue of a topic, across the brokers of its route."""
        route = await self.admin.topic_route(topic)
        addrs = {b.name: b.master_addr for b in route.brokers if b.master_addr}
        results = await _each(addrs, lambda a: self.admin.topic_stats(a, topic))
        out: dict[MessageQueue, QueueStats] = {}
        for r in results.values():
            if isinstance(r, BaseException):
                raise r
            out.update(r)
        return dict(sorted(out.items()))

    async def groups(self, *, include_system: bool = False) -> dict[str, SubscriptionGroup]:
        """Consumer groups known to any broker (the union of their subscription tables)."""
        brokers = await self.brokers()
        results = await _each(brokers, self.admin.subscription_groups)
        merged: dict[str, SubscriptionGroup] = {}
        for r in results.values():
            if isinstance(r, BaseException):
                continue
            merged.update(r)
        if not merged and results and all(isinstance(r, BaseException) for r in results.values()):
            first = next(iter(results.values()))
            assert isinstance(first, BaseException)
            raise first
        return {n: g for n, g in sorted(merged.items()) if include_system or not is_system_group(n)}

    # ---- a group's offsets --------------------------------------------------------------------

    async def batch(self) -> ReadBatch:
        """A batch for reading many groups at once (see ReadBatch)."""
        try:
            if self.cluster:
                names = await self.admin.topics_by_cluster(self.cluster)
            else:
                names = await self.admin.topic_list()
        except RocketMQError:
            return ReadBatch(self.admin, None)  # each group asks for its own DLQ topic then
        return ReadBatch(self.admin, frozenset(names))

    async def group_offsets(
        self, group: str, *, topics: Sequence[str] | None = None, batch: ReadBatch | None = None
    ) -> GroupOffsets:
        """Every queue the group has offsets on (its retry topic included), with min/max.

        Queues where the broker's consume stats say 0 are asked again with
        setZeroIfNotFound=false, so "never committed" is told apart from "committed 0"; a
        queue whose second question fails keeps the broker's 0.
        """
        batch = batch or ReadBatch(self.admin, None)
        taken_at = int(time.time() * 1000)
        brokers = await self.brokers()
        stats = await _each(brokers, lambda a: self.admin.consume_stats(a, group))
        unreachable = tuple(n for n, r in stats.items() if isinstance(r, RocketMQError))
        for r in stats.values():
            if isinstance(r, BaseException) and not isinstance(r, RocketMQError):
                raise r
            # A broker that refuses our credentials is not down: say so, rather than answer
            # with its queues missing.
            if isinstance(r, BrokerError) and r.code == ResponseCode.NO_PERMISSION:
                raise r
        live = {n: r for n, r in stats.items() if isinstance(r, ConsumeStats)}
        wanted = set(topics) if topics else None
        rows = [
            (brokers[n], q)
            for n, s in live.items()
            for q in s.queues.values()
            if wanted is None or q.queue.topic in wanted
        ]
        if not rows and not unreachable:
            await self._require_group(group, brokers)

        committed = await self._committed(group, rows)
        mins = await self._min_offsets(batch, {(addr, q.queue.topic) for addr, q in rows})
        connection = await self._connection(group, brokers, unreachable)
        queues = tuple(
            QueueOffsets(
                topic=q.queue.topic,
                broker=q.queue.broker_name,
                queue_id=q.queue.queue_id,
                min_offset=mins.get(q.queue, 0),
                max_offset=q.broker_offset,
                committed=committed.get(q.queue, q.consumer_offset),
                pull_offset=q.pull_offset,
                last_timestamp=q.last_timestamp,
            )
            for _, q in rows
        )
        clients: tuple[Client, ...] = ()
        model = consume_type = None
        if connection is not None:
            clients = tuple(
                Client(c.client_id, c.client_addr, c.language, c.version)
                for c in connection.clients
            )
            model, consume_type = connection.message_model, connection.consume_type
        return GroupOffsets(
            group=group,
            taken_at_ms=taken_at,
            queues=tuple(sorted(queues, key=lambda q: q.key)),
            clients=clients,
            message_model=model,
            consume_type=consume_type,
            consume_tps=sum(s.consume_tps for s in live.values()),
            dlq_messages=await self._dlq_messages(batch, group, brokers, unreachable),
            unreachable_brokers=unreachable,
        )

    async def _require_group(self, group: str, brokers: dict[str, str]) -> None:
        groups = await _each(brokers, self.admin.subscription_groups)
        for r in groups.values():
            if isinstance(r, dict) and group in r:
                return
        raise NotFoundError(f"consumer group {group!r} not found on any broker of the cluster")

    async def _committed(
        self, group: str, rows: list[tuple[str, QueueConsumeStats]]
    ) -> dict[MessageQueue, int | None]:
        zero = [(addr, q) for addr, q in rows if q.consumer_offset == 0]
        answers = await asyncio.gather(
            *(
                self.admin.query_consumer_offset(addr, group, q.queue.topic, q.queue.queue_id)
                for addr, q in zero
            ),
            return_exceptions=True,
        )
        out: dict[MessageQueue, int | None] = {}
        for (_, q), a in zip(zero, answers, strict=True):
            if isinstance(a, BaseException):
                continue  # keep the broker's 0: it answered the consume stats a moment ago
            out[q.queue] = a
        return out

    async def _min_offsets(
        self, batch: ReadBatch, pairs: Iterable[tuple[str, str]]
    ) -> dict[MessageQueue, int]:
        pairs = sorted(pairs)
        answers = await asyncio.gather(
            *(batch.topic_stats(addr, topic) for addr, topic in pairs),
            return_exceptions=True,
        )
        out: dict[MessageQueue, int] = {}
        for a in answers:
            if isinstance(a, dict):
                out.update({mq: s.min_offset for mq, s in a.items()})
        return out

    async def _connection(
        self, group: str, brokers: dict[str, str], unreachable: tuple[str, ...]
    ) -> ConsumerConnection | None:
        # Consumers heartbeat every broker, so any reachable one knows who is online.
        for name, addr in brokers.items():
            if name in unreachable:
                continue
            try:
                return await self.admin.consumer_connections(addr, group)
            except RocketMQError:
                continue
        return None

    async def _dlq_messages(
        self, batch: ReadBatch, group: str, brokers: dict[str, str], unreachable: tuple[str, ...]
    ) -> int:
        reachable = {n: a for n, a in brokers.items() if n not in unreachable}
        read = await self.dlq_queues(group, brokers=reachable, batch=batch)
        return sum(s.max_offset - s.min_offset for s in read.queues)

    async def dlq_queues(
        self, group: str, *, brokers: dict[str, str] | None = None, batch: ReadBatch | None = None
    ) -> QueuesRead:
        """The queues of the group's %DLQ% topic on `brokers` (else every master); none when no
        message of the group went there. A batch that lists the cluster's topics spares asking
        when the name server does not know the topic."""
        topic = dlq_topic(group)
        if batch is not None and not batch.may_exist(topic):
            return QueuesRead(())
        if brokers is None:
            brokers = await self.brokers()
        return await self._queues_on(brokers, topic)

    async def _queues_on(self, brokers: dict[str, str], topic: str) -> QueuesRead:
        """The topic's queues on each named broker; a broker without the topic has none, one
        that does not answer is named unreachable."""
        results = await _each(brokers, lambda a: self.admin.topic_stats(a, topic))
        queues: list[QueueStats] = []
        unreachable: list[str] = []
        for name, r in results.items():
            if isinstance(r, dict):
                queues.extend(r.values())
            elif isinstance(r, BrokerError) and r.code == ResponseCode.TOPIC_NOT_EXIST:
                continue
            elif isinstance(r, RocketMQError):
                unreachable.append(name)
            else:
                raise r
        return QueuesRead(tuple(sorted(queues, key=lambda s: s.queue)), tuple(unreachable))


async def _each(
    targets: dict[str, str], fn: Callable[[str], Awaitable[T]]
) -> dict[str, T | BaseException]:
    """Call fn(addr) for every named address concurrently; exceptions come back as values."""
    names = list(targets)
    answers = await asyncio.gather(*(fn(targets[n]) for n in names), return_exceptions=True)
    return dict(zip(names, answers, strict=True))


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
