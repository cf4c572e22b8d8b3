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

A queue the apply verified is read again too when the caller names it (`rolled_back_of`: no
later apply or undo wrote it): a switch to a replica that had not copied the write puts the
master's offset back to the before-image (console/services/apply/verify_journal.py). Found
exactly there, it is written again, on the master named now; found anywhere else it is left
(it holds the write, or consumers or someone else moved it since).

The reset path is chosen again for what is left (explicit per-queue targets: the broker's own
reset, or a direct write with no consumer online). The rest of a client push (4.x brokers, or
5.x without server-side reset, with consumers online) is not resumed while its consumers are
online: a push carries one time for every queue of a topic on a broker, so it cannot finish
single queues without moving again those it verified, which have been consumed since; the
refusal says to stop the consumers (the rest is then written directly) or to undo. Targets
below the min offset now are clamped again. It writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from console.domain.drift import Drift, Reclamped, holds, key_text, proves, reclamp, row_key
from console.domain.journal import Journal, JournalQueue, QueueState
from console.domain.plan import PlanRow
from console.domain.reset_paths import ResetPathKind
from console.services.apply.check import GroupWrites, QueueWrite, seen_of
from console.services.apply.queues_now import QueueAt, read_queues_now, unregistered
from console.services.plan.paths_now import reset_path_now
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
    #: Queues the apply verified that a switch rolled back: written again.
    rolled_back: tuple[JournalQueue, ...] = ()

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

    def seen(self) -> dict[str, object]:
        """What an operator confirms: the queues found at their target or past it, every write
        left with its offset before and target, each group's path, the drift and what blocks.
        A check read again right before writing must say the same."""
        facts = seen_of(self.groups, tuple(d.line() for d in self.drift), self.blockers)
        facts["found at their target"] = tuple(key_text(q.key) for q in self.arrived)
        facts["found past their target"] = tuple(key_text(q.key) for q in self.past)
        facts["rolled back by a switch"] = tuple(key_text(q.key) for q in self.rolled_back)
        for w in self.writes:
            facts[f"{key_text(w.key)}: offset"] = w.before
        return facts


def rolled_back_of(journal: Journal, later: Iterable[Journal]) -> tuple[JournalQueue, ...]:
    """The queues `journal` verified that a switch may have rolled back since: those no apply
    or undo begun after it wrote (a queue one of them put back at the before-image is theirs,
    not a switch's doing, and writing it again would undo their work)."""
    taken = {
        q.key
        for j in later
        if j.apply_id != journal.apply_id and j.started_at_ms >= journal.started_at_ms
        for q in j.queues
        if q.state is not QueueState.PENDING
    }
    return tuple(
        q
        for q in journal.queues
        if q.state is QueueState.VERIFIED
        and q.key not in taken
        and q.before is not None
        and q.before != q.target
        # A client's offsets file is not on a broker: no switch rolls it back.
        and journal.paths.get(q.group) != ResetPathKind.CLIENT_FILE
    )


async def check_resume(
    reader: ClusterReader, journal: Journal, rolled_back_of: Sequence[JournalQueue] = ()
) -> ResumeCheck:
    admin = reader.admin
    candidates = {q.key for q in rolled_back_of}
    left = journal.unfinished + tuple(rolled_back_of)
    brokers = await reader.brokers()
    blockers = unregistered({q.broker for q in left}, brokers)
    whole = sorted(g for g, kind in journal.paths.items() if kind == ResetPathKind.CLIENT_FILE)
    for group in whole:
        # Its file was rewritten in one step, so there is no part left to finish.
        blockers.append(
            f"group {group}: its client's offsets.json is written whole, not resumed: plan the "
            f"reset again (or undo {journal.apply_id})"
        )
    queues = [q for q in left if q.broker in brokers and q.group not in whole]
    read = await read_queues_now(admin, brokers, [q.key for q in queues])
    blockers.extend(read.blockers)
    # A queue whose committed offset or topic's min offsets are missing is named above.
    readable = [
        (q, read.committed[q.key])
        for q in queues
        if q.key in read.committed and (q.topic, q.broker, q.queue_id) in read.bounds
    ]

    facts = await broker_facts(admin, {q.broker: brokers[q.broker] for q, _ in readable})
    groups: list[GroupWrites] = []
    arrived: list[JournalQueue] = []
    past: list[JournalQueue] = []
    rolled: list[JournalQueue] = []
    drift: list[Drift] = []
    reclamped: list[Reclamped] = []
    for group in sorted({q.group for q, _ in readable}):
        mine = [(q, v) for q, v in readable if q.group == group]
        asked = {q.broker: brokers[q.broker] for q, _ in mine}
        path, who = await reset_path_now(
            reader,
            group,
            asked,
            {q.topic for q, _ in mine},
            [facts[b] for b in sorted(asked)],
            broadcasting=False,
            per_queue=True,  # what is left is a set of queues, each with its own target
        )
        if path.blocker and who.online and journal.paths.get(group) == ResetPathKind.CLIENT_PUSH:
            path = replace(path, blocker=_pushed_resume(journal, group, who.online))
        if path.blocker:
            blockers.append(f"group {group}: {path.kind}: {path.blocker}")
        online = who.online
        to_write: list[tuple[JournalQueue, PlanRow]] = []
        for q, value in mine:
            if q.key in candidates:
                # Verified by the apply: only the master back at the before-image is a
                # rollback; anything else is left as it is.
                if value == q.before:
                    rolled.append(replace(q, stored=value))
                    to_write.append((q, _row(journal.cluster, q, value, read.bounds)))
                continue
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
            to_write.append((q, _row(journal.cluster, q, value, read.bounds)))
        rows, raised = reclamp([r for _, r in to_write], read.min_offsets)
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
        tuple(rolled),
    )


def _pushed_resume(journal: Journal, group: str, online: int) -> str:
    """Why the rest of a client push is not resumed while its consumers are online."""
    return (
        f"{journal.apply_id} moved {group} by client push (every queue of a topic to one time, "
        f"sent through its {online} online consumer(s)), which cannot be repeated for single "
        "queues: a push moves the whole topic on a broker again, and the queues it verified "
        "have been consumed since. Stop the consumers and resume (each queue left is then "
        f"written directly), or undo {journal.apply_id}"
    )


def _row(
    cluster: str,
    q: JournalQueue,
    now: int | None,
    bounds: Mapping[QueueAt, tuple[int, int]],
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
