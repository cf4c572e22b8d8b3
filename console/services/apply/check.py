"""What an apply would write, read again from the cluster right before writing.

The plan was made minutes ago: consumers may have come or gone, offsets moved, the commit log
been cleaned. `check_apply` reads every queue the apply would move (its committed offset now and
the min offset of its topic on its broker), who is online per group, and each broker's reset
ability, and says how each group would be moved now and what stands in the way. It writes
nothing. Every queue must be read: a read that fails is a blocker, never "unchanged".

"Every queue the apply would move" is more than the queues the plan changes when the write is a
client push: the broker resets every queue of the topic on it, to the offset of one time, so a
queue the plan left alone (already at its target when planned) but consumed since is moved back
too. Those queues are journaled and read back like the rest; a push that would move a queue the
plan does not hold is refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from console.domain.drift import Drift, Reclamped, RowKey, find_drift, key_text, reclamp, row_key
from console.domain.plan import PlanRow
from console.domain.reset_paths import ResetPath, ResetPathKind, choose_reset_path, client_file_path
from console.domain.spec import StrategyKind
from console.rocketmq.errors import RocketMQError
from console.services.apply.offset_writer import IN_FLIGHT
from console.services.infra.fanout import gather_answers
from console.services.plan.load import LoadedPlan
from console.services.read.broker_facts import broker_facts
from console.services.read.client_offsets import read_store_file
from console.services.read.group_clients import POP_MODE, read_clients
from console.services.read.reader import ClusterReader

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")

# The timestamp a legacy broker's client push carries for the two ends of a queue (§4.3:
# 0 finds each queue's first offset, -1 its max offset).
_TIMESTAMP_OF = {StrategyKind.EARLIEST: 0, StrategyKind.LATEST: -1}

NOTHING_TO_APPLY = "the plan changes no queue: nothing to apply"


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
        assert self.row.target is not None  # only rows with a target are written
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
    #: Its consumers pop (RocketMQ 5): what they popped and did not ack comes back anyway.
    pop: bool = False


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

    @property
    def changed(self) -> tuple[QueueWrite, ...]:
        """The writes the plan asked for (a client push moves the rest of a topic too)."""
        return tuple(w for w in self.writes if w.row.changed)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted({g.group for g in self.groups} or {r.group for r in self.plan.rows}))

    @property
    def has_drift(self) -> bool:
        return bool(self.drift)

    def refusals(self, *, accept_drift: bool) -> tuple[str, ...]:
        drift = () if accept_drift else tuple(d.line() for d in self.drift)
        if drift:
            drift = (
                f"{len(self.drift)} queue(s) moved since the plan was made (re-plan, or accept "
                "the drift):",
                *drift,
            )
        return self.blockers + drift

    def seen(self) -> dict[str, object]:
        """What the operator confirms: every queue's target and, for a group nobody consumes,
        its offset before (online groups move on by themselves); each group's path and
        consumers; the drift and what blocks."""
        return seen_of(self.groups, tuple(d.line() for d in self.drift), self.blockers)


def seen_of(
    groups: Iterable[GroupWrites], drift: tuple[str, ...], blockers: tuple[str, ...]
) -> dict[str, object]:
    """The facts of a check an operator confirms, each under a name a refusal can print."""
    facts: dict[str, object] = {}
    for g in groups:
        facts[f"{g.group}: reset path"] = str(g.path.kind)
        facts[f"{g.group}: consumers online"] = g.consumers_online
        for w in g.writes:
            name = key_text(w.key)
            facts[f"{name}: target"] = w.target
            if not g.consumers_online:
                facts[f"{name}: offset"] = w.before
    facts["drift"] = drift
    facts["what blocks"] = blockers
    return facts


async def check_apply(
    reader: ClusterReader, plan: LoadedPlan, proxies: Sequence[str] = ()
) -> ApplyCheck:
    """The plan read against the cluster (`proxies`: where its gRPC clients are listed)."""
    admin = reader.admin
    changed = plan.changed
    brokers = await reader.brokers()
    blockers: list[str] = []
    if not changed:
        blockers.append(NOTHING_TO_APPLY)
    missing = sorted({r.broker for r in changed} - set(brokers))
    for name in missing:
        blockers.append(f"broker {name} is not registered with the name server (down?)")
    rows = [r for r in changed if r.broker in brokers]
    files = _client_files(plan)
    facts = await broker_facts(admin, {r.broker: brokers[r.broker] for r in rows})
    push_ts = _push_timestamp(plan)

    # Who is online and how each group would be moved decide which queues the write moves.
    paths: dict[str, tuple[ResetPath, int, frozenset[str] | None]] = {}
    pops: dict[str, bool] = {}
    for group in sorted({r.group for r in rows}):
        mine = [r for r in rows if r.group == group]
        asked = {r.broker: brokers[r.broker] for r in mine}
        who = await consumers_of(reader, group, asked, proxies, {r.topic for r in mine})
        if who.unknown is not None:
            blockers.append(f"group {group}: could not tell who is online: {who.unknown}")
        pops[group] = who.pop
        if group in files:
            planned = files[group]
            running = None if who.unknown else planned.client_id in who.clients
            path = client_file_path(planned.file or "", planned.client_id or "", running=running)
            # The other clients keep their own offsets: only this one's file moves.
            paths[group] = (path, 0, None if who.unknown else who.clients)
            continue
        path = choose_reset_path(
            [facts[b] for b in sorted(asked)],
            consumers_online=who.online,
            broadcasting=_broadcasting(plan, group),
            per_queue=push_ts is None,
            pop=who.pop,
        )
        paths[group] = (path, who.online, who.clients)
    for group, (path, _, _) in paths.items():
        if path.blocker:
            blockers.append(f"group {group}: {path.kind}: {path.blocker}")

    pushed = {g for g, (p, _, _) in paths.items() if p.kind is ResetPathKind.CLIENT_PUSH}
    moved = rows + _also_pushed(plan, rows, pushed)
    stats = await gather_answers(
        lambda bt: admin.topic_stats(brokers[bt[0]], bt[1]),
        sorted({(r.broker, r.topic) for r in moved}),
        limit=IN_FLIGHT,
    )
    min_now: dict[tuple[str, str, int], int] = {}
    queue_ids: dict[tuple[str, str], set[int]] = {}
    for (broker, topic), answer in stats.items():
        if isinstance(answer, RocketMQError):
            blockers.append(f"{topic} on {broker}: could not read the min offsets: {answer}")
            continue
        for mq, s in answer.items():
            min_now[(topic, broker, mq.queue_id)] = s.min_offset
            queue_ids.setdefault((broker, topic), set()).add(mq.queue_id)
    blockers.extend(_uncovered(moved, pushed, queue_ids))
    blockers.extend(
        f"{key_text(row_key(r))}: no target in the plan, and a client push would "
        "move it: plan again"
        for r in moved
        if r.target is None
    )
    moved = [r for r in moved if r.target is not None]

    async def committed(r: PlanRow) -> int | None:
        return await admin.query_consumer_offset(brokers[r.broker], r.group, r.topic, r.queue_id)

    rows_read = [r for r in moved if r.group not in files]
    answers = await gather_answers(committed, rows_read, limit=IN_FLIGHT)
    now: dict[RowKey, int | None | RocketMQError] = {row_key(r): a for r, a in answers.items()}
    for group, path in files.items():
        # A broadcasting client's offsets are in its file: read that again, not the broker.
        found = await asyncio.to_thread(
            read_store_file, path.client_id or "", Path(path.file or "")
        )
        if found.error is not None:
            blockers.append(f"group {group}: cannot read the client's offsets: {found.error}")
            continue
        for r in moved:
            if r.group == group:
                now[row_key(r)] = found.offsets.get((r.topic, r.broker, r.queue_id))
    read_now: dict[RowKey, int | None] = {}
    for key, value in now.items():
        if isinstance(value, RocketMQError):
            blockers.append(f"{key_text(key)}: could not read the committed offset: {value}")
        else:
            read_now[key] = value
    readable = [r for r in moved if row_key(r) in read_now]
    rows_now, raised = reclamp(readable, min_now)

    groups: list[GroupWrites] = []
    drift: list[Drift] = []
    for group, (path, online, _) in paths.items():
        mine = [r for r in rows_now if r.group == group]
        if not mine:
            continue
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
                pops.get(group, False),
            )
        )
    return ApplyCheck(plan, tuple(groups), tuple(drift), raised, tuple(blockers))


def _also_pushed(plan: LoadedPlan, rows: Sequence[PlanRow], pushed: set[str]) -> list[PlanRow]:
    """The plan's unchanged rows on every (broker, topic) a client push goes to: the push
    moves them too."""
    topics = {(r.group, r.broker, r.topic) for r in rows if r.group in pushed}
    return [r for r in plan.rows if not r.changed and (r.group, r.broker, r.topic) in topics]


def _uncovered(
    moved: Sequence[PlanRow], pushed: set[str], queue_ids: Mapping[tuple[str, str], set[int]]
) -> list[str]:
    """A push moves every queue of the topic on its broker: one the plan does not hold would
    move with no before-image in the journal and no way back."""
    out = []
    for group in sorted(pushed):
        held: dict[tuple[str, str], set[int]] = {}
        for r in moved:
            if r.group == group:
                held.setdefault((r.broker, r.topic), set()).add(r.queue_id)
        for (broker, topic), ids in sorted(held.items()):
            lacking = sorted(queue_ids.get((broker, topic), set()) - ids)
            if lacking:
                out.append(
                    f"group {group}: a client push resets every queue of {topic} on {broker}, "
                    f"and the plan does not hold queue(s) {', '.join(map(str, lacking))}: they "
                    "would move with no before-image; plan the whole topic, or stop the "
                    "consumers and apply offline"
                )
    return out


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


@dataclass(frozen=True, slots=True)
class Consumers:
    """Who consumes a group right now, and how."""

    clients: frozenset[str]
    #: It pops (RocketMQ 5): its gRPC clients through a proxy always do, and remoting clients
    #: do where a broker hands them the group's topic in POP mode.
    pop: bool
    #: Why who consumes it is unknown: no client was named and a broker or proxy that might
    #: list one did not answer (None: known).
    unknown: str | None

    @property
    def online(self) -> int:
        return len(self.clients)


async def consumers_of(
    reader: ClusterReader,
    group: str,
    brokers: Mapping[str, str],
    proxies: Sequence[str] = (),
    topics: Iterable[str] = (),
) -> Consumers:
    """Who consumes `group`, asked of every broker in `brokers` (those holding the group's
    queues: a client heartbeats only the brokers of the topics it uses, so one broker's "not
    online" says nothing of the others) and of every proxy (the brokers list no gRPC client).
    Any one naming a client means online."""

    admin = reader.admin
    wanted = set(topics)
    modes = await gather_answers(
        admin.message_request_modes, sorted(brokers.values()), limit=IN_FLIGHT
    )
    pops: bool | None = False
    for answer in modes.values():
        if isinstance(answer, RocketMQError):
            pops = None if pops is False else pops
        elif any(answer.get((t, group)) == POP_MODE for t in wanted):
            pops = True
    read = await read_clients(admin, group, brokers, proxies, every_broker=True, pop_topics=pops)
    clients = frozenset(c.client_id for c in read.clients)
    unknown = None
    if not brokers and not proxies:
        unknown = "no broker to ask"
    elif not clients and read.gaps:
        unknown = "; ".join(g.line() for g in read.gaps)
    return Consumers(clients, read.consumption.pop, unknown)
