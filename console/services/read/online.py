"""Who consumes a group right now, and how: the one answer the preview and the apply share.

A plan's reset path, an apply's check, its re-check after the confirmation, a resume and the
writer's wait for consumers all ask here, so a group reads as online or offline the same way
everywhere. A group is online when any broker holding its queues or any proxy names a client
(a client heartbeats only the brokers of its topics, and the brokers list no gRPC client: it
talks to a proxy). Who is online is unknown, never "nobody", when no client was named and a
broker or proxy that might list one did not answer, or when the brokers list proxies that
nobody asked (`proxies:` not configured): gRPC consumers popping through one would otherwise
read as offline, and be written over. A proxy the brokers list and the reader finds
(console/services/read/proxy_finder.py) is asked as a configured one is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from console.rocketmq.errors import RocketMQError
from console.services.infra.fanout import gather_answers
from console.services.read.group_clients import POP_MODE, proxy_hosts, read_clients, unasked
from console.services.read.proxy_finder import ProxySearch
from console.services.read.reader import ClusterReader


@dataclass(frozen=True, slots=True)
class Consumers:
    """Who consumes a group right now, and how."""

    clients: frozenset[str]
    #: It pops (RocketMQ 5): its gRPC clients through a proxy always do, and remoting clients
    #: do where a broker hands them the group's topic in POP mode.
    pop: bool
    #: Why who consumes it is unknown (None: known).
    unknown: str | None

    @property
    def online(self) -> int:
        return len(self.clients)


async def consumers_of(
    reader: ClusterReader,
    group: str,
    brokers: Mapping[str, str],
    topics: Iterable[str] = (),
) -> Consumers:
    """Who consumes `group`, asked of every broker in `brokers` (those holding the group's
    queues: one broker's "not online" says nothing of the others) and of every proxy of the
    reader's cluster. Any one naming a client means online."""
    admin = reader.admin
    wanted = set(topics)
    modes = await gather_answers(admin.message_request_modes, sorted(brokers.values()))
    pops: bool | None = False
    for answer in modes.values():
        if isinstance(answer, RocketMQError):
            pops = None if pops is False else pops
        elif any(answer.get((t, group)) == POP_MODE for t in wanted):
            pops = True
    proxies = reader.proxies
    read = await read_clients(admin, group, brokers, proxies, every_broker=True, pop_topics=pops)
    search = None
    if not proxies and not read.clients and not read.gaps and brokers:
        # Nobody named the proxies and no broker lists a client: one the brokers list may.
        search = await reader.find_proxies(brokers)
        if search is not None and search.found:
            proxies = search.found
            read = await read_clients(
                admin, group, brokers, proxies, every_broker=True, pop_topics=pops
            )
    clients = frozenset(c.client_id for c in read.clients)
    unknown = None
    if not brokers and not proxies:
        unknown = "no broker to ask"
    elif not clients and read.gaps:
        unknown = "; ".join(g.line() for g in read.gaps)
    elif not clients and not proxies:
        unknown = await _unasked_proxies(reader, brokers, search)
    return Consumers(clients, read.consumption.pop, unknown)


async def _unasked_proxies(
    reader: ClusterReader, brokers: Mapping[str, str], search: ProxySearch | None
) -> str | None:
    """Why nobody online is not known when the brokers list proxies nobody asked nor found
    (`search`: where they were looked for); None when they list none."""
    last: RocketMQError | None = None
    for addr in brokers.values():
        try:
            hosts = await proxy_hosts(reader.admin, addr)
        except RocketMQError as exc:
            last = exc
            continue
        looked = search.missed_text() if search is not None else ""
        return unasked(hosts, looked) if hosts else None
    return f"no broker said whether proxies serve the cluster ({last})" if last else None
