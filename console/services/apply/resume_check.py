"""What `resume` would write for an apply that stopped part-way, read again from the cluster.

The journal says which queues were verified; every other one (never sent, failed, not yet,
kept another value, or written when the console died) is read again now:

- at its target already (the write landed before the stop, only its answer was lost): it is
  verified now and written again never, so nothing is applied twice;
- past the target of a skip, with consumers online: the write may have been lost while they
  consumed past it, and writing it again would move them back: it is left, not verified
  ("past the target, the reset not seen");
- still at its before-image: it is written;
- anywhere else: drift (someone else moved it), refused unless accepted.

The reset path is chosen again for what is left (explicit per-queue targets: the broker's own
reset, or a direct write with no consumer online). Targets below the min offset now are clamped
again. It writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from console.domain.drift import Drift, Reclamped, holds, key_text, proves, reclamp, row_key
from console.domain.journal import Journal, JournalQueue
from console.domain.plan import PlanRow
from console.domain.reset_paths import ResetPathKind, choose_reset_path
from console.rocketmq.errors import RocketMQError
from console.services.apply.check import GroupWrites, QueueWrite, consumers_of, seen_of
from console.services.apply.offset_writer import IN_FLIGHT
from console.services.infra.fanout import gather_answers
from console.services.read.broker_facts import broker_facts
from console.services.read.reader import ClusterReader


@dataclass(frozen=True, slots=True)
class ResumeCheck:
    journal: Journal
    groups: tuple[GroupWrites, ...]  # the writes left, by group
    #: Found at their target: verified now, not written again.
    arrived: tuple[JournalQueue, ...]
    #: Skips found past their target with consumers online: left, not verified.
    past: tuple[JournalQueue, ...]
    drift: tuple[Drift, ...]  # the queues moved by someone else since the apply
    reclamped: tuple[Reclamped, ...]  # targets raised to a min offset that moved past them
    blockers: tuple[str, ...]

    @property
    def writes(self) -> tuple[QueueWrite, ...]:
        return tuple(w for g in self.groups for w in g.writes)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted({g.group for g in self.groups} or set(self.journal.groups)))

    @property
    def has_drift(self) -> bool:
        return bool(self.drift)

    def refusals(self, *, accept_drift: bool) -> tuple[str, ...]:
        if accept_drift or not self.drift:
            return self.blockers
        head = f"{len(self.drift)} queue(s) moved since the apply (resume with --accept-drift):"
        return (*self.blockers, head, *(d.line() for d in self.drift))

    def lines(self) -> list[str]:
        """What resuming would do, one fact a line: what `resume` prints and what the console
        shows before the operator confirms."""
        j = self.journal
        lines = [
            f"resume {j.apply_id} ({j.status}): {len(j.unfinished)} queue(s) not verified; "
            f"{len(self.arrived)} found at their target, {len(self.writes)} to write"
        ]
        if self.past:
            lines.append(
                f"{len(self.past)} queue(s) found past their target with consumers online: "
                "left as they are, not verified (writing the target again would move them back)"
            )
        lines += [f"reset path for {g.group}: {g.path.kind} - {g.path.reason}" for g in self.groups]
        lines += [f"warning: {r.line}" for r in self.reclamped]
        return lines

    def seen(self) -> dict[str, object]:
        """What an operator confirms: the queues found at their target or past it, every write
        left with its offset before and target, each group's path, the drift and what blocks.
        A check read again right before writing must say the same."""
        facts = seen_of(self.groups, tuple(d.line() for d in self.drift), self.blockers)
        facts["found at their target"] = tuple(key_text(q.key) for q in self.arrived)
        facts["found past their target"] = tuple(key_text(q.key) for q in self.past)
        for w in self.writes:
            facts[f"{key_text(w.key)}: offset"] = w.before
        return facts


async def check_resume(
    reader: ClusterReader, journal: Journal, proxies: Sequence[str] = ()
) -> ResumeCheck:
    admin = reader.admin
    left = journal.unfinished
    brokers = await reader.brokers()
    blockers = [
        f"broker {name} is not registered with the name server (down?)"
        for name in sorted({q.broker for q in left} - set(brokers))
    ]
    whole = sorted(g for g, kind in journal.paths.items() if kind == ResetPathKind.CLIENT_FILE)
    for group in whole:
        # Its file was rewritten in one step, so there is no part left to finish.
        blockers.append(
            f"group {group}: its client's offsets.json is written whole, not resumed: plan the "
            f"reset again (or undo {journal.apply_id})"
        )
    queues = [q for q in left if q.broker in brokers and q.group not in whole]

    async def committed(q: JournalQueue) -> int | None:
        return await admin.query_consumer_offset(brokers[q.broker], q.group, q.topic, q.queue_id)

    now = {
        q.key: answer
        for q, answer in (await gather_answers(committed, queues, limit=IN_FLIGHT)).items()
    }
    stats = await gather_answers(
        lambda bt: admin.topic_stats(brokers[bt[0]], bt[1]),
        sorted({(q.broker, q.topic) for q in queues}),
        limit=IN_FLIGHT,
    )
    bounds: dict[tuple[str, str, int], tuple[int, int]] = {}
    for (broker, topic), answer in stats.items():
        if isinstance(answer, RocketMQError):
            blockers.append(f"{topic} on {broker}: could not read the min offsets: {answer}")
            continue
        for mq, s in answer.items():
            bounds[(topic, broker, mq.queue_id)] = (s.min_offset, s.max_offset)
    readable: list[tuple[JournalQueue, int | None]] = []
    for q in queues:
        value = now[q.key]
        if isinstance(value, RocketMQError):
            blockers.append(f"{key_text(q.key)}: could not read the committed offset: {value}")
        elif (q.topic, q.broker, q.queue_id) not in bounds:
            continue  # its topic's min offsets are missing: named above
        else:
            readable.append((q, value))

    facts = await broker_facts(admin, {q.broker: brokers[q.broker] for q, _ in readable})
    groups: list[GroupWrites] = []
    arrived: list[JournalQueue] = []
    past: list[JournalQueue] = []
    drift: list[Drift] = []
    reclamped: list[Reclamped] = []
    for group in sorted({q.group for q, _ in readable}):
        mine = [(q, v) for q, v in readable if q.group == group]
        asked = {q.broker: brokers[q.broker] for q, _ in mine}
        who = await consumers_of(reader, group, asked, proxies, {q.topic for q, _ in mine})
        if who.unknown is not None:
            blockers.append(f"group {group}: could not tell who is online: {who.unknown}")
        online = who.online
        path = choose_reset_path(
            [facts[b] for b in sorted({q.broker for q, _ in mine})],
            consumers_online=online,
            broadcasting=False,
            per_queue=True,  # what is left is a set of queues, each with its own target
            pop=who.pop,
        )
        if path.blocker:
            blockers.append(f"group {group}: {path.kind}: {path.blocker}")
        to_write: list[tuple[JournalQueue, PlanRow]] = []
        for q, value in mine:
            if proves(q.before, q.target, value, online=online > 0):
                arrived.append(replace(q, stored=value))
                continue
            if online > 0 and holds(q.before, q.target, value, online=True):
                past.append(replace(q, stored=value))
                continue
            before = q.before
            # Consumers online move their queues forward: that is not someone else's doing.
            forward = online > 0 and value is not None and before is not None and value >= before
            if value != q.before and not forward:
                drift.append(Drift(q.key, q.before, value, "moved since the apply", q.target))
            to_write.append((q, _row(journal.cluster, q, value, bounds)))
        rows, raised = reclamp([r for _, r in to_write], {k: lo for k, (lo, _) in bounds.items()})
        reclamped.extend(raised)
        by_key = {row_key(r): r for r in rows}
        writes = tuple(
            QueueWrite(by_key[row_key(r)], brokers[q.broker], q.before) for q, r in to_write
        )
        if writes:
            groups.append(GroupWrites(group, path, None, online, None, writes, who.pop))
    return ResumeCheck(
        journal,
        tuple(groups),
        tuple(arrived),
        tuple(past),
        tuple(drift),
        tuple(reclamped),
        tuple(blockers),
    )


def _row(
    cluster: str,
    q: JournalQueue,
    now: int | None,
    bounds: dict[tuple[str, str, int], tuple[int, int]],
) -> PlanRow:
    low, high = bounds[(q.topic, q.broker, q.queue_id)]
    return PlanRow(
        cluster=cluster,
        group=q.group,
        topic=q.topic,
        broker=q.broker,
        queue_id=q.queue_id,
        min_offset=low,
        max_offset=high,
        current=now,
        requested=q.target,
        target=q.target,
        delta=None if now is None else q.target - now,
        clamp=None,
        warnings=(),
    )
