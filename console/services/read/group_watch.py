"""Watching a consumer group on the cluster: its stuck queues over some reads (`watch_group`,
the rule is console.domain.stuck's), what the clients holding them cache, and whether it moved
on after a skip (`wait_moved_on`).

**Why "moved on" and not the read-back.** On a 5.x broker with server-side reset (5.3.3's
default), a reset of an online group is held by the broker and handed to the consumer only as
the answer to its next pull (PULL_OFFSET_MOVED). Until then the broker's read-back already says
the target, so an apply reads "verified" while the consumer is still on the old message. Two
things delay that pull, measured on the sandbox's 5.3.3 brokers:

- a pull the broker is holding (long polling) is answered when a message arrives on the queue,
  or at the latest when its hold expires (15 s, checked every 5 s): a skip reached a stuck
  orderly consumer in about 1 s with messages arriving, in 6.5 to 19 s without;
- a Java push consumer whose cache for the queue is past a threshold (`pullThresholdForQueue`,
  default 1,000 messages; `pullThresholdSizeForQueue`, 100 MiB; for a concurrent consumer also a
  span of `consumeConcurrentlyMaxSpan` offsets) sends **no pull at all** for it. A stuck queue
  with messages arriving fills that cache, and then the skip never reaches the consumer: the
  broker reads back the target for good while the consumer redelivers the poison message. Only
  a restart of the consumer (or the queue moving to another one) picks it up; the restarted
  consumer starts from the target. `ConsumerCache.flow_controlled` says so before the apply.

So after a skip, `wait_moved_on` waits for the committed offset to pass the target: the consumer
has then consumed the message at the target, i.e. it really moved on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping, Sequence

from console.domain.moved_on import MoveOnReport, Progress, progress_past
from console.domain.offsets import GroupOffsets, QueueKey
from console.domain.stuck import ConsumerCache, StuckReport, caches_of, find_stuck, with_cache
from console.rocketmq.errors import RocketMQError
from console.rocketmq.running_info import consumer_running_info
from console.rocketmq.topics import retry_topic
from console.services.read.reader import ClusterReader
from console.services.read.routes import read_addrs

#: Seconds to watch a group by default. Longer than a Java consumer's commit interval
#: (`persistConsumerOffsetInterval`, 5 s by default) with room to spare: a healthy queue whose
#: consumer has not committed yet must not read as stuck.
DEFAULT_WATCH_S = 15.0


DEFAULT_READS = 3


#: How long `wait_moved_on` waits by default: a held pull's 15 s plus the broker's 5 s check, a
#: commit interval (5 s) and a margin.
DEFAULT_MOVE_ON_S = 30.0


async def watch_group(
    reader: ClusterReader,
    group: str,
    *,
    seconds: float = DEFAULT_WATCH_S,
    reads: int = DEFAULT_READS,
    topics: Sequence[str] | None = None,
    caches: bool = True,
) -> StuckReport:
    """Read the group `reads` times spread over `seconds` and report its stuck queues.

    `topics` limits the reads to those topics (the group's retry topic is always read).
    With `caches`, the clients holding stalled queues are asked what they cache for them
    (`StuckQueue.cache`). NotFoundError when no broker knows the group.
    """
    if reads < 2:
        raise ValueError("watching takes at least two reads")
    wanted = [*topics, retry_topic(group)] if topics else None
    interval = max(seconds, 0.0) / (reads - 1)
    start = time.monotonic()
    taken: list[GroupOffsets] = []
    for i in range(reads):
        await asyncio.sleep(max(0.0, start + i * interval - time.monotonic()))
        taken.append(await reader.group_offsets(group, topics=wanted))
    report = find_stuck(taken)
    if not caches or not report.stalled:
        return report
    found, lacking = await consumercaches_of(reader, taken[-1], [s.key for s in report.stalled])
    return StuckReport(
        group=report.group,
        first_ms=report.first_ms,
        last_ms=report.last_ms,
        reads=report.reads,
        online=report.online,
        stuck=tuple(with_cache(s, found.get(s.key)) for s in report.stuck),
        clear=report.clear,
        unknown=report.unknown,
        missing=report.missing,
        gaps=report.gaps,
        cache_missing=lacking,
    )


async def consumercaches_of(
    reader: ClusterReader, read: GroupOffsets, keys: Iterable[QueueKey]
) -> tuple[dict[QueueKey, ConsumerCache], tuple[str, ...]]:
    """The cache of each queue of `keys` in the client that holds it, asked of every client
    online in `read`; and one line per client that did not answer."""
    wanted = set(keys)
    clients = [c.client_id for c in read.clients]
    if not wanted or not clients:
        return {}, ()
    try:
        addrs = read_addrs(await reader.routes())
    except RocketMQError as exc:
        return {}, (f"no client asked: the name server did not say where the brokers are ({exc})",)
    # The broker forwards the request over the client's own connection: ask through the broker
    # of a stalled queue, which that client pulls from and so certainly heartbeats.
    brokers = sorted({k[1] for k in wanted if k[1] in addrs}) or sorted(addrs)
    if not brokers:
        return {}, tuple(f"{c}: no broker to ask through" for c in clients)
    addr = addrs[brokers[0]]
    answers = await asyncio.gather(
        *(consumer_running_info(reader.admin, addr, read.group, c) for c in clients),
        return_exceptions=True,
    )
    found: dict[QueueKey, ConsumerCache] = {}
    lacking: list[str] = []
    for client, answer in zip(clients, answers, strict=True):
        if isinstance(answer, BaseException):
            if not isinstance(answer, RocketMQError):
                raise answer
            lacking.append(f"{client}: {' '.join(str(answer).split())}")
            continue
        for key, cache in caches_of(answer).items():
            if key in wanted:
                found.setdefault(key, cache)
    answered = len(clients) - len(lacking)
    if answered:
        # Between two rebalances no client may hold a queue: its cache is unknown, not empty.
        lacking += [
            f"{topic}@{broker}:{queue_id}: none of the {answered} client(s) that answered "
            "holds it (rebalancing?)"
            for topic, broker, queue_id in sorted(wanted - found.keys())
        ]
    return found, tuple(lacking)


async def wait_moved_on(
    reader: ClusterReader,
    group: str,
    targets: Mapping[QueueKey, int],
    *,
    timeout: float = DEFAULT_MOVE_ON_S,
    interval: float = 1.0,
) -> MoveOnReport:
    """Read the group until its committed offset is past every target, or `timeout` passed;
    the report says where each queue stood at the last read."""
    topics = sorted({k[0] for k in targets})
    start = time.monotonic()
    while True:
        read = await reader.group_offsets(group, topics=topics)
        queues = progress_past(read, targets)
        elapsed = time.monotonic() - start
        if all(q.state is Progress.MOVED_ON for q in queues) or elapsed >= timeout:
            return MoveOnReport(group, elapsed, queues, read.gaps)
        await asyncio.sleep(min(interval, max(0.0, timeout - elapsed)))
