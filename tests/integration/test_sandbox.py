"""The sandbox itself: cluster up, scenario as documented, processes cleaned up, broker restart."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from console.processes import pid_alive
from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import RocketMQError
from console.rocketmq.models import MessageModel
from console.rocketmq.topics import dlq_topic, retry_topic
from console.sandbox import scenario as sc
from console.sandbox.cluster import BROKER_NAMES
from console.sandbox.pids import command_line
from console.sandbox.ports import free_ports
from console.sandbox.runner import Sandbox, SandboxOptions, sandbox

pytestmark = pytest.mark.integration

T = TypeVar("T")


async def eventually(
    probe: Callable[[], Awaitable[T]], ok: Callable[[T], bool], timeout: float = 20.0
) -> T:
    """Poll `probe` until `ok` holds; the broker's state changes asynchronously."""
    deadline = time.monotonic() + timeout
    while True:
        value = await probe()
        if ok(value) or time.monotonic() >= deadline:
            return value
        await asyncio.sleep(0.25)


async def test_both_brokers_registered(sandbox: Sandbox) -> None:
    async with sandbox.admin() as admin:
        info = await admin.cluster_info()
    assert info.clusters[sandbox.cluster_name] == sorted(BROKER_NAMES)
    for name, addr in sandbox.broker_addrs.items():
        assert info.brokers[name].master_addr == addr
        assert addr.startswith("127.0.0.1:")


async def test_live_consumer_is_online(sandbox: Sandbox) -> None:
    async with sandbox.admin() as admin:
        for addr in sandbox.broker_addrs.values():
            conn = await admin.consumer_connections(addr, sc.GROUP_LIVE)
            assert conn.clients, f"{sc.GROUP_LIVE} has no connection on {addr}"
            assert conn.message_model == MessageModel.CLUSTERING
            assert sc.TOPIC_ORDERS in conn.subscriptions


async def test_live_lag_is_positive_and_moving(sandbox: Sandbox) -> None:
    async def progress() -> tuple[int, int]:
        """(committed, lag) of the live group on orders, summed over both brokers."""
        committed = lag = 0
        for addr in sandbox.broker_addrs.values():
            stats = await admin.consume_stats(addr, sc.GROUP_LIVE, sc.TOPIC_ORDERS)
            committed += sum(q.consumer_offset for q in stats.queues.values())
            lag += sum(q.broker_offset - q.consumer_offset for q in stats.queues.values())
        return committed, lag

    async with sandbox.admin() as admin:
        first = await progress()
        # The consumer keeps up with the trickle's average rate: once it has caught up, while
        # the trickle is at its low (2 msg/s, for half of its 60 s period) a read can find
        # every message consumed. Positive at some read in a minute, not at the first one.
        later = await eventually(
            progress, lambda now: now[0] > first[0] and now[1] > 0, timeout=60.0
        )
    assert later[0] > first[0], "the live consumer committed nothing new in 60 s"
    assert later[1] > 0, "the live group's lag was 0 at every read for 60 s"
    assert sandbox.trickle_stats.sent > 0


async def test_broadcasting_model_is_seen(sandbox: Sandbox) -> None:
    async with sandbox.admin() as admin:
        conn = await admin.consumer_connections(
            sandbox.broker_addrs["broker-a"], sc.GROUP_BROADCAST
        )
    assert conn.clients
    assert conn.message_model == MessageModel.BROADCASTING
    groups = {g.group: g for g in await sandbox.mqadmin.groups()}
    assert groups[sc.GROUP_BROADCAST].message_model == "BROADCASTING"
    assert groups[sc.GROUP_LIVE].message_model == "CLUSTERING"
    assert groups[sc.GROUP_OFFLINE].version == "OFFLINE"


async def test_hand_committed_offsets_are_as_reported(sandbox: Sandbox) -> None:
    assert sandbox.report is not None
    async with sandbox.admin() as admin:
        for group in (sc.GROUP_OFFLINE, sc.GROUP_PARTIAL, sc.GROUP_CAUGHT_UP):
            for mq, offset in sandbox.report.committed[group].items():
                addr = sandbox.broker_addrs[mq.broker_name]
                got = await admin.query_consumer_offset(addr, group, mq.topic, mq.queue_id)
                assert got == offset, (group, mq)
            conn = await admin.consumer_connections(sandbox.broker_addrs["broker-a"], group)
            assert not conn.clients, f"{group} should be offline"


async def test_partial_group_has_queues_with_nothing_committed(sandbox: Sandbox) -> None:
    assert sandbox.report is not None
    committed = sandbox.report.committed[sc.GROUP_PARTIAL]
    uncommitted = [
        mq
        for mq in sandbox.report.max_offsets
        if mq.topic == sc.TOPIC_PAYMENTS and mq not in committed
    ]
    assert committed
    assert uncommitted
    async with sandbox.admin() as admin:
        for mq in uncommitted:
            addr = sandbox.broker_addrs[mq.broker_name]
            got = await admin.query_consumer_offset(addr, sc.GROUP_PARTIAL, mq.topic, mq.queue_id)
            assert got is None, mq


async def test_retry_backlog_and_dead_letters(sandbox: Sandbox) -> None:
    assert sandbox.report is not None
    assert sandbox.report.retry_backlog > 0
    assert sandbox.report.dead_letters > 0
    progress = await sandbox.mqadmin.consumer_progress(sc.GROUP_RETRY)
    retry_rows = [r for r in progress.rows if r.topic == retry_topic(sc.GROUP_RETRY)]
    assert sum(r.diff for r in retry_rows) > 0
    async with sandbox.admin() as admin:
        dead = [
            await _max_or_zero(admin, addr, dlq_topic(sc.GROUP_DLQ))
            for addr in sandbox.broker_addrs.values()
        ]
    assert sum(dead) == sandbox.report.dead_letters


async def test_batches_separate_store_times(sandbox: Sandbox) -> None:
    """A time between two seed batches finds the first message of the later batch."""
    assert sandbox.report is not None
    earlier, later = sandbox.report.batches[2], sandbox.report.batches[3]
    between = (earlier.finished_ms + later.started_ms) // 2
    async with sandbox.admin() as admin:
        for mq in earlier.max_offsets:
            if mq.topic != sc.TOPIC_PAYMENTS:
                continue
            addr = sandbox.broker_addrs[mq.broker_name]
            found = await admin.search_offset(addr, mq.topic, mq.queue_id, between)
            assert found == earlier.max_offsets[mq], mq


async def test_stop_leaves_no_process(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    options = SandboxOptions(
        run_dir=run_dir, ports=free_ports(BROKER_NAMES), seed=False, live=False
    )
    async with sandbox(options) as sb:
        await sb.start_consumer(sc.group_plan(sc.GROUP_LIVE))
        pids = sb.pids()
        assert set(pids) == {"namesrv", *BROKER_NAMES, f"consumer-{sc.GROUP_LIVE}"}
        assert all(pid_alive(p) for p in pids.values())
    assert [n for n, p in pids.items() if pid_alive(p)] == []
    leftovers = [p for p in _all_pids() if str(run_dir) in command_line(p)]
    assert leftovers == []


async def test_a_broker_can_be_stopped_and_restarted(sandbox: Sandbox) -> None:
    name = "broker-b"
    addr = sandbox.broker_addrs[name]
    async with sandbox.admin() as admin:
        before = await admin.max_offset(addr, sc.TOPIC_PAYMENTS, 0)
        old_pid = sandbox.pids()[name]

        await sandbox.stop_broker(name)
        assert not pid_alive(old_pid)
        info = await eventually(admin.cluster_info, lambda i: name not in i.brokers)
        assert name not in info.brokers

        await sandbox.start_broker(name)
        info = await admin.cluster_info()
        assert info.brokers[name].master_addr == addr
        assert sandbox.pids()[name] != old_pid
        # Same store: the messages written before the stop are still there.
        assert await admin.max_offset(addr, sc.TOPIC_PAYMENTS, 0) == before


async def _max_or_zero(admin: AdminClient, addr: str, topic: str) -> int:
    try:
        return await admin.max_offset(addr, topic, 0)
    except RocketMQError:
        return 0  # this broker never created the topic


def _all_pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]
