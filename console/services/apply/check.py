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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from console.domain.drift import Drift, Reclamped, RowKey, find_drift, key_text, reclamp, row_key
from console.domain.plan import PlanRow
from console.domain.reset_paths import ResetPath, ResetPathKind
from console.domain.spec import StrategyKind
from console.services.apply.queues_now import QueuesNow, read_queues_now, unregistered
from console.services.plan.load import LoadedPlan
from console.services.plan.paths_now import reset_path_now
from console.services.read.broker_facts import broker_facts
from console.services.read.client_offset_files import read_store_file
from console.services.read.online import Consumers
from console.services.read.reader import ClusterReader

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


async def check_apply(reader: ClusterReader, plan: LoadedPlan) -> ApplyCheck:
    """The plan read against the cluster (its gRPC clients listed by the reader's proxies)."""
    admin = reader.admin
    changed = plan.changed
    brokers = await reader.brokers()
    blockers: list[str] = []
    if not changed:
        blockers.append(NOTHING_TO_APPLY)
    blockers.extend(unregistered({r.broker for r in changed}, brokers))
    rows = [r for r in changed if r.broker in brokers]
    files = _client_files(plan)
    facts = await broker_facts(admin, {r.broker: brokers[r.broker] for r in rows})
    push_ts = _push_timestamp(plan)

    # Who is online and how each group would be moved decide which queues the write moves.
    paths: dict[str, tuple[ResetPath, Consumers]] = {}
    for group in sorted({r.group for r in rows}):
        mine = [r for r in rows if r.group == group]
        asked = {r.broker: brokers[r.broker] for r in mine}
        planned = files.get(group)
        path, who = await reset_path_now(
            reader,
            group,
            asked,
            {r.topic for r in mine},
            [facts[b] for b in sorted(asked)],
            broadcasting=_broadcasting(plan, group),
            per_queue=push_ts is None,
            client_file=(planned.file or "", planned.client_id or "") if planned else None,
        )
        paths[group] = (path, who)
        if path.blocker:
            blockers.append(f"group {group}: {path.kind}: {path.blocker}")

    pushed = {g for g, (p, _) in paths.items() if p.kind is ResetPathKind.CLIENT_PUSH}
    moved = rows + _also_pushed(plan, rows, pushed)
    read = await read_queues_now(
        admin,
        brokers,
        [row_key(r) for r in moved],
        committed_of=[row_key(r) for r in moved if r.group not in files and r.target is not None],
    )
    blockers.extend(read.blockers)
    blockers.extend(_uncovered(moved, pushed, read))
    blockers.extend(
        f"{key_text(row_key(r))}: no target in the plan, and a client push would "
        "move it: plan again"
        for r in moved
        if r.target is None
    )
    moved = [r for r in moved if r.target is not None]
    read_now = dict(read.committed)
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
                read_now[row_key(r)] = found.offsets.get((r.topic, r.broker, r.queue_id))
    readable = [r for r in moved if row_key(r) in read_now]
    rows_now, raised = reclamp(readable, read.min_offsets)

    groups: list[GroupWrites] = []
    drift: list[Drift] = []
    for group, (path, who) in paths.items():
        mine = [r for r in rows_now if r.group == group]
        if not mine:
            continue
        # The other clients of a broadcasting group keep their own offsets: only this one's
        # file moves, so nobody is online for it.
        online = 0 if group in files else who.online
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
                who.pop,
            )
        )
    return ApplyCheck(plan, tuple(groups), tuple(drift), raised, tuple(blockers))


def _also_pushed(plan: LoadedPlan, rows: Sequence[PlanRow], pushed: set[str]) -> list[PlanRow]:
    """The plan's unchanged rows on every (broker, topic) a client push goes to: the push
    moves them too."""
    topics = {(r.group, r.broker, r.topic) for r in rows if r.group in pushed}
    return [r for r in plan.rows if not r.changed and (r.group, r.broker, r.topic) in topics]


def _uncovered(moved: Sequence[PlanRow], pushed: set[str], read: QueuesNow) -> list[str]:
    """A push moves every queue of the topic on its broker: one the plan does not hold would
    move with no before-image in the journal and no way back."""
    out = []
    for group in sorted(pushed):
        held: dict[tuple[str, str], set[int]] = {}
        for r in moved:
            if r.group == group:
                held.setdefault((r.broker, r.topic), set()).add(r.queue_id)
        for (broker, topic), ids in sorted(held.items()):
            lacking = sorted(read.queue_ids(broker, topic) - ids)
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
