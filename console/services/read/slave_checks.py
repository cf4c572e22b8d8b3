"""What a slave's answer is worth, checked before it is believed.

A broker whose master is down is read from its slave (console.services.read.reader). A 5.3.3 slave
copies its master's messages continuously (HA) but its groups, topics and committed offsets only
every 60 s (SlaveSynchronize), and one that joined shortly before its master stopped may have
copied neither. Its answer is then short in ways that read as "caught up":

- queues the topic route has on that broker but the answer leaves out (offsets not synced yet),
  or no trace of the group at all;
- a committed offset beyond the slave's max offset (the offsets were copied, the messages not
  yet): max - committed would be 0, the true lag is unknown.

Each becomes a gap with its reason; the read is partial. So does a check that could not be
made: the slave's group list or a topic's route that could not be read leaves the answer
unchecked (`Why.UNCHECKED`), never believed. A topic the name server says does not exist has no
route to compare with: its queues on the slave are all there is to read (the offsets of a
deleted topic, which the master answers the same), so nothing is missing there. How far the
slave is behind its master is read from the slave itself (GET_BROKER_HA_STATUS) and shown
beside it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from console.domain.gaps import Gap, Part, Why
from console.domain.offsets import SlaveLag
from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import ResponseCode
from console.rocketmq.errors import BrokerError, NotFoundError, RocketMQError
from console.rocketmq.models import (
    HaStatus,
    MessageQueue,
    QueueConsumeStats,
    SubscriptionGroup,
    TopicRoute,
)
from console.rocketmq.topics import is_retry_topic

#: What the reasons say about a 5.3.3 slave's copying.
SYNC_EVERY = "a slave copies its master's groups and offsets every 60 s"
#: And a replica's in controller mode (ReplicasManager's SlaveSynchronize schedule).
CONTROLLER_SYNC_EVERY = "a replica copies them every 10 s"
#: And a 4.9.x DLedger follower's (its SlaveSynchronize schedule); its peers vote with no
#: controller, and only while a majority of them is up.
DLEDGER_SYNC_EVERY = "a follower copies them every 10 s"
DLEDGER_ELECTION = "DLedger mode: its peers elect one within seconds of a majority being up"


K = TypeVar("K")
V = TypeVar("V")
Ask = Callable[[K], Awaitable[V]]


@dataclass(frozen=True, slots=True)
class SlaveCheck:
    gaps: tuple[Gap, ...] = ()
    #: Queues whose committed offset the slave holds beyond its own max: unknown.
    unreplicated: frozenset[MessageQueue] = frozenset()
    lag: tuple[SlaveLag, ...] = ()
    #: Brokers whose slave does not know the group at all.
    group_unknown: tuple[str, ...] = ()


async def check_slave_reads(
    admin: AdminClient,
    group: str,
    slaves: Mapping[str, str],
    rows: Iterable[tuple[str, QueueConsumeStats]],
    topics: Iterable[str],
    groups_of: Ask[str, dict[str, SubscriptionGroup]],
    route_of: Ask[str, TopicRoute] | None = None,
    ha_of: Ask[str, HaStatus] | None = None,
    config_of: Ask[str, dict[str, str]] | None = None,
) -> SlaveCheck:
    """Check the answers of `slaves` (broker name -> the slave's address read instead of its
    master) against the topic routes of `topics` (the group's, as far as known). `groups_of`,
    `route_of`, `ha_of` and `config_of` ask a slave for its groups, the name server for a
    route, a slave for its HA status and its configuration (by default the admin client, each
    time; a batch asks once)."""
    if not slaves:
        return SlaveCheck()
    rows = list(rows)
    gaps: list[Gap] = list(await _elections(config_of or admin.broker_config, slaves))
    unreplicated: set[MessageQueue] = set()
    held = {q.queue for _, q in rows}
    by_addr = {addr: name for name, addr in slaves.items()}
    for addr, q in rows:
        if addr in by_addr and q.consumer_offset > q.broker_offset:
            mq = q.queue
            unreplicated.add(mq)
            gaps.append(
                Gap(
                    Part.QUEUE,
                    f"{mq.topic}/{mq.broker_name}/{mq.queue_id}",
                    Why.NOT_REPLICATED,
                    f"read from slave {addr}: committed {q.consumer_offset} is beyond the "
                    f"{q.broker_offset} messages it holds; its lag is unknown until the slave "
                    "has copied the master's messages",
                )
            )
    unknown: list[str] = []
    known_groups = await asyncio.gather(
        *(groups_of(a) for a in slaves.values()), return_exceptions=True
    )
    for (name, addr), known in zip(slaves.items(), known_groups, strict=True):
        if isinstance(known, BaseException):
            if not isinstance(known, RocketMQError):
                raise known
            # Said of the broker, not the group: one line however many groups were read there.
            gaps.append(
                Gap(
                    Part.BROKER,
                    name,
                    Why.UNCHECKED,
                    f"read from slave {addr}, whose group list could not be read "
                    f"({_said(known)}): whether it has copied the groups read there from its "
                    f"master is unknown ({SYNC_EVERY})",
                )
            )
        elif group not in known:
            unknown.append(name)
            gaps.append(
                Gap(
                    Part.BROKER,
                    name,
                    Why.NOT_SYNCED,
                    f"read from slave {addr}, which has not copied the group from its master "
                    f"yet ({SYNC_EVERY}): {name}'s queues are missing",
                )
            )
    wanted = sorted({t for t in topics if not is_retry_topic(t)})
    route = route_of or admin.topic_route
    routes = await asyncio.gather(*(route(t) for t in wanted), return_exceptions=True)
    for topic, answer in zip(wanted, routes, strict=True):
        if _no_such_topic(answer):
            continue  # no route to compare with (see above): nothing is missing there
        if isinstance(answer, BaseException):
            if not isinstance(answer, RocketMQError):
                raise answer
            gaps.extend(
                Gap(
                    Part.QUEUES,
                    f"{topic}/{name}",
                    Why.UNCHECKED,
                    f"read from slave {addr}; the route of {topic} could not be read "
                    f"({_said(answer)}), so a queue of {topic} the slave holds no offset for "
                    f"({SYNC_EVERY}) would not be seen: its lag may be missing",
                )
                for name, addr in slaves.items()
                if name not in unknown
            )
            continue
        for data in answer.queues:
            name = data.broker_name
            if name not in slaves or name in unknown:
                continue
            for queue_id in range(data.read_queue_nums):
                if MessageQueue(topic, name, queue_id) not in held:
                    gaps.append(
                        Gap(
                            Part.QUEUE,
                            f"{topic}/{name}/{queue_id}",
                            Why.NOT_SYNCED,
                            f"read from slave {slaves[name]}, which holds no committed offset "
                            f"for it ({SYNC_EVERY}): its lag is unknown",
                        )
                    )
    lags = await slave_lags(ha_of or admin.ha_status, slaves)
    return SlaveCheck(tuple(gaps), frozenset(unreplicated), lags, tuple(unknown))


async def _elections(config_of: Ask[str, dict[str, str]], slaves: Mapping[str, str]) -> list[Gap]:
    """A replica read while its set has no master, in a mode that elects one: a switch under
    way. In controller mode the controller elects one of the replicas within seconds
    (console/services/read/replication.py); in 4.9.x DLedger mode the peers vote among
    themselves, once a majority of them is up. Until then what the replica holds is what it
    copied from the master last, and the answer is marked as such (partial), never taken for
    the master's. A replica that cannot say its mode is left to the other checks."""
    names = list(slaves)
    answers = await asyncio.gather(*(config_of(slaves[n]) for n in names), return_exceptions=True)
    gaps = []
    for name, answer in zip(names, answers, strict=True):
        if isinstance(answer, BaseException):
            if not isinstance(answer, RocketMQError):
                raise answer
            continue
        election = _election_of(answer)
        if election is not None:
            elected_by, copies = election
            gaps.append(
                Gap(
                    Part.BROKER,
                    name,
                    Why.NO_MASTER,
                    f"read from replica {slaves[name]} while {name} has no master ({elected_by}; "
                    f"read again then): its offsets are those it copied from the master last "
                    f"({copies})",
                )
            )
    return gaps


def _election_of(config: Mapping[str, str]) -> tuple[str, str] | None:
    """Who elects a master for a replica with this configuration, and how often it copies its
    master's offsets (None: nobody, a classic slave)."""

    def on(key: str) -> bool:
        return config.get(key, "").strip().lower() == "true"

    if on("enableControllerMode"):
        return "controller mode: the controller elects one within seconds", CONTROLLER_SYNC_EVERY
    if on("enableDLegerCommitLog"):
        return DLEDGER_ELECTION, DLEDGER_SYNC_EVERY
    return None


def _no_such_topic(answer: object) -> bool:
    """The name server's answer that it routes no such topic (TOPIC_NOT_EXIST)."""
    if isinstance(answer, BrokerError):
        return answer.code == ResponseCode.TOPIC_NOT_EXIST
    return isinstance(answer, NotFoundError)


def _said(error: RocketMQError) -> str:
    """The error on one line, as a gap's detail holds it."""
    return " ".join(str(error).split()) or type(error).__name__


async def slave_lags(ha_of: Ask[str, HaStatus], slaves: Mapping[str, str]) -> tuple[SlaveLag, ...]:
    """How far each slave is behind its master, as it says; a slave that cannot say is left
    out (the checks above do not depend on it)."""
    names = list(slaves)
    answers = await asyncio.gather(*(ha_of(slaves[n]) for n in names), return_exceptions=True)
    out = []
    for name, a in zip(names, answers, strict=True):
        if isinstance(a, HaStatus) and not a.master:
            out.append(slave_lag(name, slaves[name], a))
        elif isinstance(a, BaseException) and not isinstance(a, RocketMQError):
            raise a
    return tuple(out)


def slave_lag(name: str, addr: str, status: HaStatus) -> SlaveLag:
    behind = status.master_flush_offset - status.max_offset if status.master_flush_offset else None
    return SlaveLag(name, addr, behind, status.last_read_ms or None)
