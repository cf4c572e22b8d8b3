"""Every admin operation against the real sandbox cluster (RocketMQ 5.3.3, two brokers).

These tests make their own topics and groups (prefix `it-`), so the seeded scenario that the
mqadmin comparisons read stays as it was seeded.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest

from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import ResponseCode
from console.rocketmq.errors import BrokerError, ConnectError
from console.rocketmq.models import BoundaryType, MessageQueue
from console.rocketmq.topics import group_topics
from console.sandbox import scenario
from tests.support.sends import indexed

pytestmark = pytest.mark.integration


def _name(kind: str) -> str:
    return f"it-{kind}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
async def admin(sandbox: Any) -> Any:
    async with AdminClient(sandbox.namesrv_addr, timeout=5) as client:
        yield client


@pytest.fixture
async def brokers(admin: AdminClient) -> dict[str, str]:
    return await admin.master_addrs()


async def _topic(admin: AdminClient, brokers: dict[str, str], queues: int = 4) -> str:
    topic = _name("topic")
    for addr in brokers.values():
        await admin.create_topic(addr, topic, read_queues=queues, write_queues=queues)
    return topic


async def test_cluster_info_lists_both_brokers(admin: AdminClient, sandbox: Any) -> None:
    info = await admin.cluster_info()
    assert set(info.brokers) == {"broker-a", "broker-b"}
    (cluster,) = info.clusters
    assert info.clusters[cluster] == ["broker-a", "broker-b"]
    for name, broker in info.brokers.items():
        assert broker.cluster == cluster
        assert broker.master_addr == sandbox.broker_addrs[name]
    assert admin.server_versions[sandbox.namesrv_addr] == 479  # the server stamps V5_3_3


async def test_topics_route_and_stats(admin: AdminClient, brokers: dict[str, str]) -> None:
    topic = await _topic(admin, brokers, queues=3)
    route = await admin.topic_route(topic)
    assert [q.broker_name for q in route.queues] == ["broker-a", "broker-b"]
    assert all(q.read_queue_nums == 3 and q.write_queue_nums == 3 for q in route.queues)
    assert all(q.perm == 6 for q in route.queues)
    assert topic in await admin.topic_list()
    (cluster,) = (await admin.cluster_info()).clusters
    assert topic in await admin.topics_by_cluster(cluster)

    addr = brokers["broker-a"]
    for i in range(5):
        result = await admin.send_message(addr, topic, 1, f"m{i}".encode(), tags="t", keys=f"k{i}")
        assert (result.queue_id, result.queue_offset) == (1, i)
        assert result.msg_id
    await indexed(admin, addr, topic, {1: 5})
    stats = await admin.topic_stats(addr, topic)
    assert set(stats) == {MessageQueue(topic, "broker-a", q) for q in range(3)}
    q1 = stats[MessageQueue(topic, "broker-a", 1)]
    assert (q1.min_offset, q1.max_offset) == (0, 5)
    assert q1.last_update_timestamp > 0
    assert await admin.min_offset(addr, topic, 1) == 0
    assert await admin.max_offset(addr, topic, 1) == 5
    assert await admin.max_offset(addr, topic, 0) == 0
    earliest = await admin.earliest_store_time(addr, topic, 1)
    assert earliest is not None
    assert abs(earliest - time.time() * 1000) < 60_000
    assert await admin.earliest_store_time(addr, topic, 2) is None


async def test_unknown_topic_is_a_typed_error(admin: AdminClient, brokers: dict[str, str]) -> None:
    with pytest.raises(BrokerError) as info:
        await admin.topic_route("it-no-such-topic")
    assert info.value.code == ResponseCode.TOPIC_NOT_EXIST
    with pytest.raises(BrokerError) as info:
        await admin.topic_stats(brokers["broker-a"], "it-no-such-topic")
    assert info.value.code == ResponseCode.TOPIC_NOT_EXIST


async def test_search_offset_by_timestamp_with_boundaries(
    admin: AdminClient, brokers: dict[str, str]
) -> None:
    topic = await _topic(admin, brokers, queues=1)
    addr = brokers["broker-b"]
    # Broker and test share a clock: each store time lies inside [sent_before, sent_after].
    window: list[tuple[int, int]] = []
    for i in range(6):
        before = int(time.time() * 1000)
        await admin.send_message(addr, topic, 0, f"m{i}".encode())
        window.append((before, int(time.time() * 1000)))
        await asyncio.sleep(0.03)  # a gap between store times, so "between two messages" exists
    await indexed(admin, addr, topic, {0: 6})
    first = await admin.earliest_store_time(addr, topic, 0)
    assert first is not None
    assert window[0][0] <= first <= window[0][1]
    # Exactly at message 0: LOWER gives the first at-or-after, UPPER the last at-or-before.
    assert await admin.search_offset(addr, topic, 0, first, BoundaryType.LOWER) == 0
    assert await admin.search_offset(addr, topic, 0, first, BoundaryType.UPPER) == 0
    # Strictly between message 2 and message 3.
    gap = (window[2][1] + window[3][0]) // 2
    assert window[2][1] < gap < window[3][0]
    assert await admin.search_offset(addr, topic, 0, gap, BoundaryType.LOWER) == 3
    assert await admin.search_offset(addr, topic, 0, gap, BoundaryType.UPPER) == 2
    # After everything: LOWER says "nothing to re-consume" (the max offset); UPPER the last one.
    late = window[-1][1] + 60_000
    assert await admin.search_offset(addr, topic, 0, late, BoundaryType.LOWER) == 6
    assert await admin.search_offset(addr, topic, 0, late, BoundaryType.UPPER) == 5
    assert await admin.search_offset(addr, topic, 0, first - 60_000) == 0


async def test_groups_offsets_update_query_and_clone(
    admin: AdminClient, brokers: dict[str, str]
) -> None:
    topic = await _topic(admin, brokers, queues=2)
    group, twin = _name("group"), _name("group")
    addr = brokers["broker-a"]
    for g in (group, twin):
        await admin.create_group(addr, g, retry_max_times=3)
    groups = await admin.subscription_groups(addr)
    assert groups[group].retry_max_times == 3
    assert "TOOLS_CONSUMER" in groups  # the broker's own groups are listed too
    for i in range(4):
        await admin.send_message(addr, topic, 0, f"m{i}".encode())
    await indexed(admin, addr, topic, {0: 4})

    assert await admin.query_consumer_offset(addr, group, topic, 0) is None
    assert await admin.update_consumer_offset(addr, group, topic, 0, 3) is None  # no remark
    assert await admin.query_consumer_offset(addr, group, topic, 0) == 3
    await admin.update_consumer_offset(addr, group, topic, 0, 0)
    assert await admin.query_consumer_offset(addr, group, topic, 0) == 0  # 0 is not "unknown"

    await admin.update_consumer_offset(addr, group, topic, 0, 2)
    stats = await admin.consume_stats(addr, group)
    q0 = stats.queues[MessageQueue(topic, "broker-a", 0)]
    assert (q0.broker_offset, q0.consumer_offset) == (4, 2)
    assert q0.last_timestamp > 0  # store time of message 1, the last one consumed
    q1 = stats.queues[MessageQueue(topic, "broker-a", 1)]
    assert q1.consumer_offset == 0  # never committed: the broker says 0 ...
    assert await admin.query_consumer_offset(addr, group, topic, 1) is None  # ... it is unknown

    await admin.clone_group_offset(addr, group, twin, topic, offline=True)
    assert await admin.query_consumer_offset(addr, twin, topic, 0) == 2


async def test_update_offset_refuses_unknown_group(
    admin: AdminClient, brokers: dict[str, str]
) -> None:
    topic = await _topic(admin, brokers, queues=1)
    with pytest.raises(BrokerError) as info:
        await admin.update_consumer_offset(brokers["broker-a"], "it-never-created", topic, 0, 1)
    assert info.value.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST


async def test_server_side_reset_and_broker_config(
    admin: AdminClient, brokers: dict[str, str]
) -> None:
    addr = brokers["broker-b"]
    config = await admin.broker_config(addr)
    assert config["brokerName"] == "broker-b"
    assert await admin.server_side_reset(addr) is True
    runtime = await admin.broker_runtime(addr)
    assert runtime["brokerVersionDesc"] == "V5_3_3"

    topic = await _topic(admin, brokers, queues=2)
    group = _name("group")
    await admin.create_group(addr, group)
    for i in range(6):
        await admin.send_message(addr, topic, i % 2, b"x")
    await indexed(admin, addr, topic, {0: 3, 1: 3})
    await admin.update_consumer_offset(addr, group, topic, 0, 3)
    # Reset queue 0 to an explicit offset, then the whole topic to "latest".
    table = await admin.reset_offset(addr, group, topic, timestamp_ms=0, queue_id=0, offset=1)
    assert table == {MessageQueue(topic, "broker-b", 0): 1}
    assert await admin.query_consumer_offset(addr, group, topic, 0) == 1
    table = await admin.reset_offset(addr, group, topic, timestamp_ms=-1)
    assert table == {MessageQueue(topic, "broker-b", 0): 3, MessageQueue(topic, "broker-b", 1): 3}
    # A pending server-side reset swallows a plain commit; the broker says so only in a remark
    # (the offset writer reads back: tests/integration/test_offset_writer.py).
    remark = await admin.update_consumer_offset(addr, group, topic, 0, 2)
    assert remark == "Offset has been previously reset"
    assert await admin.query_consumer_offset(addr, group, topic, 0) == 3


async def test_reset_to_an_offset_outside_the_queue_is_refused(
    admin: AdminClient, brokers: dict[str, str]
) -> None:
    addr = brokers["broker-a"]
    topic = await _topic(admin, brokers, queues=1)
    group = _name("group")
    await admin.create_group(addr, group)
    await admin.send_message(addr, topic, 0, b"x")
    await indexed(admin, addr, topic, {0: 1})
    with pytest.raises(BrokerError) as info:
        await admin.reset_offset(addr, group, topic, timestamp_ms=0, queue_id=0, offset=99)
    assert "not in consume queue range" in (info.value.remark or "")


async def test_live_and_broadcasting_consumers_are_seen(admin: AdminClient, sandbox: Any) -> None:
    addr = sandbox.broker_addrs["broker-a"]
    live = await admin.consumer_connections(addr, scenario.GROUP_LIVE)
    assert live.clients, "the sandbox's Java push consumer should be online"
    assert live.message_model == "CLUSTERING"
    assert live.consume_type == "CONSUME_PASSIVELY"
    assert all(c.language == "JAVA" and c.version == 479 for c in live.clients)
    assert set(live.subscriptions) >= {scenario.TOPIC_ORDERS}
    broadcast = await admin.consumer_connections(addr, scenario.GROUP_BROADCAST)
    assert broadcast.message_model == "BROADCASTING"
    assert broadcast.clients
    offline = await admin.consumer_connections(addr, scenario.GROUP_OFFLINE)
    assert offline.clients == []


async def test_consume_time_span(admin: AdminClient, sandbox: Any) -> None:
    addr = sandbox.broker_addrs["broker-a"]
    spans = await admin.consume_time_span(addr, scenario.TOPIC_ORDERS, scenario.GROUP_OFFLINE)
    assert spans
    assert all(s.queue.broker_name == "broker-a" for s in spans.values())
    behind = [s for s in spans.values() if s.delay_ms > 0]
    assert behind, "the offline group is behind, so some queue has a delay"
    assert all(s.min_timestamp <= s.max_timestamp for s in spans.values())


async def test_retry_and_dlq_topics_of_a_group(admin: AdminClient, sandbox: Any) -> None:
    retry, dlq = group_topics(scenario.GROUP_DLQ)
    topics = await admin.topic_list()
    assert retry in topics
    assert dlq in topics


async def test_unreachable_broker_is_named_within_the_timeout() -> None:
    async with AdminClient("127.0.0.1:1", timeout=1) as client:
        started = time.monotonic()
        with pytest.raises(ConnectError) as info:
            await client.cluster_info()
        assert time.monotonic() - started < 2
    assert "127.0.0.1:1" in str(info.value)


async def test_hundreds_in_flight_on_one_connection(
    admin: AdminClient, brokers: dict[str, str]
) -> None:
    topic = await _topic(admin, brokers, queues=4)
    addr = brokers["broker-a"]
    for q in range(4):
        for _ in range(q):
            await admin.send_message(addr, topic, q, b"x")
    await indexed(admin, addr, topic, {0: 0, 1: 1, 2: 2, 3: 3})
    results = await asyncio.gather(*(admin.max_offset(addr, topic, i % 4) for i in range(400)))
    assert results == [i % 4 for i in range(400)]
