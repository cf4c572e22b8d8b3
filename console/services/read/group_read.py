"""One group's offsets read from the cluster: every queue it has offsets on with their min and
max, who consumes it and how (push, pull, POP, through a proxy), what a POP group popped and did
not ack, a lite group's lag as its brokers count it (lite_read.py), its dead letters, and a `Gap`
for every piece that could not be read (console.domain.gaps). `ClusterReader.group_offsets`
(reader.py) is the way in."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Protocol, TypeVar

from console.domain.gaps import Gap, Part, Why, gap
from console.domain.lite import LiteLag, is_lite_queue
from console.domain.offsets import GroupOffsets, PopInFlight, QueueOffsets
from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import (
    ConnectError,
    ConnectionLost,
    NotFoundError,
    RequestTimeout,
    RocketMQError,
)
from console.rocketmq.models import ConsumeStats, MessageQueue, QueueConsumeStats
from console.rocketmq.topics import is_retry_topic
from console.services.infra.fanout import answers, ask_each
from console.services.read.batch import ReadBatch
from console.services.read.broker_metrics import FORGETS as METRICS_FORGET
from console.services.read.broker_metrics import INFLIGHT as METRICS_INFLIGHT
from console.services.read.broker_metrics import SOURCE as METRICS_SOURCE
from console.services.read.broker_metrics import (
    Inflight,
    MetricsUnavailable,
    in_flight_by_broker,
    pops_on,
)
from console.services.read.group_clients import POP_MODE, pop_in_flight, read_clients, unasked
from console.services.read.lite_read import read_lite
from console.services.read.proxy_finder import ProxySearch
from console.services.read.routes import BrokerRoute, QueuesRead, read_addrs
from console.services.read.slave_checks import check_slave_reads

T = TypeVar("T")

#: MQVersion ordinal of 5.0.0, the first broker whose QUERY_CONSUMER_OFFSET honours
#: setZeroIfNotFound=false (answers 22 QUERY_NOT_FOUND for a queue never committed).
V5_0_0 = 413


class GroupReads(Protocol):
    """What a group's read asks of its reader (a ClusterReader)."""

    @property
    def admin(self) -> AdminClient: ...

    @property
    def proxies(self) -> tuple[str, ...]: ...

    @property
    def metrics(self) -> tuple[str, ...]: ...

    async def routes(self) -> dict[str, BrokerRoute]: ...

    async def fresh_routes(self) -> dict[str, BrokerRoute]: ...

    async def find_proxies(
        self,
        brokers: Mapping[str, str],
        hosts_of: Callable[[str], Awaitable[tuple[str, ...]]] | None = None,
        names: Iterable[str] | None = None,
    ) -> ProxySearch | None: ...

    async def dlq_queues(
        self, group: str, *, brokers: dict[str, str] | None = None, batch: ReadBatch | None = None
    ) -> QueuesRead: ...


async def read_group(
    reader: GroupReads,
    group: str,
    *,
    topics: Sequence[str] | None = None,
    batch: ReadBatch | None = None,
) -> GroupOffsets:
    """Every queue the group has offsets on (its retry topic included), with min/max, and
    a gap for every piece that could not be read (console.domain.gaps).

    Queues where the broker's consume stats say 0 are asked again with
    setZeroIfNotFound=false, so "never committed" is told apart from "committed 0"; a
    queue whose second question fails is unknown, not the broker's 0. "Not found" is said
    only when every broker answered and none knows the group.
    """
    batch = batch or ReadBatch(reader.admin, None, every_broker=True)
    taken_at = int(time.time() * 1000)
    # Copies: a master that is gone gives way to the one elected since, a silent one to its
    # slave.
    routes = dict(batch.routes if batch.routes is not None else await reader.routes())
    brokers = read_addrs(routes)

    def ask(addr: str) -> Awaitable[ConsumeStats]:
        return batch.consume_stats(addr, group)

    stats = await ask_each(brokers, ask)
    await _to_new_masters(
        routes, brokers, stats, ask, lambda: batch.fresh_routes(reader.fresh_routes)
    )
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
            proxies=reader.proxies,
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
        reader.admin,
        group,
        {n: brokers[n] for n in from_slave},
        rows,
        wanted or {q.queue.topic for _, q in rows},
        batch.subscription_groups,
        batch.topic_route,
        batch.ha_status,
        batch.broker_config,
    )
    gaps.extend(slave.gaps)
    lite: LiteLag | None = None
    # A lite group's offsets are on its lite topics' queues, which only some brokers list
    # among its queues (console.domain.lite): its brokers count it instead. Looked for only
    # where it may be one: an ordinary group's read asks nothing more.
    if not rows or any(is_lite_queue(q.queue.topic) for _, q in rows):
        parent = await _lite_parent(group, reachable, batch)
        if parent is not None:
            rows = [(a, q) for a, q in rows if not is_lite_queue(q.queue.topic)]
            lite, uncounted = await read_lite(reader.admin, group, parent, reachable, batch)
            gaps.extend(uncounted)
    if not rows and not unreachable and not slave.group_unknown:
        gaps.extend(await _require_group(reader, group, brokers, batch))

    committed = await _committed(reader, group, rows, batch, gaps)
    mins = (
        await _min_offsets(reader, batch, {(addr, q.queue) for addr, q in rows}, gaps)
        if batch.min_offsets
        else {}
    )
    topics_read = {q.queue.topic for _, q in rows}
    pop_mode = (
        False if lite is not None else await _pops(reader, group, topics_read, reachable, batch)
    )
    clients = await read_clients(
        reader.admin,
        group,
        reachable,
        reader.proxies,
        every_broker=batch.every_broker,
        pop_topics=pop_mode,
        gate=batch.ask,
    )
    proxies = reader.proxies
    if not proxies and not clients.clients and reachable:
        # Nobody named the proxies and no broker lists a client: one the brokers list may.
        search = await reader.find_proxies(reachable, batch.proxies_seen, batch.routes)
        if search is not None and search.found:
            proxies = search.found
            clients = await read_clients(
                reader.admin,
                group,
                reachable,
                proxies,
                every_broker=batch.every_broker,
                pop_topics=pop_mode,
                gate=batch.ask,
                answered=clients.brokers,  # they listed no client: not asked again
            )
        else:
            gaps.extend(await _unasked_proxies(reader, group, reachable, batch, search))
    if lite is not None:
        clients = clients.lite()
    gaps.extend(clients.gaps)
    in_flight: tuple[PopInFlight, ...] = ()
    held = {(q.queue.broker_name, q.queue.topic) for _, q in rows}
    if pop_mode is None and clients.consumption.remoting and not clients.consumption.pop:
        # The brokers could not say whether it pops: its clients can.
        said, _ = await pop_in_flight(
            reader.admin, group, clients.clients, list(reachable.values()), batch.ask
        )
        if said:
            clients = clients.popping()
    if clients.consumption.pop:
        in_flight, lacking = await pop_in_flight(
            reader.admin, group, clients.clients, list(reachable.values()), batch.ask
        )
        if reader.metrics and not clients.consumption.remoting:
            # Only for a group the brokers know no remoting client of: they take it as
            # POP then, and count what it popped (console.services.read.broker_metrics).
            samples, failed = await _scrape_metrics(reader, batch)
            counted, lacking = _metrics_in_flight(group, held, samples, failed)
            in_flight += counted
        gaps.extend(lacking)
    elif reader.metrics and not clients.clients and rows:
        # Nobody is connected, to a broker or a proxy. A gRPC group that stopped left what it
        # popped unacked (invisible until revived), past its committed offsets: the brokers'
        # metrics say so while they still take the group as POP (their POP retry sample).
        samples, failed = await _scrape_metrics(reader, batch)
        if pops_on(samples, group):
            clients = clients.popping()
            in_flight, lacking = _metrics_in_flight(group, held, samples, failed)
            gaps.extend(lacking)
    dlq = await _dlq_messages(reader, batch, group, reachable, gaps)
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
        proxies=proxies,
        lite=lite,
    )


async def _scrape_metrics(
    reader: GroupReads, batch: ReadBatch
) -> tuple[list[Inflight], list[MetricsUnavailable]]:
    """The in-flight samples of every metrics endpoint that answered, and why the others
    did not."""
    scraped = await answers([batch.broker_metrics(u, reader.admin.timeout) for u in reader.metrics])
    samples: list[Inflight] = []
    failed: list[MetricsUnavailable] = []
    for answer in scraped:
        if isinstance(answer, list):
            samples += answer
        elif isinstance(answer, MetricsUnavailable):
            failed.append(answer)
        else:
            raise answer
    return samples, failed


def _metrics_in_flight(
    group: str,
    held: set[tuple[str, str]],
    samples: Sequence[Inflight],
    failed: Sequence[MetricsUnavailable],
) -> tuple[tuple[PopInFlight, ...], tuple[Gap, ...]]:
    """A gRPC group's popped-but-unacked messages on each (broker, topic) of `held` from the
    brokers' metrics (a POP retry topic is counted with its topic). Each broker whose part is
    unknown is a gap naming its topics and why: no endpoint gave its metrics (`failed` says
    why), they list no sample of the group there, or the sample is not a count."""
    wanted: dict[str, list[str]] = {}
    for broker, topic in sorted(held):
        if not is_retry_topic(topic):
            wanted.setdefault(broker, []).append(topic)
    by_broker = in_flight_by_broker(samples, group, {t for ts in wanted.values() for t in ts})
    found: list[PopInFlight] = []
    gaps: list[Gap] = []
    for broker, topics in wanted.items():
        said = by_broker.get(broker)
        if said is None:
            gaps.append(_no_metrics_of(group, broker, failed, sorted(by_broker)))
            continue
        found += [
            PopInFlight(t, broker, said.counted[t], METRICS_SOURCE)
            for t in topics
            if said.counted.get(t)
        ]
        unlisted = [t for t in topics if t in said.unlisted]
        odd = {t: v for t, v in said.not_counts.items() if t in topics}
        if unlisted or odd:
            gaps.append(_unknown_on(group, broker, unlisted, odd))
    return tuple(found), tuple(gaps)


def _no_metrics_of(
    group: str, broker: str, failed: Sequence[MetricsUnavailable], answered: Sequence[str]
) -> Gap:
    """No endpoint gave `broker`'s metrics: those that failed say why; those that answered,
    whose they are."""
    if failed:
        why = "; ".join(str(f) for f in failed)
    elif answered:
        why = f"not among the endpoints given, which are {', '.join(answered)}'s"
    else:
        why = "not among the endpoints given"
    return Gap(
        Part.IN_FLIGHT,
        f"{group} on {broker}",
        Why.TLS if failed and all(f.tls for f in failed) else Why.NOT_REPORTED,
        f"no metrics of {broker} answered ({why}): what its gRPC clients popped there and did "
        "not ack is unknown",
    )


def _unknown_on(group: str, broker: str, unlisted: Sequence[str], odd: Mapping[str, str]) -> Gap:
    """`broker`'s metrics answered, but say no count of `group` on some of its topics."""
    said = [f"on {t} they say {v}, not a count" for t, v in sorted(odd.items())]
    if unlisted:
        topics = ", ".join(unlisted)
        said.insert(0, f"they list no {METRICS_INFLIGHT} of it on {topics} ({METRICS_FORGET})")
    return Gap(
        Part.IN_FLIGHT,
        f"{group} on {broker}",
        Why.NOT_REPORTED,
        f"{broker}'s metrics answered, but {'; '.join(said)}: what its gRPC clients popped "
        "there and did not ack is unknown",
    )


async def _unasked_proxies(
    reader: GroupReads,
    group: str,
    reachable: dict[str, str],
    batch: ReadBatch,
    search: ProxySearch | None,
) -> list[Gap]:
    """A gap when the brokers list proxies and none was given or found (`search`: where they
    were looked for): a group no broker lists a client for may have gRPC clients there, and
    its lag then lacks what they popped."""
    addr = next(iter(reachable.values()))
    try:
        hosts = await batch.proxies_seen(addr)
    except RocketMQError:
        return []  # the broker did not say: the group's clients read say what they can
    if not hosts:
        return []
    looked = search.missed_text() if search is not None else ""
    return [Gap(Part.CLIENTS, f"{group} via proxies", Why.NOT_REPORTED, unasked(hosts, looked))]


async def _pops(
    reader: GroupReads, group: str, topics: set[str], reachable: dict[str, str], batch: ReadBatch
) -> bool | None:
    """Whether a broker hands the group one of `topics` in POP mode (set by `mqadmin
    setConsumeMode`): its remoting clients pop there, whatever their heartbeat says. None
    when a broker could not say: the clients are asked, and answer for themselves (one
    that pops says what it holds)."""
    unknown = False
    for answer in await answers([batch.request_modes(a) for a in reachable.values()]):
        if isinstance(answer, dict):
            if any(answer.get((t, group)) == POP_MODE for t in topics):
                return True
        elif isinstance(answer, RocketMQError):
            unknown = True
        else:
            raise answer
    return None if unknown else False


async def _lite_parent(group: str, brokers: dict[str, str], batch: ReadBatch) -> str | None:
    """The parent topic a lite group is bound to, as the first broker that holds the group
    says (its `lite.bind.topic`); None for any other group, or when no broker said."""
    for answer in await answers([batch.subscription_groups(a) for a in brokers.values()]):
        if isinstance(answer, dict):
            config = answer.get(group)
            if config is not None and config.lite_bind_topic:
                return config.lite_bind_topic
        elif not isinstance(answer, RocketMQError):
            raise answer
    return None


async def _require_group(
    reader: GroupReads, group: str, brokers: dict[str, str], batch: ReadBatch
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
    reader: GroupReads,
    group: str,
    rows: list[tuple[str, QueueConsumeStats]],
    batch: ReadBatch,
    gaps: list[Gap],
) -> dict[MessageQueue, int | None]:
    zero = [(addr, q) for addr, q in rows if q.consumer_offset == 0]
    # Before 5.0 QUERY_CONSUMER_OFFSET ignores setZeroIfNotFound and answers 0 for a queue
    # never committed (while its message 0 is still in memory): only the broker's offset
    # table tells the two apart there.
    legacy = sorted({a for a, _ in zero if reader.admin.server_versions.get(a, V5_0_0) < V5_0_0})
    tables = dict(
        zip(
            legacy,
            await answers([batch.offset_table(a) for a in legacy]),
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
            lambda: reader.admin.query_consumer_offset(addr, group, mq.topic, mq.queue_id),
        )

    queried = await asyncio.gather(
        *(query(addr, q.queue) for addr, q in ask), return_exceptions=True
    )
    for (_, q), a in zip(ask, queried, strict=True):
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
    reader: GroupReads,
    batch: ReadBatch,
    queues: Iterable[tuple[str, MessageQueue]],
    gaps: list[Gap],
) -> dict[MessageQueue, int]:
    pairs = sorted({(addr, mq.topic, mq.broker_name) for addr, mq in queues})
    stats = await answers([batch.topic_stats(addr, topic) for addr, topic, _ in pairs])
    out: dict[MessageQueue, int] = {}
    for (_, topic, broker), a in zip(pairs, stats, strict=True):
        if isinstance(a, dict):
            out.update({mq: s.min_offset for mq, s in a.items()})
        elif isinstance(a, RocketMQError):
            gaps.append(gap(Part.MIN_OFFSETS, f"{topic}/{broker}", a, broker=broker))
        else:
            raise a
    return out


async def _dlq_messages(
    reader: GroupReads, batch: ReadBatch, group: str, reachable: dict[str, str], gaps: list[Gap]
) -> int:
    read = await reader.dlq_queues(group, brokers=reachable, batch=batch)
    gaps.extend(read.gaps)
    return sum(s.max_offset - s.min_offset for s in read.queues)


async def _to_new_masters(
    routes: dict[str, BrokerRoute],
    addrs: dict[str, str],
    answers: dict[str, T | BaseException],
    fn: Callable[[str], Awaitable[T]],
    fresh: Callable[[], Awaitable[dict[str, BrokerRoute]]],
) -> None:
    """A master that is gone (no connection: killed, stopped) may have been replaced since the
    routes were read: a controller elects a replica within a second, which registers as the
    master. The name server is asked again, and where it names another master that one is
    read, as the master; where it names none, the broker's route is its slaves now. `routes`,
    `addrs` and `answers` are updated in place."""
    gone = [
        n
        for n, r in answers.items()
        if isinstance(r, ConnectError | ConnectionLost) and routes[n].master_addr == addrs[n]
    ]
    if not gone:
        return
    try:
        now = await fresh()
    except RocketMQError:
        return  # the name server did not say: the slaves listed before are asked
    moved: dict[str, str] = {}
    for name in gone:
        route = now.get(name)
        if route is None or route.master_addr == addrs[name]:
            continue
        routes[name] = route
        if route.read_addr is not None:
            moved[name] = route.read_addr
    retried = await ask_each(moved, fn)
    for name, answer in retried.items():
        addrs[name], answers[name] = moved[name], answer


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
