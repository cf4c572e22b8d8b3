"""The cluster's proxies, found where nobody named them.

The brokers list the proxies' hosts (each RocketMQ 5 proxy in cluster mode joins their
heartbeat group, `group_clients.PROXY_GROUP`), not their remoting ports: a proxy's connection to
a broker is outgoing. Where no proxy is configured (`proxies:`, `--proxy`), each listed host is
asked on the proxy's remoting port (8080 unless the cluster's `proxy_port:` says otherwise) for
the route of the proxies' own topic; one that answers with this cluster's brokers is a proxy of
this cluster, and its clients are read there like a configured one's. A host where none
answers is named with why, and the cluster's proxies stay "not asked" (who consumes a group
with no remoting client is then unknown, never nobody).
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import RocketMQError

#: The topic every proxy in cluster mode creates on the brokers for its heartbeat syncer
#: (ProxyConfig.heartbeatSyncerTopicName): a proxy of this cluster serves its route.
PROXY_TOPIC = "DefaultHeartBeatSyncerTopic"


@dataclass(frozen=True, slots=True)
class ProxySearch:
    """What looking for the proxies the brokers list found."""

    #: The hosts the brokers list as proxies.
    hosts: tuple[str, ...]
    #: The remoting addresses where a proxy of this cluster answered.
    found: tuple[str, ...]
    #: Addresses asked where none did, with why.
    missed: tuple[tuple[str, str], ...]

    def found_lines(self) -> list[str]:
        return [
            f"proxy {addr} found (the brokers list it; no proxies: configured)"
            for addr in self.found
        ]

    def missed_text(self) -> str:
        """Where proxies were looked for and why none answered there, for a gap's line."""
        return "; ".join(f"none answered at {addr}: {why}" for addr, why in self.missed)


NOTHING_LISTED = ProxySearch((), (), ())


async def find_proxies(
    admin: AdminClient, hosts: Sequence[str], port: int, brokers: Collection[str]
) -> ProxySearch:
    """Ask each of `hosts` on `port` whether a proxy of the cluster whose brokers are named
    `brokers` serves there."""
    addrs = [f"{host}:{port}" for host in hosts]
    answers = await asyncio.gather(
        *(_proxy_of(admin, addr, brokers) for addr in addrs), return_exceptions=True
    )
    found: list[str] = []
    missed: list[tuple[str, str]] = []
    for addr, answer in zip(addrs, answers, strict=True):
        if answer is None:
            found.append(addr)
        elif isinstance(answer, str):
            missed.append((addr, answer))
        elif isinstance(answer, RocketMQError):
            missed.append((addr, " ".join(str(answer).split())))
        else:
            raise answer
    return ProxySearch(tuple(hosts), tuple(found), tuple(missed))


async def _proxy_of(admin: AdminClient, addr: str, brokers: Collection[str]) -> str | None:
    """None when a proxy of the cluster answers at `addr`; else why it is not one."""
    route = await admin.topic_route_at(addr, PROXY_TOPIC)
    theirs = {b.name for b in route.brokers}
    if not theirs or not theirs <= set(brokers):
        named = ", ".join(sorted(theirs)) or "none"
        return f"it answers for other brokers ({named})"
    return None
