"""Reads a cluster the way an operator looks at it: brokers, topics, groups, and a group's offsets.

One `ClusterReader` wraps one admin client and one cluster name. A method that reads brokers
asks them all concurrently, each at its `BrokerRoute.read_addr`: the master, or a slave when the
name server lists no master or the master does not answer (offsets read there are marked, see
`GroupOffsets.from_slave`; writes go to masters only, `brokers()`). What a broker that does not
answer does to the answer is the method's: `broker_health` marks it down, `group_offsets`
returns the others' queues with a `Gap` for every piece it lacks (console.domain.gaps),
`group_list` lists what the other brokers know with a gap for each that did not answer,
`topic_stats` fails.

Where the brokers are is routes.py's; what a batch of group reads shares, batch.py's; one group's
offsets, group_read.py's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence

from console.domain.gaps import Gap, Part, gap, why_of
from console.domain.offsets import GroupOffsets
from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import ResponseCode
from console.rocketmq.errors import (
    BrokerError,
    NotFoundError,
    RocketMQError,
)
from console.rocketmq.models import (
    MASTER_ID,
    ClusterInfo,
    MessageQueue,
    QueueStats,
    SubscriptionGroup,
)
from console.rocketmq.topics import dlq_topic
from console.services.infra.fanout import ask_each
from console.services.read.batch import BROKER_IN_FLIGHT, ReadBatch
from console.services.read.group_clients import proxy_hosts
from console.services.read.group_read import read_group
from console.services.read.proxy_finder import ProxySearch, find_proxies
from console.services.read.routes import (
    MASTER_NOT_REGISTERED,
    BrokerHealth,
    BrokerRoute,
    GroupList,
    QueuesRead,
    read_addrs,
)

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


#: How long what looking for the proxies found serves the reads after it.
PROXY_SEARCH_TTL = 60.0


def is_system_group(name: str) -> bool:
    return name in SYSTEM_GROUPS or name.startswith("CID_RMQ_SYS_")


class ClusterReader:
    def __init__(
        self,
        admin: AdminClient,
        cluster: str | None = None,
        proxies: Sequence[str] = (),
        metrics: Sequence[str] = (),
        *,
        routes_ttl: float = 0.0,
        proxy_port: int | None = None,
    ) -> None:
        """Built from a cluster's config by console/services/read/open_reader.py (`reader_for`),
        the one place that does in the product."""
        self.admin = admin
        self.cluster = cluster
        #: The proxies' remoting addresses: who is connected through them (gRPC clients).
        self.proxies = tuple(proxies)
        #: The brokers' metrics endpoints (Prometheus): what gRPC groups popped and not acked.
        self.metrics = tuple(metrics)
        #: How long one name-server answer about the brokers serves the reads after it: every
        #: group read starts with the broker list, and a refresh of 500 groups would otherwise
        #: send the name server 500 identical requests (0: asked each time).
        self.routes_ttl = routes_ttl
        self._routes: dict[str, BrokerRoute] | None = None
        self._routes_at = 0.0
        self._routes_lock = asyncio.Lock()
        #: Where the proxies the brokers list are looked for when none is configured (a
        #: proxy's remoting port); None: not looked for.
        self.proxy_port = proxy_port
        self._proxy_search: ProxySearch | None = None
        self._proxy_search_at = 0.0
        self._proxy_lock = asyncio.Lock()
        self._told_proxies: set[str] = set()

    # ---- brokers ------------------------------------------------------------------------------

    async def cluster_info(self) -> ClusterInfo:
        return await self.admin.cluster_info()

    async def routes(self) -> dict[str, BrokerRoute]:
        """Every broker of this reader's cluster (of all clusters when it has none) by name, as
        the name server lists it now (or listed it less than `routes_ttl` ago); a broker whose
        master is down is here with its slaves."""
        if not self.routes_ttl:
            return await self._ask_routes()
        async with self._routes_lock:
            if self._routes is None or time.monotonic() - self._routes_at > self.routes_ttl:
                self._routes = await self._ask_routes()
                self._routes_at = time.monotonic()
            return dict(self._routes)

    async def fresh_routes(self) -> dict[str, BrokerRoute]:
        """Every broker, from the name server now (the reads within `routes_ttl` use this
        answer)."""
        self._routes = None
        return await self.routes()

    async def _ask_routes(self) -> dict[str, BrokerRoute]:
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
        reach = self.admin.reach
        for (name, broker_id), r in zip(keys, results, strict=True):
            addr = addrs[(name, broker_id)]
            mapped = reach.target(addr)
            reached = mapped if mapped != addr else None
            if isinstance(r, BaseException):
                if not isinstance(r, RocketMQError):
                    raise r
                health.append(
                    BrokerHealth(
                        name,
                        addr,
                        up=False,
                        error=str(r),
                        broker_id=broker_id,
                        why=why_of(r),
                        reached=reached,
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
                    reached=reached,
                )
            )
        return health

    # ---- proxies ------------------------------------------------------------------------------

    async def find_proxies(
        self,
        brokers: Mapping[str, str],
        hosts_of: Callable[[str], Awaitable[tuple[str, ...]]] | None = None,
        names: Iterable[str] | None = None,
    ) -> ProxySearch | None:
        """The proxies the brokers list, looked for on `proxy_port` (proxy_finder.py), once a
        minute at most; None when not looked for (proxies configured, no port, or no broker of
        `brokers` said which proxies it lists). `hosts_of`: asks a broker for its proxies'
        hosts (a batch's, asked once for the batch); `names`: the cluster's broker names when
        the caller holds them (a batch's routes), so the name server is not asked again."""
        if self.proxies or self.proxy_port is None or not brokers:
            return None
        async with self._proxy_lock:
            if (
                self._proxy_search is not None
                and time.monotonic() - self._proxy_search_at < PROXY_SEARCH_TTL
            ):
                return self._proxy_search
            ask = hosts_of or (lambda addr: proxy_hosts(self.admin, addr))
            hosts: tuple[str, ...] | None = None
            for addr in brokers.values():
                try:
                    hosts = await ask(addr)
                    break
                except RocketMQError:
                    continue
            if hosts is None:
                return None
            known = set(names) if names is not None else set(await self.routes())
            search = await find_proxies(self.admin, hosts, self.proxy_port, known)
            self._proxy_search, self._proxy_search_at = search, time.monotonic()
            return search

    def found_proxy_lines(self) -> list[str]:
        """Each proxy the last search found, in a line ("proxy HOST:PORT found (...)")."""
        return self._proxy_search.found_lines() if self._proxy_search is not None else []

    def proxy_news(self) -> list[str]:
        """Each proxy found, told once: "proxy HOST:PORT found (...)"."""
        search = self._proxy_search
        if search is None:
            return []
        lines = [
            line
            for addr, line in zip(search.found, search.found_lines(), strict=True)
            if addr not in self._told_proxies
        ]
        self._told_proxies.update(search.found)
        return lines

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
        """Every queue the group has offsets on, with min/max, and a gap for every piece that
        could not be read (console/services/read/group_read.py)."""
        return await read_group(self, group, topics=topics, batch=batch)

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


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
