"""Reads a cluster the way an operator looks at it: brokers, topics, groups, and a group's offsets.

One `ClusterReader` wraps one admin client and one cluster name. A method that reads brokers
asks them all concurrently, each at its `BrokerRoute.read_addr`: the master, or a slave when the
name server lists no master or the master does not answer (offsets read there are marked, see
`GroupOffsets.from_slave`; writes go to masters only, `brokers()`). What a broker that does not
answer does to the answer is the method's: `broker_health` marks it down, `group_offsets`
returns the others' queues with a `Gap` for every piece it lacks (console.domain.gaps),
`group_list` lists what the other brokers know with a gap for each that did not answer,
`topic_stats` fails.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from console.domain.gaps import Gap, Part, Why, gap, why_of
from console.domain.offsets import GroupOffsets, PopInFlight, QueueOffsets
from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import ResponseCode
from console.rocketmq.errors import (
    BrokerError,
    ConnectError,
    ConnectionLost,
    NotFoundError,
    RequestTimeout,
    RocketMQError,
)
from console.rocketmq.models import (
    MASTER_ID,
    Broker,
    ClusterInfo,
    ConsumeStats,
    HaStatus,
    MessageQueue,
    QueueConsumeStats,
    QueueStats,
    SubscriptionGroup,
    TopicRoute,
)
from console.rocketmq.topics import dlq_topic
from console.services.infra.fanout import LimitPerKey, ask_each
from console.services.read.broker_metrics import SOURCE as METRICS_SOURCE
from console.services.read.broker_metrics import (
    Inflight,
    MetricsUnavailable,
    in_flight_by_broker,
    scrape,
)
from console.services.read.group_clients import (
    POP_MODE,
    pop_in_flight,
    proxy_hosts,
    read_clients,
    unasked,
)
from console.services.read.slave_checks import check_slave_reads

T = TypeVar("T")

#: Requests of one batch in flight to one broker at a time. A request's timeout runs from when
#: it is sent: 6,000 sent at once to two brokers would wait in the brokers' queues until they
#: time out, and the answer would be missing for no fault of the broker.
BROKER_IN_FLIGHT = 32

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
        # A 5.x proxy's own broadcasting group (ProxyConfig.heartbeatSyncerTopicName).
        "CID_DefaultHeartBeatSyncerTopic",
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
        "DefaultHeartBeatSyncerTopic",
    }
)
SYSTEM_TOPIC_PREFIXES = ("%RETRY%", "%DLQ%", "RMQ_SYS_", "rmq_sys_", "%SYS%", "%LMQ%")


#: MQVersion ordinal of 5.0.0, the first broker whose QUERY_CONSUMER_OFFSET honours
#: setZeroIfNotFound=false (answers 22 QUERY_NOT_FOUND for a queue never committed).
V5_0_0 = 413


def is_system_group(name: str) -> bool:
    return name in SYSTEM_GROUPS or name.startswith("CID_RMQ_SYS_")


@dataclass(frozen=True, slots=True)
class BrokerRoute:
    """One broker (a master and its slaves, one broker name) as the name server lists it now.

    `master_addr` is None when no master is registered: it is down (a stopped master
    unregisters; a hung one is dropped after ~10 s without heartbeat) while its slaves may
    still serve reads. RocketMQ's own clients then read from a slave
    (MQClientInstance.findBrokerAddressInSubscribe: the master, else the first slave listed);
    they also commit offsets there, which the console never does.
    """

    name: str
    master_addr: str | None
    slaves: Mapping[int, str]  # broker id (1, 2, ...) -> address

    @classmethod
    def of(cls, broker: Broker) -> BrokerRoute:
        slaves = {i: a for i, a in sorted(broker.addrs.items()) if i != MASTER_ID}
        return cls(broker.name, broker.master_addr, slaves)

    @property
    def read_addr(self) -> str | None:
        """Where to read: the master, else the slave with the lowest id; None: nowhere."""
        if self.master_addr is not None:
            return self.master_addr
        return next(iter(self.slaves.values()), None)

    @property
    def from_slave(self) -> bool:
        """Reads go to a slave because the master is down."""
        return self.master_addr is None and bool(self.slaves)

    @property
    def addrs(self) -> dict[int, str]:
        """Every registered address by broker id, the master (0) first."""
        master = {MASTER_ID: self.master_addr} if self.master_addr is not None else {}
        return {**master, **self.slaves}


def read_addrs(routes: Mapping[str, BrokerRoute]) -> dict[str, str]:
    """Where to read each broker (master, else slave), by broker name; brokers with no address
    at all are left out."""
    return {n: r.read_addr for n, r in routes.items() if r.read_addr is not None}


def read_from_slave(routes: Mapping[str, BrokerRoute]) -> tuple[str, ...]:
    """The brokers whose reads go to a slave, master down."""
    return tuple(n for n, r in routes.items() if r.from_slave)


@dataclass(frozen=True, slots=True)
class BrokerHealth:
    """One broker address (a master, id 0, or a slave): up or down, and what it says about
    itself. A master the name server no longer lists is down with no address."""

    name: str
    addr: str
    up: bool
    version: str | None = None
    put_today: int | None = None  # messages stored today (broker runtime msgPutTotalTodayNow)
    get_today: int | None = None  # messages delivered today (msgGetTotalTodayNow)
    error: str | None = None
    broker_id: int = MASTER_ID
    why: Why | None = None  # why it did not answer (a refused signature is not "down")

    @property
    def role(self) -> str:
        return "MASTER" if self.broker_id == MASTER_ID else "SLAVE"


#: Why a broker listed with slaves only has no master address.
MASTER_NOT_REGISTERED = "master not registered with the name server (down); its slave serves reads"


@dataclass(frozen=True, slots=True)
class QueuesRead:
    """The queues of one topic across the brokers asked, and the brokers that did not answer
    (by name): their queues are missing here, not empty. `gaps` says why, one per broker."""

    queues: tuple[QueueStats, ...]
    unreachable: tuple[str, ...] = ()
    gaps: tuple[Gap, ...] = ()


@dataclass(frozen=True, slots=True)
class GroupList:
    """The groups the brokers know, and a gap for each broker that did not say."""

    groups: dict[str, SubscriptionGroup]
    gaps: tuple[Gap, ...] = ()


class ReadBatch:
    """What the group reads of one batch (a refresh, a snapshot, a listing) share.

    The brokers are asked of the name server once for the batch, not once per group. Five
    hundred groups on one topic need that topic's min offsets once, not five hundred times,
    and a group's DLQ topic is asked for only when the name server lists it. Requests to one
    broker are at most `in_flight` at a time. Good for the length of one batch only: min
    offsets move, topics and brokers come and go.
    """

    def __init__(
        self,
        admin: AdminClient,
        topics: frozenset[str] | None,
        routes: dict[str, BrokerRoute] | None = None,
        *,
        min_offsets: bool = True,
        in_flight: int = BROKER_IN_FLIGHT,
        every_broker: bool = False,
    ) -> None:
        self._admin = admin
        #: Ask every broker who is connected (a client listed twice shows only where it is);
        #: a listing of many groups asks one.
        self.every_broker = every_broker
        #: Every topic of the cluster; None when the name server did not say.
        self.topics = topics
        #: The brokers every read of the batch goes to; None: each read asks the name server.
        self.routes = routes
        #: Whether reads ask for min offsets (a listing of lags does without them).
        self.min_offsets = min_offsets
        self._in_flight = LimitPerKey(in_flight)
        self._stats: dict[tuple[str, str], asyncio.Future[dict[MessageQueue, QueueStats]]] = {}
        self._groups: dict[str, asyncio.Future[dict[str, SubscriptionGroup]]] = {}
        self._tables: dict[str, asyncio.Future[dict[tuple[str, str], dict[int, int]]]] = {}
        self._modes: dict[str, asyncio.Future[dict[tuple[str, str], str]]] = {}
        self._proxies: dict[str, asyncio.Future[tuple[str, ...]]] = {}
        self._metrics: dict[str, asyncio.Future[list[Inflight]]] = {}
        self._routes: dict[str, asyncio.Future[TopicRoute]] = {}
        self._ha: dict[str, asyncio.Future[HaStatus]] = {}

    async def topic_route(self, topic: str) -> TopicRoute:
        """A topic's route from the name server, asked once for the batch (a slave's answers
        are checked against it for every group read there)."""
        future = self._routes.get(topic)
        if future is None:
            future = asyncio.ensure_future(self._admin.topic_route(topic))
            future.add_done_callback(_retrieve)
            self._routes[topic] = future
        return await asyncio.shield(future)

    async def ha_status(self, addr: str) -> HaStatus:
        """A slave's replication status, asked once for the batch."""
        future = self._ha.get(addr)
        if future is None:
            future = asyncio.ensure_future(self.ask(addr, lambda: self._admin.ha_status(addr)))
            future.add_done_callback(_retrieve)
            self._ha[addr] = future
        return await asyncio.shield(future)

    async def broker_metrics(self, url: str, timeout: float) -> list[Inflight]:
        """A broker's metrics endpoint's in-flight samples, scraped once for the batch."""
        future = self._metrics.get(url)
        if future is None:
            future = asyncio.ensure_future(scrape(url, timeout))
            future.add_done_callback(_retrieve)
            self._metrics[url] = future
        return await asyncio.shield(future)

    async def proxies_seen(self, addr: str) -> tuple[str, ...]:
        """The hosts of the proxies the broker at `addr` lists (see group_clients.proxy_hosts),
        asked once."""
        future = self._proxies.get(addr)
        if future is None:
            future = asyncio.ensure_future(self.ask(addr, lambda: proxy_hosts(self._admin, addr)))
            future.add_done_callback(_retrieve)
            self._proxies[addr] = future
        return await asyncio.shield(future)

    async def request_modes(self, addr: str) -> dict[tuple[str, str], str]:
        """The broker's message request modes ((topic, group) -> PULL/POP), asked once."""
        future = self._modes.get(addr)
        if future is None:
            future = asyncio.ensure_future(
                self.ask(addr, lambda: self._admin.message_request_modes(addr))
            )
            future.add_done_callback(_retrieve)
            self._modes[addr] = future
        return await asyncio.shield(future)

    @property
    def brokers(self) -> dict[str, str] | None:
        """Where the batch reads each broker (its master, else a slave); None: not known."""
        return None if self.routes is None else read_addrs(self.routes)

    async def offset_table(self, addr: str) -> dict[tuple[str, str], dict[int, int]]:
        """The broker's committed offsets of every group (GET_ALL_CONSUMER_OFFSET), once."""
        future = self._tables.get(addr)
        if future is None:
            future = asyncio.ensure_future(
                self.ask(addr, lambda: self._admin.consumer_offset_table(addr))
            )
            future.add_done_callback(_retrieve)
            self._tables[addr] = future
        return await asyncio.shield(future)

    def may_exist(self, topic: str) -> bool:
        return self.topics is None or topic in self.topics

    async def ask(self, addr: str, request: Callable[[], Awaitable[T]]) -> T:
        """Send `request()` to `addr` once fewer than `in_flight` of the batch's are there."""
        return await self._in_flight.run(addr, request)

    async def topic_stats(self, addr: str, topic: str) -> dict[MessageQueue, QueueStats]:
        future = self._stats.get((addr, topic))
        if future is None:
            future = asyncio.ensure_future(
                self.ask(addr, lambda: self._admin.topic_stats(addr, topic))
            )
            future.add_done_callback(_retrieve)
            self._stats[(addr, topic)] = future
        # One reader giving up (a superseded refresh) must not cancel the answer for the others.
        return await asyncio.shield(future)

    async def subscription_groups(self, addr: str) -> dict[str, SubscriptionGroup]:
        """The broker's subscription table, asked once for the batch (the whole fleet's
        groups: each group of a scan that has no queues would otherwise ask for it again)."""
        future = self._groups.get(addr)
        if future is None:
            future = asyncio.ensure_future(
                self.ask(addr, lambda: self._admin.subscription_groups(addr))
            )
            future.add_done_callback(_retrieve)
            self._groups[addr] = future
        return await asyncio.shield(future)


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a shared answer's error as seen: it is every waiter's to handle, or nobody's."""
    if not future.cancelled():
        future.exception()


class ClusterReader:
    def __init__(
        self,
        admin: AdminClient,
        cluster: str | None = None,
        proxies: Sequence[str] = (),
        metrics: Sequence[str] = (),
    ) -> None:
        self.admin = admin
        self.cluster = cluster
        #: The proxies' remoting addresses: who is connected through them (gRPC clients).
        self.proxies = tuple(proxies)
        #: The brokers' metrics endpoints (Prometheus): what gRPC groups popped and not acked.
        self.metrics = tuple(metrics)

    # ---- brokers ------------------------------------------------------------------------------

    async def cluster_info(self) -> ClusterInfo:
        return await self.admin.cluster_info()

    async def routes(self) -> dict[str, BrokerRoute]:
        """Every broker of this reader's cluster (of all clusters when it has none) by name, as
        the name server lists it now; a broker whose master is down is here with its slaves."""
        info = await self.admin.cluster_info()
        names = info.clusters.get(self.cluster, []) if self.cluster else list(info.brokers)
        if self.cluster and self.cluster not in info.clusters:
            known = ", ".join(sorted(info.clusters)) or "none"
            raise NotFoundError(f"cluster {self.cluster!r} is not registered (known: {known})")
        return {n: BrokerRoute.of(info.brokers[n]) for n in sorted(names) if n in info.brokers}

    async def brokers(self) -> dict[str, str]:
        """Master address by broker name: where offsets are written (never a slave). A broker
        whose master is down is not here; reads use `read_addrs(await self.routes())`."""
        return {n: r.master_addr for n, r in (await self.routes()).items() if r.master_addr}

    async def broker_health(self, brokers: dict[str, str] | None = None) -> list[BrokerHealth]:
        """Each master of `brokers` asked for its runtime info; without `brokers`, every
        address of the cluster (masters and slaves, by broker then id), and a master the name
        server no longer lists as down."""
        if brokers is not None:
            return await self._health({(n, MASTER_ID): a for n, a in brokers.items()})
        routes = await self.routes()
        health = await self._health(
            {(n, i): a for n, r in routes.items() for i, a in r.addrs.items()}
        )
        missing = [
            BrokerHealth(n, "", up=False, error=MASTER_NOT_REGISTERED)
            for n, r in routes.items()
            if r.master_addr is None
        ]
        return sorted([*health, *missing], key=lambda h: (h.name, h.broker_id))

    async def _health(self, addrs: dict[tuple[str, int], str]) -> list[BrokerHealth]:
        keys = list(addrs)
        results = await asyncio.gather(
            *(self.admin.broker_runtime(addrs[k]) for k in keys), return_exceptions=True
        )
        health = []
        for (name, broker_id), r in zip(keys, results, strict=True):
            addr = addrs[(name, broker_id)]
            if isinstance(r, BaseException):
                if not isinstance(r, RocketMQError):
                    raise r
                health.append(
                    BrokerHealth(
                        name, addr, up=False, error=str(r), broker_id=broker_id, why=why_of(r)
                    )
                )
                continue
            health.append(
                BrokerHealth(
                    name,
                    addr,
                    up=True,
                    version=r.get("brokerVersionDesc"),
                    put_today=_int(r.get("msgPutTotalTodayNow")),
                    get_today=_int(r.get("msgGetTotalTodayNow")),
                    broker_id=broker_id,
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
        addrs = read_addrs({b.name: BrokerRoute.of(b) for b in route.brokers})
        return await self._queues_on(addrs, topic)

    async def topic_stats(self, topic: str) -> dict[MessageQueue, QueueStats]:
        """Min/max of every queue of a topic, across the brokers of its route."""
        route = await self.admin.topic_route(topic)
        addrs = read_addrs({b.name: BrokerRoute.of(b) for b in route.brokers})
        results = await ask_each(addrs, lambda a: self.admin.topic_stats(a, topic))
        out: dict[MessageQueue, QueueStats] = {}
        for r in results.values():
            if isinstance(r, BaseException):
                raise r
            out.update(r)
        return dict(sorted(out.items()))

    async def groups(self, *, include_system: bool = False) -> dict[str, SubscriptionGroup]:
        """Consumer groups known to any broker (the union of their subscription tables); fails
        only when no broker answers."""
        brokers = read_addrs(await self.routes())
        results = await ask_each(brokers, self.admin.subscription_groups)
        if results and all(isinstance(r, BaseException) for r in results.values()):
            first = next(iter(results.values()))
            assert isinstance(first, BaseException)
            raise first
        return self._merge_groups(results, include_system).groups

    async def group_list(
        self, *, include_system: bool = False, batch: ReadBatch | None = None
    ) -> GroupList:
        """Consumer groups known to any broker, with a gap for each broker that did not say
        (its groups may be missing from the list); never fails for a broker. With a batch, its
        brokers are asked and what they say serves the batch's reads."""
        if batch is not None and batch.brokers is not None:
            results = await ask_each(batch.brokers, batch.subscription_groups)
        else:
            results = await ask_each(
                read_addrs(await self.routes()), self.admin.subscription_groups
            )
        return self._merge_groups(results, include_system)

    @staticmethod
    def _merge_groups(
        results: dict[str, dict[str, SubscriptionGroup] | BaseException], include_system: bool
    ) -> GroupList:
        merged: dict[str, SubscriptionGroup] = {}
        gaps: list[Gap] = []
        for name, r in results.items():
            if isinstance(r, BaseException):
                if not isinstance(r, RocketMQError):
                    raise r
                gaps.append(gap(Part.BROKER, name, r))
                continue
            merged.update(r)
        kept = {n: g for n, g in sorted(merged.items()) if include_system or not is_system_group(n)}
        return GroupList(kept, tuple(gaps))

    # ---- a group's offsets --------------------------------------------------------------------

    async def batch(
        self, *, min_offsets: bool = True, in_flight: int = BROKER_IN_FLIGHT
    ) -> ReadBatch:
        """A batch for reading many groups at once (see ReadBatch): the brokers are asked here,
        once. When the name server cannot say, the batch has none and each read asks (and
        fails) on its own."""
        routes: dict[str, BrokerRoute] | None
        try:
            routes = await self.routes()
        except RocketMQError:
            routes = None
        try:
            if self.cluster:
                names: frozenset[str] | None = frozenset(
                    await self.admin.topics_by_cluster(self.cluster)
                )
            else:
                names = frozenset(await self.admin.topic_list())
        except RocketMQError:
            names = None  # each group asks for its own DLQ topic then
        return ReadBatch(self.admin, names, routes, min_offsets=min_offsets, in_flight=in_flight)

    async def group_offsets(
        self, group: str, *, topics: Sequence[str] | None = None, batch: ReadBatch | None = None
    ) -> GroupOffsets:
        """Every queue the group has offsets on (its retry topic included), with min/max, and
        a gap for every piece that could not be read (console.domain.gaps).

        Queues where the broker's consume stats say 0 are asked again with
        setZeroIfNotFound=false, so "never committed" is told apart from "committed 0"; a
        queue whose second question fails is unknown, not the broker's 0. "Not found" is said
        only when every broker answered and none knows the group.
        """
        batch = batch or ReadBatch(self.admin, None, every_broker=True)
        taken_at = int(time.time() * 1000)
        routes = batch.routes if batch.routes is not None else await self.routes()
        brokers = read_addrs(routes)  # a copy: a master that is silent gives way to its slave

        def ask(addr: str) -> Awaitable[ConsumeStats]:
            return batch.ask(addr, lambda: self.admin.consume_stats(addr, group))

        stats = await ask_each(brokers, ask)
        silent = await _to_slaves(routes, brokers, stats, ask)
        gaps: list[Gap] = []
        for name, r in stats.items():
            if isinstance(r, BaseException):
                if not isinstance(r, RocketMQError):
                    raise r
                # A refused signature is named as such (gap's why), never as a broker down.
                gaps.append(gap(Part.BROKER, name, r))
        unreachable = tuple(g.name for g in gaps)
        live = {n: r for n, r in stats.items() if isinstance(r, ConsumeStats)}
        if brokers and not live:
            return GroupOffsets(
                group=group,
                taken_at_ms=taken_at,
                queues=(),
                unreachable_brokers=unreachable,
                gaps=tuple(gaps),
                answered=False,
                proxies=self.proxies,
            )
        wanted = set(topics) if topics else None
        rows = [
            (brokers[n], q)
            for n, s in live.items()
            for q in s.queues.values()
            if wanted is None or q.queue.topic in wanted
        ]
        reachable = {n: a for n, a in brokers.items() if n not in unreachable}
        from_slave = tuple(
            n for n in routes if n not in unreachable and (routes[n].from_slave or n in silent)
        )
        # A slave's answer is checked before it is believed (console.services.read.slave_checks).
        slave = await check_slave_reads(
            self.admin,
            group,
            {n: brokers[n] for n in from_slave},
            rows,
            wanted or {q.queue.topic for _, q in rows},
            batch.subscription_groups,
            batch.topic_route,
            batch.ha_status,
        )
        gaps.extend(slave.gaps)
        if not rows and not unreachable and not slave.group_unknown:
            gaps.extend(await self._require_group(group, brokers, batch))

        committed = await self._committed(group, rows, batch, gaps)
        mins = (
            await self._min_offsets(batch, {(addr, q.queue) for addr, q in rows}, gaps)
            if batch.min_offsets
            else {}
        )
        topics_read = {q.queue.topic for _, q in rows}
        pop_mode = await self._pops(group, topics_read, reachable, batch)
        clients = await read_clients(
            self.admin,
            group,
            reachable,
            self.proxies,
            every_broker=batch.every_broker,
            pop_topics=pop_mode,
            gate=batch.ask,
        )
        gaps.extend(clients.gaps)
        if not self.proxies and not clients.clients and reachable:
            gaps.extend(await self._unasked_proxies(group, reachable, batch))
        in_flight: tuple[PopInFlight, ...] = ()
        if pop_mode is None and clients.consumption.remoting and not clients.consumption.pop:
            # The brokers could not say whether it pops: its clients can.
            said, _ = await pop_in_flight(
                self.admin, group, clients.clients, list(reachable.values()), batch.ask
            )
            if said:
                clients = clients.popping()
        if clients.consumption.pop:
            in_flight, lacking = await pop_in_flight(
                self.admin, group, clients.clients, list(reachable.values()), batch.ask
            )
            if self.metrics and not clients.consumption.remoting:
                # Only for a group the brokers know no remoting client of: they take it as
                # POP then, and count what it popped (console.services.read.broker_metrics).
                brokers_of = sorted({q.queue.broker_name for _, q in rows})
                counted, lacking = await self._metrics_in_flight(
                    group, topics_read, brokers_of, batch
                )
                in_flight += counted
            gaps.extend(lacking)
        dlq = await self._dlq_messages(batch, group, reachable, gaps)
        queues = tuple(
            QueueOffsets(
                topic=q.queue.topic,
                broker=q.queue.broker_name,
                queue_id=q.queue.queue_id,
                min_offset=mins.get(q.queue),
                max_offset=q.broker_offset,
                committed=None
                if q.queue in slave.unreplicated
                else committed[q.queue]
                if q.queue in committed
                else q.consumer_offset,
                # A POP group's pull offset says nothing (its committed offset is where it
                # popped): what is in flight is counted per broker, not per queue.
                pull_offset=None if clients.consumption.pop else q.pull_offset,
                last_timestamp=q.last_timestamp,
            )
            for _, q in rows
        )
        return GroupOffsets(
            group=group,
            taken_at_ms=taken_at,
            queues=tuple(sorted(queues, key=lambda q: q.key)),
            clients=clients.clients,
            message_model=clients.message_model,
            consume_type=clients.consume_type,
            consume_tps=sum(s.consume_tps for s in live.values()),
            dlq_messages=dlq,
            unreachable_brokers=unreachable,
            gaps=tuple(gaps),
            from_slave=from_slave,
            consumption=clients.consumption,
            pop_in_flight=in_flight,
            ghosts=clients.ghosts,
            slave_lag=slave.lag,
            proxies=self.proxies,
        )

    async def _metrics_in_flight(
        self, group: str, topics: set[str], brokers: Sequence[str], batch: ReadBatch
    ) -> tuple[tuple[PopInFlight, ...], tuple[Gap, ...]]:
        """A gRPC group's popped-but-unacked messages on each of `brokers` from the brokers'
        metrics; a broker whose metrics no endpoint gave is a gap (its part is unknown)."""
        answers = await asyncio.gather(
            *(batch.broker_metrics(u, self.admin.timeout) for u in self.metrics),
            return_exceptions=True,
        )
        samples: list[Inflight] = []
        failed: list[str] = []
        for answer in answers:
            if isinstance(answer, list):
                samples += answer
            elif isinstance(answer, MetricsUnavailable):
                failed.append(str(answer))
            else:
                raise answer
        by_broker = in_flight_by_broker(samples, group, topics)
        found = tuple(
            PopInFlight(t, b, n, METRICS_SOURCE)
            for b in brokers
            for t, n in sorted(by_broker.get(b, {}).items())
            if n
        )
        unknown = [b for b in brokers if b not in by_broker]
        gaps = tuple(
            Gap(
                Part.IN_FLIGHT,
                f"{group} on {b}",
                Why.NOT_REPORTED,
                f"no metrics of {b} answered ({'; '.join(failed) or 'not among the endpoints'}): "
                f"what its gRPC clients popped there and did not ack is unknown",
            )
            for b in unknown
        )
        return found, gaps

    async def _unasked_proxies(
        self, group: str, reachable: dict[str, str], batch: ReadBatch
    ) -> list[Gap]:
        """A gap when the brokers list proxies and none was given: a group no broker lists a
        client for may have gRPC clients there, and its lag then lacks what they popped."""
        addr = next(iter(reachable.values()))
        try:
            hosts = await batch.proxies_seen(addr)
        except RocketMQError:
            return []  # the broker did not say: the group's clients read say what they can
        if not hosts:
            return []
        return [Gap(Part.CLIENTS, f"{group} via proxies", Why.NOT_REPORTED, unasked(hosts))]

    async def _pops(
        self, group: str, topics: set[str], reachable: dict[str, str], batch: ReadBatch
    ) -> bool | None:
        """Whether a broker hands the group one of `topics` in POP mode (set by `mqadmin
        setConsumeMode`): its remoting clients pop there, whatever their heartbeat says. None
        when a broker could not say: the clients are asked, and answer for themselves (one
        that pops says what it holds)."""
        answers = await asyncio.gather(
            *(batch.request_modes(a) for a in reachable.values()), return_exceptions=True
        )
        unknown = False
        for answer in answers:
            if isinstance(answer, dict):
                if any(answer.get((t, group)) == POP_MODE for t in topics):
                    return True
            elif isinstance(answer, RocketMQError):
                unknown = True
            else:
                raise answer
        return None if unknown else False

    async def _require_group(
        self, group: str, brokers: dict[str, str], batch: ReadBatch
    ) -> list[Gap]:
        """Nothing when a broker knows the group; a gap for each broker that could not say
        when none of the others knows it; NotFoundError when every broker said it does not."""
        groups = await ask_each(brokers, batch.subscription_groups)
        gaps: list[Gap] = []
        for name, r in groups.items():
            if isinstance(r, dict):
                if group in r:
                    return []
            elif isinstance(r, RocketMQError):
                gaps.append(gap(Part.BROKER, name, r))
            else:
                raise r
        if gaps:
            return gaps
        raise NotFoundError(f"consumer group {group!r} not found on any broker of the cluster")

    async def _committed(
        self,
        group: str,
        rows: list[tuple[str, QueueConsumeStats]],
        batch: ReadBatch,
        gaps: list[Gap],
    ) -> dict[MessageQueue, int | None]:
        zero = [(addr, q) for addr, q in rows if q.consumer_offset == 0]
        # Before 5.0 QUERY_CONSUMER_OFFSET ignores setZeroIfNotFound and answers 0 for a queue
        # never committed (while its message 0 is still in memory): only the broker's offset
        # table tells the two apart there.
        legacy = sorted({a for a, _ in zero if self.admin.server_versions.get(a, V5_0_0) < V5_0_0})
        tables = dict(
            zip(
                legacy,
                await asyncio.gather(
                    *(batch.offset_table(a) for a in legacy), return_exceptions=True
                ),
                strict=True,
            )
        )
        out: dict[MessageQueue, int | None] = {}
        ask: list[tuple[str, QueueConsumeStats]] = []
        for addr, q in zero:
            table = tables.get(addr)
            if isinstance(table, dict):
                out[q.queue] = table.get((q.queue.topic, group), {}).get(q.queue.queue_id)
            else:
                ask.append((addr, q))

        def query(addr: str, mq: MessageQueue) -> Awaitable[int | None]:
            return batch.ask(
                addr,
                lambda: self.admin.query_consumer_offset(addr, group, mq.topic, mq.queue_id),
            )

        answers = await asyncio.gather(
            *(query(addr, q.queue) for addr, q in ask), return_exceptions=True
        )
        for (_, q), a in zip(ask, answers, strict=True):
            mq = q.queue
            if isinstance(a, BaseException):
                if not isinstance(a, RocketMQError):
                    raise a
                # The broker's 0 may mean "never committed": unknown, and said why.
                name = f"{mq.topic}/{mq.broker_name}/{mq.queue_id}"
                gaps.append(gap(Part.QUEUE, name, a, broker=mq.broker_name))
                out[mq] = None
                continue
            out[mq] = a
        return out

    async def _min_offsets(
        self, batch: ReadBatch, queues: Iterable[tuple[str, MessageQueue]], gaps: list[Gap]
    ) -> dict[MessageQueue, int]:
        pairs = sorted({(addr, mq.topic, mq.broker_name) for addr, mq in queues})
        answers = await asyncio.gather(
            *(batch.topic_stats(addr, topic) for addr, topic, _ in pairs),
            return_exceptions=True,
        )
        out: dict[MessageQueue, int] = {}
        for (_, topic, broker), a in zip(pairs, answers, strict=True):
            if isinstance(a, dict):
                out.update({mq: s.min_offset for mq, s in a.items()})
            elif isinstance(a, RocketMQError):
                gaps.append(gap(Part.MIN_OFFSETS, f"{topic}/{broker}", a, broker=broker))
            else:
                raise a
        return out

    async def _dlq_messages(
        self, batch: ReadBatch, group: str, reachable: dict[str, str], gaps: list[Gap]
    ) -> int:
        read = await self.dlq_queues(group, brokers=reachable, batch=batch)
        gaps.extend(read.gaps)
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
            brokers = read_addrs(await self.routes())
        return await self._queues_on(brokers, topic, part=Part.DLQ, batch=batch)

    async def _queues_on(
        self,
        brokers: dict[str, str],
        topic: str,
        *,
        part: Part = Part.BROKER,
        batch: ReadBatch | None = None,
    ) -> QueuesRead:
        """The topic's queues on each named broker; a broker without the topic has none, one
        that does not answer is named unreachable, with a gap of `part` saying why."""

        def stats(addr: str) -> Awaitable[dict[MessageQueue, QueueStats]]:
            if batch is None:
                return self.admin.topic_stats(addr, topic)
            return batch.ask(addr, lambda: self.admin.topic_stats(addr, topic))

        results = await ask_each(brokers, stats)
        queues: list[QueueStats] = []
        unreachable: list[str] = []
        gaps: list[Gap] = []
        for name, r in results.items():
            if isinstance(r, dict):
                queues.extend(r.values())
            elif isinstance(r, BrokerError) and r.code == ResponseCode.TOPIC_NOT_EXIST:
                continue
            elif isinstance(r, RocketMQError):
                unreachable.append(name)
                gaps.append(gap(part, name, r, broker=name))
            else:
                raise r
        return QueuesRead(
            tuple(sorted(queues, key=lambda s: s.queue)), tuple(unreachable), tuple(gaps)
        )


async def _to_slaves(
    routes: Mapping[str, BrokerRoute],
    addrs: dict[str, str],
    answers: dict[str, T | BaseException],
    fn: Callable[[str], Awaitable[T]],
) -> tuple[str, ...]:
    """Ask the slave of each master that did not answer `fn` at all (no connection, no answer
    in time: a hung master stays listed for up to 2 minutes); where it answers, its address and
    answer replace the master's in `addrs` and `answers`. Returns those brokers' names."""
    silent = {
        n: next(iter(routes[n].slaves.values()))
        for n, r in answers.items()
        if isinstance(r, ConnectError | ConnectionLost | RequestTimeout)
        and routes[n].master_addr == addrs[n]
        and routes[n].slaves
    }
    retried = await ask_each(silent, fn)
    for name, answer in retried.items():
        if not isinstance(answer, BaseException):
            addrs[name], answers[name] = silent[name], answer
    return tuple(n for n, a in retried.items() if not isinstance(a, BaseException))


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
