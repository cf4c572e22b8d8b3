"""Reading many groups in one batch: the same offsets as reading each alone, in fewer requests;
and the delays of queues whose committed offsets did not move, without asking again.

The groups here are static after the seed (the live group and the growing topic are left out),
so the two readings must agree, but for the ends of retry topics.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from typing import Any

import pytest

from console.config import ClusterConfig, Config
from console.domain.lag_trend import lagging_topics
from console.domain.offsets import GroupOffsets
from console.domain.readings import Sample
from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import NotFoundError
from console.rocketmq.topics import dlq_topic, is_retry_topic
from console.sandbox import scenario
from console.services.read.batch import TABLE_FROM_GROUPS
from console.services.read.reader import ClusterReader
from console.services.read.reader_source import ReaderSource

pytestmark = pytest.mark.integration

STATIC = [
    scenario.GROUP_RETRY,
    scenario.GROUP_DLQ,
    scenario.GROUP_PARTIAL,
    scenario.GROUP_CAUGHT_UP,
]


def settled(offsets: GroupOffsets) -> GroupOffsets:
    """The reading without what may move between two reads of a static group: the time, and
    the end of its retry topic (retries scheduled during the seed land for minutes after)."""
    return dataclasses.replace(
        offsets,
        taken_at_ms=0,
        queues=tuple(
            q._replace(max_offset=0) if is_retry_topic(q.topic) else q for q in offsets.queues
        ),
    )


class CountingAdmin(AdminClient):
    """The real client, counting topic-stats requests by topic."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.asked: Counter[str] = Counter()

    async def topic_stats(self, addr: str, topic: str) -> Any:
        self.asked[topic] += 1
        return await super().topic_stats(addr, topic)


async def test_a_batch_reads_what_single_reads_do_with_fewer_requests(sandbox: Any) -> None:
    admin = CountingAdmin(sandbox.namesrv_addr, timeout=5)
    async with admin:
        reader = ClusterReader(admin)
        brokers = len(await reader.brokers())
        alone = {g: await reader.group_offsets(g) for g in STATIC}
        asked_alone = Counter(admin.asked)
        admin.asked.clear()

        batch = await reader.batch()
        together = {g: await reader.group_offsets(g, batch=batch) for g in STATIC}
        asked_together = Counter(admin.asked)

    for group in STATIC:
        assert settled(together[group]) == settled(alone[group]), group
        for a, t in zip(alone[group].retry_queues, together[group].retry_queues, strict=True):
            assert a.max_offset <= t.max_offset, a.key
    assert together[scenario.GROUP_DLQ].dlq_messages > 0

    # Each group alone asks for its topic's stats on every broker; the batch asks once.
    shared = {scenario.TOPIC_PAYMENTS, scenario.TOPIC_AUDIT}
    for topic in shared:
        assert asked_alone[topic] > brokers, topic
        assert asked_together[topic] == brokers, topic
    # Alone, every group asks for its DLQ topic; in a batch only the group that has one.
    for group in STATIC:
        assert asked_alone[dlq_topic(group)] == brokers, group
    assert {t for t in asked_together if t.startswith("%DLQ%")} == {dlq_topic(scenario.GROUP_DLQ)}


async def test_delays_of_queues_that_did_not_move_are_not_asked_again(sandbox: Any) -> None:
    cluster = ClusterConfig(name="sandbox", namesrv=(sandbox.namesrv_addr,))
    backend = ReaderSource(cluster, Config(clusters=(cluster,)))
    asked: list[tuple[str, str]] = []
    consume_time_span = backend.admin.consume_time_span

    async def counted(addr: str, topic: str, group: str) -> Any:
        asked.append((topic, group))
        return await consume_time_span(addr, topic, group)

    backend.admin.consume_time_span = counted  # type: ignore[method-assign]
    group = scenario.GROUP_OFFLINE  # offline: its committed offsets stay, its topic grows
    try:
        read = await backend.read_groups([group])
        offsets = read[group]
        assert isinstance(offsets, GroupOffsets)
        wanted = {group: lagging_topics(Sample.of(offsets))}
        assert wanted[group], "the offline group has lag on some broker"
        pairs = sum(len(t) for t in wanted[group].values())

        first = await backend.read_delays(wanted)
        assert len(asked) == pairs
        await asyncio.sleep(1.0)
        await backend.read_groups([group])
        second = await backend.read_delays(wanted)
        assert len(asked) == pairs, "nothing moved, nothing asked"

        fresh = await backend.consume_delays(group, wanted[group])  # asks the brokers
        first_delays, second_delays = first[group], second[group]
        assert isinstance(first_delays, dict)
        assert isinstance(second_delays, dict)
        assert set(second_delays) == set(fresh)
        for key, delay in fresh.items():
            if delay:
                assert abs(second_delays[key] - delay) <= 500, key
                assert second_delays[key] - first_delays[key] >= 900, key
    finally:
        await backend.close()


class TopicCountingAdmin(AdminClient):
    """The real client, counting consume-stats requests with and without a topic."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.consume_stats_asked: Counter[str | None] = Counter()

    async def consume_stats(self, addr: str, group: str, topic: str | None = None) -> Any:
        self.consume_stats_asked[topic] += 1
        return await super().consume_stats(addr, group, topic)


async def test_a_batch_of_many_groups_asks_each_topic_the_offset_tables_hold(
    sandbox: Any,
) -> None:
    """A fleet-sized batch asks each group's consume stats topic by topic (the topics from the
    brokers' offset tables, not the brokers' walk of them per group) and reads the same."""
    admin = TopicCountingAdmin(sandbox.namesrv_addr, timeout=5)
    async with admin:
        reader = ClusterReader(admin)
        alone = {g: await reader.group_offsets(g) for g in STATIC}
        assert set(admin.consume_stats_asked) == {None}
        admin.consume_stats_asked.clear()

        batch = await reader.batch()
        batch.expect(TABLE_FROM_GROUPS)
        together = {g: await reader.group_offsets(g, batch=batch) for g in STATIC}
        with pytest.raises(NotFoundError):
            await reader.group_offsets("no-such-group-anywhere", batch=batch)

    assert None not in admin.consume_stats_asked
    assert admin.consume_stats_asked[f"%RETRY%{scenario.GROUP_RETRY}"] > 0
    for group in STATIC:
        assert settled(together[group]) == settled(alone[group]), group
        assert together[group].queues, group
