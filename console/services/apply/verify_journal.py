"""`verify APPLY_ID`: whether what an apply wrote still holds, read now.

Each queue the apply verified is read on its broker's master as the name server names it now
(after a switch, the replica elected since, not the address in the journal) and on each replica
a switch could make master (console/services/apply/replicas.py). A switch to a replica that had
not copied the write rolls it back: the master then holds the before-image again, and says so
here. Reads only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from console.config import ClusterConfig, Config
from console.domain.drift import holds
from console.domain.journal import Journal, JournalQueue, QueueState
from console.errors import Refused
from console.rocketmq.errors import RocketMQError
from console.services.apply.replica_copies import Copies, copies_now
from console.services.apply.replicas import BrokerReplicas, ReplicaLookup, replicas_now
from console.services.infra.fanout import gather_answers
from console.services.infra.workspace import Workspace
from console.services.read.reader import ClusterReader


@dataclass(frozen=True, slots=True)
class QueueNow:
    """One queue an apply verified, as its master holds it now."""

    queue: JournalQueue
    master: str
    stored: int | None = None
    error: str | None = None

    @property
    def holds(self) -> bool:
        # Consumers may have moved on since: anything they reach from the target holds.
        q = self.queue
        return self.error is None and holds(q.before, q.target, self.stored, online=True)

    def line(self) -> str:
        q = self.queue
        name = f"{q.group} {q.topic}/{q.broker}/{q.queue_id}"
        moved = "" if self.master == q.broker_addr else f" (the apply wrote on {q.broker_addr})"
        if self.error is not None:
            return f"{name}: not read on the master {self.master}: {self.error}"
        if self.holds:
            return f"{name}: holds {self.stored} on the master {self.master}{moved}"
        if self.stored == q.before:
            return (
                f"{name}: ROLLED BACK: the master {self.master}{moved} holds {self.stored}, the "
                f"offset before the apply, not {q.target}"
            )
        held = "nothing committed" if self.stored is None else self.stored
        return f"{name}: the master {self.master}{moved} holds {held}, not {q.target}"


@dataclass(frozen=True, slots=True)
class Verification:
    journal: Journal
    queues: tuple[QueueNow, ...]
    #: One line per broker: which replicas hold the write, and which do not.
    replicas: tuple[str, ...]
    #: Queues some replica does not hold.
    not_copied: int
    #: Brokers not read at all (no master now), one line each.
    unread: tuple[str, ...]
    #: Queues the apply itself did not verify: not checked here (`resume`).
    unverified: int

    @property
    def rolled_back(self) -> tuple[QueueNow, ...]:
        return tuple(q for q in self.queues if q.error is None and not q.holds)

    @property
    def exit_code(self) -> int:
        """0 every queue holds on its master and its replicas; 2 nothing could be read; 1 any
        other answer."""
        if not self.queues or all(q.error is not None for q in self.queues):
            return 2
        whole = not (self.rolled_back or self.not_copied or self.unread or self.unverified)
        return 0 if whole and all(q.error is None for q in self.queues) else 1


async def verify_apply(cluster: ClusterConfig, config: Config, apply_id: str) -> Verification:
    """`verify APPLY_ID` on `cluster`: its journal from the workspace, read now; Refused when
    the workspace is not on this machine or the apply is unknown or another cluster's."""
    # deferred: the journal loader and the reader's connection load when a verify runs
    from console.services.apply.journal_actions import load_applied
    from console.services.read.open_reader import open_reader

    root = Workspace(config.workspace_path).local_root
    if root is None:
        raise Refused(["the workspace is not on this machine: no journals"])
    journal = await asyncio.to_thread(load_applied, root, apply_id, cluster.name)
    async with open_reader(cluster, config) as reader:
        return await verify_journal(reader, journal)


async def verify_journal(
    reader: ClusterReader, journal: Journal, replicas: ReplicaLookup = replicas_now
) -> Verification:
    written = [q for q in journal.queues if q.state is QueueState.VERIFIED]
    now = await replicas(reader, {q.broker for q in written}, None)
    sets = now.by_broker
    readable = [q for q in written if q.broker in sets]

    async def read(q: JournalQueue) -> int | None:
        return await reader.admin.query_consumer_offset(
            sets[q.broker].master_addr, q.group, q.topic, q.queue_id
        )

    answers = await gather_answers(read, readable)
    queues: list[QueueNow] = []
    for q, answer in answers.items():
        master = sets[q.broker].master_addr
        if isinstance(answer, RocketMQError):
            queues.append(QueueNow(q, master, error=" ".join(str(answer).split())))
        else:
            queues.append(QueueNow(q, master, answer))
    queues.sort(key=lambda n: n.queue.key)
    held = [n.queue for n in queues if n.holds]
    online = {q.group: True for q in held}
    copies = await copies_now(reader.admin, held, sets, online)
    return Verification(
        journal,
        tuple(queues),
        tuple(_replica_lines(sets, held, copies)),
        len(copies.lacking),
        now.blockers,
        len(journal.queues) - len(written),
    )


def _replica_lines(
    sets: Mapping[str, BrokerReplicas], held: Sequence[JournalQueue], copies: Copies
) -> list[str]:
    out = []
    for broker in sorted({q.broker for q in held}):
        known = sets[broker]
        mine = [q for q in held if q.broker == broker]
        short = [q for q in mine if q.key in copies.lacking]
        if not known.copies:
            out.append(f"{broker}: master {known.master_text}; no other replica to copy to")
        elif not short:
            names = ", ".join(c.label for c in known.copies)
            out.append(f"{broker}: {known.word}(s) {names} hold all {len(mine)} queue(s)")
        else:
            lacks = sorted({lack.text(known.word) for q in short for lack in copies.lacking[q.key]})
            out.append(
                f"{broker}: {len(short)} queue(s) not copied yet ({'; '.join(lacks[:3])}): a "
                "switch now would roll them back"
            )
    return out
