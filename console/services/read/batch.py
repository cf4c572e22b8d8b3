"""What the group reads of one batch (a refresh, a snapshot, a listing) ask once and share."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import ConnectError, ConnectionLost, RequestTimeout, RocketMQError
from console.rocketmq.models import (
    ConsumeStats,
    HaStatus,
    MessageQueue,
    QueueStats,
    SubscriptionGroup,
    TopicRoute,
)
from console.services.infra.fanout import LimitPerKey
from console.services.read.broker_metrics import Inflight, scrape
from console.services.read.group_clients import proxy_hosts
from console.services.read.routes import BrokerRoute, read_addrs

T = TypeVar("T")

#: Requests of one batch in flight to one broker at a time. A request's timeout runs from when
#: it is sent: 6,000 sent at once to two brokers would wait in the brokers' queues until they
#: time out, and the answer would be missing for no fault of the broker.
BROKER_IN_FLIGHT = 32
#: Groups a batch reads from which each broker's offset table is worth asking for, to ask each
#: group's consume stats topic by topic (see `ReadBatch.expect`): the table of a 10,000-group
#: broker is ~1 MB, read in ~0.3 s; the walk it spares the broker, ~0.5 ms a group.
TABLE_FROM_GROUPS = 100


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
        #: Ask each group's consume stats per topic, the topics from the broker's offset table
        #: (see `consume_stats`); set by `expect`.
        self.topics_from_tables = False
        self._in_flight = LimitPerKey(in_flight)
        self._stats: dict[tuple[str, str], asyncio.Future[dict[MessageQueue, QueueStats]]] = {}
        self._groups: dict[str, asyncio.Future[dict[str, SubscriptionGroup]]] = {}
        self._tables: dict[str, asyncio.Future[dict[tuple[str, str], dict[int, int]]]] = {}
        self._group_topics: dict[str, asyncio.Future[dict[str, tuple[str, ...]]]] = {}
        self._modes: dict[str, asyncio.Future[dict[tuple[str, str], str]]] = {}
        self._proxies: dict[str, asyncio.Future[tuple[str, ...]]] = {}
        self._metrics: dict[str, asyncio.Future[list[Inflight]]] = {}
        self._routes: dict[str, asyncio.Future[TopicRoute]] = {}
        self._ha: dict[str, asyncio.Future[HaStatus]] = {}
        self._configs: dict[str, asyncio.Future[dict[str, str]]] = {}
        self._fresh: dict[str, asyncio.Future[dict[str, BrokerRoute]]] = {}

    def topic_route(self, topic: str) -> Awaitable[TopicRoute]:
        """A topic's route from the name server, asked once for the batch (a slave's answers
        are checked against it for every group read there)."""
        return _once(self._routes, topic, lambda: self._admin.topic_route(topic))

    def broker_config(self, addr: str) -> Awaitable[dict[str, str]]:
        """A broker's configuration (GET_BROKER_CONFIG: its offset store, whether it runs in
        controller or DLedger mode), asked once for the batch."""
        return _once(
            self._configs, addr, lambda: self.ask(addr, lambda: self._admin.broker_config(addr))
        )

    def ha_status(self, addr: str) -> Awaitable[HaStatus]:
        """A slave's replication status, asked once for the batch."""
        return _once(self._ha, addr, lambda: self.ask(addr, lambda: self._admin.ha_status(addr)))

    def fresh_routes(
        self, ask: Callable[[], Awaitable[dict[str, BrokerRoute]]]
    ) -> Awaitable[dict[str, BrokerRoute]]:
        """The brokers asked of the name server again, once for the batch: a master it named
        no longer answers (killed, and maybe replaced by an elected replica)."""
        return _once(self._fresh, "routes", ask)

    def broker_metrics(self, url: str, timeout: float) -> Awaitable[list[Inflight]]:
        """A broker's metrics endpoint's in-flight samples, scraped once for the batch (an
        `https://` one verified with the cluster's TLS: its `tls.ca`), reached as the cluster's
        addresses are."""
        return _once(
            self._metrics, url, lambda: scrape(url, timeout, self._admin.tls, self._admin.reach)
        )

    def proxies_seen(self, addr: str) -> Awaitable[tuple[str, ...]]:
        """The hosts of the proxies the broker at `addr` lists (see group_clients.proxy_hosts),
        asked once."""
        return _once(
            self._proxies, addr, lambda: self.ask(addr, lambda: proxy_hosts(self._admin, addr))
        )

    def request_modes(self, addr: str) -> Awaitable[dict[tuple[str, str], str]]:
        """The broker's message request modes ((topic, group) -> PULL/POP), asked once."""
        return _once(
            self._modes,
            addr,
            lambda: self.ask(addr, lambda: self._admin.message_request_modes(addr)),
        )

    @property
    def brokers(self) -> dict[str, str] | None:
        """Where the batch reads each broker (its master, else a slave); None: not known."""
        return None if self.routes is None else read_addrs(self.routes)

    def offset_table(self, addr: str) -> Awaitable[dict[tuple[str, str], dict[int, int]]]:
        """The broker's committed offsets of every group (GET_ALL_CONSUMER_OFFSET), once."""
        return _once(
            self._tables,
            addr,
            lambda: self.ask(addr, lambda: self._admin.consumer_offset_table(addr)),
        )

    def expect(self, groups: int) -> None:
        """The batch will read `groups` groups: from TABLE_FROM_GROUPS on, their consume stats
        are asked topic by topic (see `consume_stats`)."""
        self.topics_from_tables = groups >= TABLE_FROM_GROUPS

    async def consume_stats(self, addr: str, group: str) -> ConsumeStats:
        """The group's consume stats (GET_CONSUME_STATS) on the broker at `addr`.

        Asked without a topic, a broker finds the group's topics by walking its whole offset
        table (ConsumerOffsetManager.whichTopicByConsumer, 4.x and 5.x alike): for a batch of
        many groups, a walk of the table for each group, which made a scan of 10,000 groups
        wait seconds on the brokers. With `topics_from_tables`, the table is asked once for the
        batch (GET_ALL_CONSUMER_OFFSET) and each group asked for each topic it holds, as the
        broker would have found them (none asked for a group it holds no offset of: the broker
        answers such a group with no queue). A broker that does not answer for its table fails
        the group's read as its own request would have (a slave may answer instead); one that
        refuses the table has each group asked without a topic."""
        if self.topics_from_tables:
            try:
                topics = (await self.group_topics(addr)).get(group, ())
            except (ConnectError, ConnectionLost, RequestTimeout):
                raise  # silent or gone: asking again would wait as long again, for each group
            except RocketMQError:
                pass  # it refused the table (not the group's stats): the group is asked alone
            else:
                if len(topics) == 1:  # most groups: no gather (two tasks) for one request
                    topic = topics[0]
                    return await self.ask(
                        addr, lambda: self._admin.consume_stats(addr, group, topic)
                    )
                answers = await asyncio.gather(
                    *(
                        self.ask(addr, lambda t=t: self._admin.consume_stats(addr, group, t))  # type: ignore[misc]
                        for t in topics
                    )
                )
                if len(answers) == 1:
                    return answers[0]
                queues = {mq: q for a in answers for mq, q in a.queues.items()}
                return ConsumeStats(
                    queues=dict(sorted(queues.items())),
                    consume_tps=sum(a.consume_tps for a in answers),
                )
        return await self.ask(addr, lambda: self._admin.consume_stats(addr, group))

    def group_topics(self, addr: str) -> Awaitable[dict[str, tuple[str, ...]]]:
        """Group -> the topics the broker at `addr` holds offsets of it on, from its offset
        table (asked once for the batch)."""

        async def index() -> dict[str, tuple[str, ...]]:
            by_group: dict[str, list[str]] = {}
            for topic, group in await self.offset_table(addr):
                by_group.setdefault(group, []).append(topic)
            return {g: tuple(sorted(t)) for g, t in by_group.items()}

        return _once(self._group_topics, addr, index)

    def may_exist(self, topic: str) -> bool:
        return self.topics is None or topic in self.topics

    async def ask(self, addr: str, request: Callable[[], Awaitable[T]]) -> T:
        """Send `request()` to `addr` once fewer than `in_flight` of the batch's are there."""
        return await self._in_flight.run(addr, request)

    def topic_stats(self, addr: str, topic: str) -> Awaitable[dict[MessageQueue, QueueStats]]:
        return _once(
            self._stats,
            (addr, topic),
            lambda: self.ask(addr, lambda: self._admin.topic_stats(addr, topic)),
        )

    def subscription_groups(self, addr: str) -> Awaitable[dict[str, SubscriptionGroup]]:
        """The broker's subscription table, asked once for the batch (the whole fleet's
        groups: each group of a scan that has no queues would otherwise ask for it again)."""
        return _once(
            self._groups,
            addr,
            lambda: self.ask(addr, lambda: self._admin.subscription_groups(addr)),
        )


K = TypeVar("K")


def _once(
    cache: dict[K, asyncio.Future[T]], key: K, ask: Callable[[], Awaitable[T]]
) -> Awaitable[T]:
    """The batch's one answer for `key`, asked on first use. Shielded: one reader giving up (a
    superseded refresh) must not cancel the answer for the others."""
    future = cache.get(key)
    if future is None:
        future = asyncio.ensure_future(ask())
        future.add_done_callback(_retrieve)
        cache[key] = future
    return asyncio.shield(future)


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a shared answer's error as seen: it is every waiter's to handle, or nobody's."""
    if not future.cancelled():
        future.exception()
