"""What an apply would write, read again from the cluster right before writing.

The plan was made minutes ago: consumers may have come or gone, offsets moved, the commit log
been cleaned. `check_apply` reads every queue the plan changes (its committed offset now and the
min offset of its topic on its broker), who is online per group, and each broker's reset
ability, and says how each group would be moved now and what stands in the way. It writes
nothing. Every queue must be read: a read that fails is a blocker, never "unchanged".
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from console.domain.drift import Drift, Reclamped, RowKey, find_drift, key_text, reclamp, row_key
from console.domain.plan import (
    PlanRow,
    ResetPath,
    ResetPathKind,
    choose_reset_path,
    client_file_path,
)
from console.domain.spec import StrategyKind
from console.rocketmq.codes import ResponseCode
from console.rocketmq.errors import BrokerError, RocketMQError
from console.services.broker_facts import broker_facts
from console.services.client_offsets import read_store_file
from console.services.cluster import ClusterReader
from console.services.offset_writer import IN_FLIGHT
from console.services.plan_load import LoadedPlan

T = TypeVar("T")

# The timestamp a legacy broker's client push carries for the two ends of a queue (§4.3:
# 0 finds each queue's first offset, -1 its max offset).
_TIMESTAMP_OF = {StrategyKind.EARLIEST: 0, StrategyKind.LATEST: -1}


@dataclass(frozen=True, slots=True)
class QueueWrite:
    row: PlanRow  # target re-clamped to the min offset of now when it had to be
    broker_addr: str  # the master's: writes never go to a slave
    before: int | None  # committed offset read right before writing; None: nothing committed

    @property
    def key(self) -> RowKey:
        return row_key(self.row)

    @property
    def target(self) -> int:
        assert self.row.target is not None  # only changed rows are written
        return self.row.target


@dataclass(frozen=True, slots=True)
class GroupWrites:
    group: str
    path: ResetPath  # how it would be moved now
    planned_path: ResetPath | None  # what the plan said
    consumers_online: int
    #: For the client-push path: the one timestamp every queue of a topic goes to.
    push_timestamp: int | None
    writes: tuple[QueueWrite, ...]


@dataclass(frozen=True, slots=True)
class ApplyCheck:
    plan: LoadedPlan
    groups: tuple[GroupWrites, ...]
    drift: tuple[Drift, ...]
    reclamped: tuple[Reclamped, ...]
    #: Anything but drift that forbids writing (unreadable queues, consumers online on the
    #: offline path, a broadcasting group, an unregistered broker), one line each.
    blockers: tuple[str, ...]

    @property
    def writes(self) -> tuple[QueueWrite, ...]:
        return tuple(w for g in self.groups for w in g.writes)

    def refusals(self, *, accept_drift: bool) -> tuple[str, ...]:
        drift = () if accept_drift else tuple(d.line() for d in self.drift)
        if drift:
            drift = (
                f"{len(self.drift)} queue(s) moved since the plan was made (re-plan, or accept "
                "the drift):",
                *drift,
            )
        return self.blockers + drift


async def check_apply(reader: ClusterReader, plan: LoadedPlan) -> ApplyCheck:
    admin = reader.admin
    changed = plan.changed
    brokers = await reader.brokers()
    blockers: list[str] = []
    missing = sorted({r.broker for r in changed} - set(brokers))
    for name in missing:
        blockers.append(f"broker {name} is not registered with the name server (down?)")
    rows = [r for r in changed if r.broker in brokers]
    gate = asyncio.Semaphore(IN_FLIGHT)
    files = _client_files(plan)

    async def committed(r: PlanRow) -> int | None:
        async with gate:
            addr = brokers[r.broker]
            return await admin.query_consumer_offset(addr, r.group, r.topic, r.queue_id)

    now = await _each([r for r in rows if r.group not in files], row_key, committed)
    for group, path in files.items():
        # A broadcasting client's offsets are in its file: read that again, not the broker.
        found = await asyncio.to_thread(
            read_store_file, path.client_id or "", Path(path.file or "")
        )
        if found.error is not None:
            blockers.append(f"group {group}: cannot read the client's offsets: {found.error}")
            continue
        for r in rows:
            if r.group == group:
                now[row_key(r)] = found.offsets.get((r.topic, r.broker, r.queue_id))
    mins = await _each(
        sorted({(r.broker, r.topic) for r in rows}),
        lambda bt: bt,
        lambda bt: _limited(gate, admin.topic_stats(brokers[bt[0]], bt[1])),
    )
    read_now: dict[RowKey, int | None] = {}
    for key, value in now.items():
        if isinstance(value, RocketMQError):
            blockers.append(f"{key_text(key)}: could not read the committed offset: {value}")
        else:
            read_now[key] = value
    min_now: dict[tuple[str, str, int], int] = {}
    for (broker, topic), stats in mins.items():
        if isinstance(stats, RocketMQError):
            blockers.append(f"{topic} on {broker}: could not read the min offsets: {stats}")
            continue
        for mq, s in stats.items():
            min_now[(topic, broker, mq.queue_id)] = s.min_offset
    facts = await broker_facts(admin, {r.broker: brokers[r.broker] for r in rows})
    readable = [r for r in rows if row_key(r) in read_now]
    rows_now, raised = reclamp(readable, min_now)

    groups: list[GroupWrites] = []
    drift: list[Drift] = []
    for group in sorted({r.group for r in rows_now}):
        mine = [r for r in rows_now if r.group == group]
        clients, online_error = await online_clients(reader, group, brokers)
        online = len(clients)
        if online_error is not None:
            blockers.append(f"group {group}: could not tell who is online: {online_error}")
        push_ts = _push_timestamp(plan)
        models = {r.broker for r in mine}
        if group in files:
            planned = files[group]
            running = None if online_error else planned.client_id in clients
            path = client_file_path(planned.file or "", planned.client_id or "", running=running)
            online = 0  # the other clients keep their own offsets: only this one's file moves
        else:
            path = choose_reset_path(
                [facts[b] for b in sorted(models)],
                consumers_online=online,
                broadcasting=_broadcasting(plan, group),
                per_queue=push_ts is None,
            )
        if path.blocker:
            blockers.append(f"group {group}: {path.kind}: {path.blocker}")
        drift.extend(find_drift(mine, read_now, online=online > 0))
        writes = tuple(QueueWrite(r, brokers[r.broker], read_now[row_key(r)]) for r in mine)
        groups.append(
            GroupWrites(
                group,
                path,
                plan.header.reset_paths.get(group),
                online,
                push_ts if path.kind is ResetPathKind.CLIENT_PUSH else None,
                writes,
            )
        )
    return ApplyCheck(plan, tuple(groups), tuple(drift), raised, tuple(blockers))


def _push_timestamp(plan: LoadedPlan) -> int | None:
    """The timestamp a client push would carry: set only when every queue of each topic goes
    to one time (a time strategy, earliest or latest) over whole topics."""
    spec = plan.header.spec
    if not spec.one_time_per_topic:
        return None
    return _TIMESTAMP_OF.get(spec.strategy.kind, plan.header.timestamp_ms)


def _client_files(plan: LoadedPlan) -> dict[str, ResetPath]:
    """The groups the plan moves by rewriting a client's offsets.json, with that path."""
    paths = plan.header.reset_paths.items()
    return {g: p for g, p in paths if p.kind is ResetPathKind.CLIENT_FILE and p.file}


def _broadcasting(plan: LoadedPlan, group: str) -> bool:
    path = plan.header.reset_paths.get(group)
    return path is not None and path.kind is ResetPathKind.NONE and "broadcasting" in path.reason


async def consumers_online(
    reader: ClusterReader, group: str, brokers: Mapping[str, str]
) -> tuple[int, str | None]:
    """How many consumers of `group` are online; the error when no broker could say."""
    clients, error = await online_clients(reader, group, brokers)
    return len(clients), error


async def online_clients(
    reader: ClusterReader, group: str, brokers: Mapping[str, str]
) -> tuple[frozenset[str], str | None]:
    """The client ids of `group` online, as the first broker that answers says (they
    heartbeat every broker); the error when none could say."""
    error: str | None = "no broker to ask"
    for addr in brokers.values():
        try:
            connection = await reader.admin.consumer_connections(addr, group)
        except BrokerError as exc:
            if exc.code == ResponseCode.CONSUMER_NOT_ONLINE:
                return frozenset(), None
            error = str(exc)
            continue
        except RocketMQError as exc:
            error = str(exc)
            continue
        return frozenset(c.client_id for c in connection.clients), None
    return frozenset(), error


async def _limited(gate: asyncio.Semaphore, request: Awaitable[T]) -> T:
    async with gate:
        return await request


async def _each(
    items: Iterable[Any], key: Callable[[Any], Any], fn: Callable[[Any], Awaitable[T]]
) -> dict[Any, T | RocketMQError]:
    """fn(item) for every item concurrently, by key; wire errors come back as values."""
    listed: Sequence[Any] = list(items)
    answers = await asyncio.gather(*(fn(i) for i in listed), return_exceptions=True)
    out: dict[Any, T | RocketMQError] = {}
    for item, answer in zip(listed, answers, strict=True):
        if isinstance(answer, BaseException) and not isinstance(answer, RocketMQError):
            raise answer
        out[key(item)] = answer
    return out
