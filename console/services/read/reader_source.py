"""What the console asks a cluster, as plain async calls on one admin client.

This runs in the console's network process (see console.remote.network_process), never in the UI
process: decoding broker answers for hundreds of groups is CPU work that must not compete with
key handling. Reading is `ClusterReader`'s (built from the cluster's config by open_reader.py, with
a broker list cached for a refresh); what is here is what a refresh adds to it (delays that are
not asked again).
No Textual here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence

from console.config import ClusterConfig, Config
from console.domain.boundary_messages import Boundary, BoundaryRequest
from console.domain.delays import NextStoreTimes
from console.domain.offsets import GroupOffsets, QueueKey, known_delay
from console.rocketmq.errors import RocketMQError
from console.rocketmq.models import ConsumeTimeSpan, QueueStats
from console.rocketmq.running_info import consumer_running_info
from console.services.infra.access import open_admin
from console.services.infra.fanout import gather_bounded, gather_handing_over
from console.services.read.boundary import read_boundaries
from console.services.read.client_offset_files import with_client_stores
from console.services.read.open_reader import reader_for
from console.services.read.replication import read_replication, with_replication
from console.services.read.routes import BrokerHealth
from console.services.read.source import Parts, Progress

#: How long one name-server answer about brokers serves the many group reads of a refresh.
BROKERS_TTL = 1.0


class ReaderSource:
    """The `ClusterOperations` (console.services.read.source): the network process serves each
    by its name."""

    def __init__(self, cluster: ClusterConfig, config: Config) -> None:
        self.admin = open_admin(cluster, config)
        self.reader = reader_for(self.admin, cluster, routes_ttl=BROKERS_TTL)
        self.client_offset_dirs = config.client_offset_dirs
        self.next_store_times = NextStoreTimes()
        #: What the last read_groups read: read_delays, next in a refresh, checks it for moves.
        self._last_read: dict[str, GroupOffsets] = {}

    async def close(self) -> None:
        await self.admin.close()

    async def brokers(self) -> tuple[BrokerHealth, ...]:
        routes = await self.reader.fresh_routes()
        # Every address, slaves too: a broker whose master is down is read from its slave,
        # and the operator sees both (as `rmq-console brokers` shows them), with what the
        # controller says of each replica in controller mode.
        replication = await read_replication(self.admin, routes)
        return tuple(with_replication(await self.reader.broker_health(), replication))

    async def name_server_notices(self) -> tuple[str, ...]:
        unanswered = tuple(u.line() for u in self.admin.name_servers.unanswered() if u.instead)
        # A proxy found where none was named is told beside them, for as long as it serves.
        return unanswered + tuple(self.reader.found_proxy_lines())

    async def topics(self) -> list[str]:
        return await self.reader.topics()

    async def topic_queues(self, topic: str) -> list[QueueStats]:
        return list((await self.reader.topic_queues(topic)).queues)

    async def groups(self) -> list[str]:
        return list(await self.reader.groups())

    async def group_offsets(self, group: str) -> GroupOffsets:
        offsets = await self.reader.group_offsets(group)
        return await with_client_stores(self.reader, offsets, self.client_offset_dirs)

    async def read_groups(
        self, groups: Sequence[str], progress: Progress | None = None, parts: Parts | None = None
    ) -> dict[str, GroupOffsets | Exception]:
        batch = await self.reader.batch()
        batch.expect(len(groups))
        kept: dict[str, GroupOffsets] = {}

        async def read(group: str) -> GroupOffsets:
            kept[group] = offsets = await self.reader.group_offsets(group, batch=batch)
            return offsets

        answer = await gather_handing_over(read, groups, on_done=progress, parts=parts)
        self._last_read = kept
        self.next_store_times.forget_except(groups)
        return answer

    async def consume_delays(
        self, group: str, topics_by_broker: Mapping[str, Sequence[str]]
    ) -> dict[QueueKey, int]:
        spans = await self.consume_spans(group, topics_by_broker)
        return {key: span.delay_ms for key, span in spans.items()}

    async def consume_spans(
        self, group: str, topics_by_broker: Mapping[str, Sequence[str]]
    ) -> dict[QueueKey, ConsumeTimeSpan]:
        masters = await self.reader.brokers()
        pairs = [
            (masters[b], t)
            for b, topics in topics_by_broker.items()
            if b in masters
            for t in topics
        ]
        answers = await asyncio.gather(
            *(self.admin.consume_time_span(addr, topic, group) for addr, topic in pairs),
            return_exceptions=True,
        )
        now_ms = int(time.time() * 1000)
        out: dict[QueueKey, ConsumeTimeSpan] = {}
        for answer in answers:
            if isinstance(answer, dict):
                for mq, span in answer.items():
                    # A delay counted from 1970 (the next message is deleted, or nothing is
                    # committed on a 4.x broker) is no delay: the queue's time behind is unknown.
                    if known_delay(span.delay_ms, now_ms) is not None:
                        out[(mq.topic, mq.broker_name, mq.queue_id)] = span
            elif not isinstance(answer, RocketMQError):
                raise answer
        return out

    async def read_delays(
        self, wanted: Mapping[str, Mapping[str, Sequence[str]]], progress: Progress | None = None
    ) -> dict[str, dict[QueueKey, int] | Exception]:
        """consume_delays for many groups, after read_groups: a (broker, topic) whose committed
        offsets have not moved since the broker last answered is not asked again."""
        return await gather_bounded(
            lambda g: self._known_delays(g, wanted[g]), list(wanted), on_done=progress
        )

    async def _known_delays(
        self, group: str, topics_by_broker: Mapping[str, Sequence[str]]
    ) -> dict[QueueKey, int]:
        offsets = self._last_read.get(group)
        if offsets is None:
            return await self.consume_delays(group, topics_by_broker)
        out: dict[QueueKey, int] = {}
        ask: dict[str, list[str]] = {}
        for broker, topics in topics_by_broker.items():
            for topic in topics:
                queues = [q for q in offsets.queues if q.broker == broker and q.topic == topic]
                known = self.next_store_times.delays(group, queues)
                if known is None:
                    ask.setdefault(broker, []).append(topic)
                else:
                    out.update(known)
        if ask:
            asked_at = int(time.time() * 1000)
            spans = await self.consume_spans(group, ask)
            asked = [q for q in offsets.queues if q.topic in ask.get(q.broker, ())]
            self.next_store_times.learn(group, asked, spans, asked_at)
            out.update({key: span.delay_ms for key, span in spans.items()})
        return out

    async def dlq_queues(self, group: str) -> list[QueueStats]:
        return list((await self.reader.dlq_queues(group)).queues)

    async def assignments(
        self, group: str, client_ids: Sequence[str]
    ) -> dict[QueueKey, tuple[str, ...]]:
        masters = await self.reader.brokers()
        if not masters or not client_ids:
            return {}
        # Any broker forwards the request: every client heartbeats every broker.
        addr = next(iter(masters.values()))
        answers = await asyncio.gather(
            *(consumer_running_info(self.admin, addr, group, c) for c in client_ids),
            return_exceptions=True,
        )
        holders: dict[QueueKey, list[str]] = {}
        for answer in answers:
            if isinstance(answer, BaseException):
                if not isinstance(answer, RocketMQError):
                    raise answer
                continue  # a client that does not answer simply shows no queues
            # A POP client pops a broker's topic as a whole (queue id -1).
            for mq in [*answer.queues, *answer.pop_wait_ack]:
                key = (mq.topic, mq.broker_name, mq.queue_id)
                holders.setdefault(key, []).append(answer.client_id)
        return {k: tuple(sorted(v)) for k, v in holders.items()}

    async def boundary_messages(self, wanted: Sequence[BoundaryRequest]) -> list[Boundary]:
        return await read_boundaries(self.reader, wanted)
