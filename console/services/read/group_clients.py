"""Who consumes a group and how: its clients (on the brokers, and through the proxies), what
kind of consumption that is (push, pull, POP; remoting or gRPC), the clients a broker lists on
several connections, and a POP group's messages popped and not yet acked.

RocketMQ 5 can fool a reader that only asks the brokers:

- a gRPC client (apache/rocketmq-clients) talks to a proxy, never to a broker: the brokers list
  no connection for its group, so it reads as OFFLINE; the proxy lists it
  (GET_CONSUMER_CONNECTION_LIST on its remoting port);
- under POP the broker's committed offset moves when messages are popped, before they are
  acked, so "max - committed" leaves out what is popped and not acked. A remoting POP client
  reports those in its running info (`mqPopTable`, waitAckCount per broker and topic); a gRPC
  client cannot be asked (the proxy does not serve GET_CONSUMER_RUNNING_INFO, and the brokers
  do not know the client), so for it that part of the lag is unknown, never 0;
- a remoting client in POP mode heartbeats as CONSUME_PASSIVELY like any push consumer: the
  broker's message request modes (set by `mqadmin setConsumeMode`) say the group pops.
"""

from __future__ import annotations

import asyncio
import functools
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from console.domain.gaps import Gap, Part, Why, gap
from console.domain.offsets import (
    CONSUME_TYPES,
    Client,
    Consumption,
    Ghost,
    Kind,
    PopInFlight,
)
from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import RocketMQError
from console.rocketmq.models import ConsumerConnection
from console.rocketmq.running_info import ConsumerRunningInfo
from console.rocketmq.running_info import consumer_running_info as ask_running_info

#: The broadcasting group every 5.x proxy in cluster mode joins on the brokers (its
#: heartbeat syncer, `heartbeatSyncerTopicName` in rmq-proxy.json): its clients are the proxies.
PROXY_GROUP = "CID_DefaultHeartBeatSyncerTopic"
#: Where a POP group's in-flight count comes from when its remoting clients report it.
RUNNING_INFO = "clients' running info (waitAckCount)"
POP_MODE = "POP"
#: Why a gRPC group's popped-but-unacked messages are unknown.
GRPC_IN_FLIGHT = (
    "messages its gRPC clients popped through a proxy and have not acked are not counted: "
    "the proxy does not pass on running-info requests (307) and the brokers keep no count "
    "they answer; the lag shown is only what was not popped yet"
)


T = TypeVar("T")


class Gate(Protocol):
    """Sends a request to an address when the read allows (ReadBatch.ask bounds how many are
    in flight to one broker)."""

    def __call__(self, addr: str, request: Callable[[], Awaitable[T]], /) -> Awaitable[T]: ...


async def _direct(addr: str, request: Callable[[], Awaitable[T]]) -> T:
    return await request()


@dataclass(frozen=True, slots=True)
class BrokersAnswered:
    """What the brokers said of a group's clients: each answer, and a gap for each broker that
    did not answer where none listed a client."""

    answers: Mapping[str, ConsumerConnection]
    gaps: tuple[Gap, ...]


@dataclass(frozen=True, slots=True)
class ClientsRead:
    clients: tuple[Client, ...]
    message_model: str | None
    consume_type: str | None
    consumption: Consumption
    ghosts: tuple[Ghost, ...]
    gaps: tuple[Gap, ...]
    #: Whether anything answered who is connected (False: the clients are unknown).
    answered: bool
    #: The brokers' part of it: a read of the proxies found afterwards takes it as it is.
    brokers: BrokersAnswered = BrokersAnswered({}, ())

    def popping(self) -> ClientsRead:
        """The same clients, known to pop (their running info said what they hold)."""
        c = self.consumption
        kinds = tuple(k for k in Kind if k is Kind.POP or (k in c.kinds and k is not Kind.PUSH))
        return replace(self, consumption=Consumption(kinds, c.remoting, c.grpc))

    def lite(self) -> ClientsRead:
        """The same clients, of a lite group: whatever the proxy calls them (it lists a
        LitePushConsumer as CONSUME_POP), the broker commits as they ack, in order."""
        c = self.consumption
        return replace(self, consumption=Consumption((Kind.LITE,), c.remoting, c.grpc))


async def read_clients(
    admin: AdminClient,
    group: str,
    brokers: Mapping[str, str],
    proxies: Sequence[str],
    *,
    every_broker: bool,
    pop_topics: bool | None,
    gate: Gate = _direct,
    answered: BrokersAnswered | None = None,
) -> ClientsRead:
    """The group's clients on `brokers` (every one of them with `every_broker`, else the first
    that answers: consumers heartbeat every broker) and on each proxy. `pop_topics`: a broker's
    request modes say the group pops some of its topics (None: a broker could not say).
    `answered`: what the brokers said already (a read that found the proxies after the brokers
    listed no client asks only the proxies: a fleet's groups are mostly such)."""
    if answered is None:
        answered = await ask_brokers(admin, group, brokers, every_broker=every_broker, gate=gate)
    answers = answered.answers
    gaps = list(answered.gaps)

    proxied: dict[str, ConsumerConnection] = {}
    results = (
        await asyncio.gather(
            *(_connections(admin, gate, p, group) for p in proxies), return_exceptions=True
        )
        if proxies
        else []
    )
    for proxy, r in zip(proxies, results, strict=True):
        if isinstance(r, ConsumerConnection):
            proxied[proxy] = r
        elif isinstance(r, RocketMQError):
            gaps.append(gap(Part.CLIENTS, f"proxy {proxy}", r))
        else:
            raise r

    clients: dict[str, Client] = {}
    for answer in answers.values():
        for c in answer.clients:
            clients.setdefault(
                c.client_id, Client(c.client_id, c.client_addr, c.language, c.version)
            )
    for proxy, answer in proxied.items():
        for c in answer.clients:
            clients.setdefault(
                c.client_id, Client(c.client_id, c.client_addr, c.language, c.version, proxy)
            )
    said = [a for a in (*answers.values(), *proxied.values()) if a.clients]
    first = said[0] if said else next(iter(answers.values()), None)
    kinds: set[Kind] = set()
    for a in answers.values():
        if a.clients and a.consume_type in CONSUME_TYPES:
            kinds.add(CONSUME_TYPES[a.consume_type])
    remoting = any(c.proxy is None for c in clients.values())
    grpc = any(c.proxy is not None for c in clients.values())
    if grpc or (pop_topics and remoting):
        # The proxy pops for every gRPC consumer; a remoting client the broker hands POP to
        # pops whatever it calls itself.
        kinds.discard(Kind.PUSH)
        kinds.add(Kind.POP)
    consumption = Consumption(tuple(k for k in Kind if k in kinds), remoting=remoting, grpc=grpc)
    return ClientsRead(
        clients=tuple(sorted(clients.values(), key=lambda c: (c.proxy or "", c.client_id))),
        message_model=first.message_model if first is not None else None,
        consume_type=first.consume_type if first is not None else None,
        consumption=consumption,
        ghosts=ghosts(answers),
        gaps=tuple(gaps),
        answered=bool(answers) or bool(proxied),
        brokers=answered,
    )


async def ask_brokers(
    admin: AdminClient,
    group: str,
    brokers: Mapping[str, str],
    *,
    every_broker: bool,
    gate: Gate = _direct,
) -> BrokersAnswered:
    """The group's connections on `brokers`: every one of them with `every_broker`, else the
    first that answers."""
    gaps: list[Gap] = []
    answers: dict[str, ConsumerConnection] = {}
    errors: dict[str, RocketMQError] = {}
    if every_broker:
        names = list(brokers)
        results = await asyncio.gather(
            *(_connections(admin, gate, brokers[n], group) for n in names),
            return_exceptions=True,
        )
        for name, r in zip(names, results, strict=True):
            if isinstance(r, ConsumerConnection):
                answers[name] = r
            elif isinstance(r, RocketMQError):
                errors[name] = r
            else:
                raise r
        if not any(a.clients for a in answers.values()):
            # Clients heartbeat only the brokers of their topics: one that did not answer may
            # be the one that lists them.
            gaps.extend(gap(Part.CLIENTS, group, e, broker=n) for n, e in errors.items())
    else:
        for name, addr in brokers.items():
            try:
                answers[name] = await _connections(admin, gate, addr, group)
                break
            except RocketMQError as exc:
                errors[name] = exc
        if not answers and errors:
            name, error = list(errors.items())[-1]
            gaps.append(gap(Part.CLIENTS, group, error, broker=name))

    return BrokersAnswered(answers, tuple(gaps))


def _connections(
    admin: AdminClient, gate: Gate, addr: str, group: str
) -> Awaitable[ConsumerConnection]:
    return gate(addr, lambda: admin.consumer_connections(addr, group))


def ghosts(answers: Mapping[str, ConsumerConnection]) -> tuple[Ghost, ...]:
    """Clients each broker lists on more than one connection."""
    out = []
    for broker, answer in sorted(answers.items()):
        counts = Counter(c.client_id for c in answer.clients)
        out += [Ghost(broker, cid, n) for cid, n in sorted(counts.items()) if n > 1]
    return tuple(out)


async def pop_in_flight(
    admin: AdminClient,
    group: str,
    clients: Sequence[Client],
    through: Sequence[str],
    gate: Gate = _direct,
) -> tuple[tuple[PopInFlight, ...], tuple[Gap, ...]]:
    """A POP group's messages popped and not acked: each remoting client's waitAckCount (its
    running info, asked through the first of `through` that passes it on), summed by broker
    and topic. A client that cannot be asked leaves a gap: its part is unknown. Clients of a
    proxy cannot be asked at all (GRPC_IN_FLIGHT)."""
    gaps: list[Gap] = []
    remoting = [c for c in clients if c.proxy is None]
    answers = await asyncio.gather(
        *(_running_info(admin, gate, group, c.client_id, through) for c in remoting),
        return_exceptions=True,
    )
    counts: Counter[tuple[str, str]] = Counter()
    for client, a in zip(remoting, answers, strict=True):
        if isinstance(a, ConsumerRunningInfo):
            for mq, waiting in a.pop_wait_ack.items():
                counts[(mq.topic, mq.broker_name)] += waiting
        elif isinstance(a, RocketMQError):
            gaps.append(gap(Part.IN_FLIGHT, f"{group} client {client.client_id}", a))
        else:
            raise a
    if any(c.proxy is not None for c in clients):
        gaps.append(Gap(Part.IN_FLIGHT, group, Why.NOT_REPORTED, GRPC_IN_FLIGHT))
    found = tuple(PopInFlight(t, b, n, RUNNING_INFO) for (t, b), n in sorted(counts.items()))
    return found, tuple(gaps)


async def _running_info(
    admin: AdminClient, gate: Gate, group: str, client_id: str, through: Sequence[str]
) -> ConsumerRunningInfo:
    """Asked through one broker, then the next: a broker holding a dead connection for the
    client waits out its time-out."""
    last: RocketMQError = RocketMQError("no broker answers to pass the request on")
    for addr in through:
        try:
            ask = functools.partial(ask_running_info, admin, addr, group, client_id)
            return await gate(addr, ask)
        except RocketMQError as exc:
            last = exc
    raise last


async def proxy_hosts(admin: AdminClient, addr: str) -> tuple[str, ...]:
    """The hosts of the proxies the broker at `addr` lists (clients of PROXY_GROUP); their
    remoting ports are not in the listing (a proxy's connection to a broker is outgoing)."""
    connection = await admin.consumer_connections(addr, PROXY_GROUP)
    return tuple(sorted({c.client_addr.rpartition(":")[0] for c in connection.clients}))


def unasked(hosts: Sequence[str], looked: str = "") -> str:
    """Why a group's clients are unknown when the cluster has proxies nobody asked (`looked`:
    where they were looked for, and why none answered there)."""
    where = f" ({looked}; proxy_port: in the config says where to look)" if looked else ""
    return (
        f"the brokers list {len(hosts)} proxy(ies) (at {', '.join(hosts)}) and none was asked"
        f"{where} (--proxy HOST:PORT, or proxies: in the config): gRPC clients connect only to "
        "a proxy, so who consumes this group, and what it popped and did not ack, is unknown"
    )
