"""Whether the replicas hold what a write put on their master: asked of each replica itself
(QUERY_CONSUMER_OFFSET at its own address), once (`copies_now`, what `verify` asks) or until
each holds it or time is up (`wait_copied`, the end of an apply's writes).

A replica holds a queue's write when its committed offset is where the master's would be had
the write taken (console/domain/drift.py `holds`): the target itself with nobody consuming;
with consumers online anything they may have moved it to since (they commit on the master, the
replica copies the master's table whole).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from console.domain.drift import holds
from console.domain.journal import JournalQueue
from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import RocketMQError
from console.services.apply.replicas import BrokerReplicas, Copy
from console.services.infra.fanout import gather_answers

#: Between two rounds of asking the replicas.
POLL_S = 1.0
Key = tuple[str, str, str, int]


@dataclass(frozen=True, slots=True)
class Lacking:
    """A replica that does not hold a queue's write: what it holds, or why it did not say."""

    copy: Copy
    stored: int | None
    error: str | None = None

    def text(self, word: str) -> str:
        if self.error is not None:
            return f"{word} {self.copy.label} did not answer ({self.error})"
        held = "nothing committed" if self.stored is None else self.stored
        return f"{word} {self.copy.label} holds {held}"


@dataclass(frozen=True, slots=True)
class Copies:
    """What the replicas hold of some queues: the replicas lacking each queue that one lacks."""

    lacking: dict[Key, tuple[Lacking, ...]] = field(default_factory=dict)
    #: Seconds the wait took, by broker (copied or not).
    took_s: dict[str, float] = field(default_factory=dict)

    def lines(
        self, replicas: Mapping[str, BrokerReplicas], queues: Sequence[JournalQueue], apply_id: str
    ) -> list[str]:
        """One line per broker: copied, not waited for, or which replica lacks what."""
        out = []
        for broker in sorted({q.broker for q in queues}):
            known = replicas.get(broker)
            if known is None:
                continue
            mine = [q for q in queues if q.broker == broker]
            short = [q for q in mine if q.key in self.lacking]
            if not known.copies:
                out.append(known.plan_line())
            elif known.wait_s <= 0 and not short:
                out.append(known.plan_line())
            elif not short:
                took = self.took_s.get(broker, 0.0)
                names = ", ".join(c.label for c in known.copies)
                out.append(
                    f"{broker}: {len(mine)} queue(s) copied by {known.word}(s) {names} "
                    f"({took:.1f} s)"
                )
            else:
                behind = sorted({lack.copy.label for q in short for lack in self.lacking[q.key]})
                out.append(
                    f"{broker}: written on the master {known.master_addr}; {known.word} "
                    f"{', '.join(behind)} has not copied {len(short)} queue(s) yet: a switch "
                    f"now would roll them back (`rmq-console verify {apply_id}` checks again)"
                )
        return out


async def copies_now(
    admin: AdminClient,
    queues: Iterable[JournalQueue],
    replicas: Mapping[str, BrokerReplicas],
    online: Mapping[str, bool],
    *,
    in_flight: int = 256,
) -> Copies:
    """Each replica asked once for each queue of its broker."""
    pairs = [(q, c) for q in queues if q.broker in replicas for c in replicas[q.broker].copies]

    async def ask(pair: tuple[JournalQueue, Copy]) -> int | None:
        q, c = pair
        return await admin.query_consumer_offset(c.addr, q.group, q.topic, q.queue_id)

    answers = await gather_answers(ask, pairs, limit=in_flight)
    lacking: dict[Key, list[Lacking]] = {}
    for (q, c), answer in answers.items():
        if isinstance(answer, RocketMQError):
            lacking.setdefault(q.key, []).append(Lacking(c, None, " ".join(str(answer).split())))
        elif not holds(q.before, q.target, answer, online=online.get(q.group, False)):
            lacking.setdefault(q.key, []).append(Lacking(c, answer))
    return Copies({k: tuple(v) for k, v in lacking.items()})


async def wait_copied(
    admin: AdminClient,
    queues: Sequence[JournalQueue],
    replicas: Mapping[str, BrokerReplicas],
    online: Mapping[str, bool],
    *,
    announce: Callable[[str | None], None],
    in_flight: int = 256,
) -> Copies:
    """Ask the replicas until each holds every queue of its broker, or the broker's wait is
    over; what the wait is for, and for how long at most, is announced before each round."""
    waited = [q for q in queues if q.broker in replicas and replicas[q.broker].wait_s > 0]
    started = time.monotonic()
    deadline = {b: started + r.wait_s for b, r in replicas.items()}
    took: dict[str, float] = {}
    lacking: dict[Key, tuple[Lacking, ...]] = {}
    left = list(waited)
    while left:
        now = time.monotonic()
        brokers = sorted({q.broker for q in left})
        names = "; ".join(
            f"{b}'s {', '.join(c.label for c in replicas[b].copies)}" for b in brokers
        )
        longest = max(deadline[b] - now for b in brokers)
        announce(
            f"waiting for the replicas to copy {len(left)} queue(s): {names} "
            f"({max(0.0, longest):.0f} s more at most)"
        )
        asked = await copies_now(admin, left, replicas, online, in_flight=in_flight)
        now = time.monotonic()
        still = [q for q in left if q.key in asked.lacking]
        for broker in brokers:
            if not any(q.broker == broker for q in still):
                took[broker] = now - started
        over = {b for b in brokers if now >= deadline[b]}
        for q in still:
            if q.broker in over:
                lacking[q.key] = asked.lacking[q.key]
        for broker in over:
            took.setdefault(broker, now - started)
        left = [q for q in still if q.broker not in over]
        if left:
            await asyncio.sleep(POLL_S)
    announce(None)
    return Copies(lacking, took)
