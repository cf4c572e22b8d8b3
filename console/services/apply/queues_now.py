"""The queues a write would move, read right before writing: one reading behind the apply's
check and the resume's.

Both read the same things of the cluster (where each broker's master is, each queue's committed
offset now, the min and max offsets of its topic on its broker) and decide differently from
them (console/services/apply/check.py, resume_check.py). Every queue must be read: one that
cannot be is a blocker, never "unchanged".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from console.domain.drift import RowKey, key_text
from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import RocketMQError
from console.services.apply.offset_writer import IN_FLIGHT
from console.services.infra.fanout import gather_answers

#: A queue of a topic on a broker: topic, broker, queue id.
QueueAt = tuple[str, str, int]


@dataclass(frozen=True, slots=True)
class QueuesNow:
    #: The committed offset of each queue that could be read (None: nothing committed).
    committed: dict[RowKey, int | None]
    #: Min and max offset of every queue of each topic read, by (topic, broker, queue id).
    bounds: dict[QueueAt, tuple[int, int]]
    #: What could not be read, one line each.
    blockers: tuple[str, ...]

    @property
    def min_offsets(self) -> dict[QueueAt, int]:
        return {k: low for k, (low, _) in self.bounds.items()}

    def queue_ids(self, broker: str, topic: str) -> set[int]:
        """The queues of `topic` on `broker`, as it answered."""
        return {q for t, b, q in self.bounds if (t, b) == (topic, broker)}


def unregistered(wanted: Iterable[str], masters: Mapping[str, str]) -> list[str]:
    """One blocker per broker of `wanted` whose master the name server does not list."""
    return [
        f"broker {name} is not registered with the name server (down?)"
        for name in sorted(set(wanted) - set(masters))
    ]


async def read_queues_now(
    admin: AdminClient,
    masters: Mapping[str, str],
    queues: Iterable[RowKey],
    *,
    committed_of: Iterable[RowKey] | None = None,
) -> QueuesNow:
    """The min and max offsets of the topics of `queues` on their brokers' masters, and the
    committed offset of each of `committed_of` (default: every queue)."""
    wanted = list(queues)
    asked = wanted if committed_of is None else list(committed_of)
    blockers: list[str] = []
    stats = await gather_answers(
        lambda bt: admin.topic_stats(masters[bt[0]], bt[1]),
        sorted({(broker, topic) for _, topic, broker, _ in wanted}),
        limit=IN_FLIGHT,
    )
    bounds: dict[QueueAt, tuple[int, int]] = {}
    for (broker, topic), answer in stats.items():
        if isinstance(answer, RocketMQError):
            blockers.append(f"{topic} on {broker}: could not read the min offsets: {answer}")
            continue
        for mq, s in answer.items():
            bounds[(topic, broker, mq.queue_id)] = (s.min_offset, s.max_offset)

    async def committed(key: RowKey) -> int | None:
        group, topic, broker, queue_id = key
        return await admin.query_consumer_offset(masters[broker], group, topic, queue_id)

    answers = await gather_answers(committed, asked, limit=IN_FLIGHT)
    read: dict[RowKey, int | None] = {}
    for key, value in answers.items():
        if isinstance(value, RocketMQError):
            blockers.append(f"{key_text(key)}: could not read the committed offset: {value}")
        else:
            read[key] = value
    return QueuesNow(read, bounds, tuple(blockers))
