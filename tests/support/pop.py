"""A POP group reset while its consumer runs: what the tests of resets on RocketMQ 5's POP
consumption share (the proxy cluster at 5.3.3, the newest release)."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

from console.domain.journal import Journal, QueueState
from console.domain.reset_paths import ResetPathKind
from console.domain.spec import ResetSpec, Scope, ShiftBy
from console.sandbox.pop import TOPIC_CLICKS, set_pop_mode
from console.sandbox.runner import Sandbox
from console.services.apply.check import ApplyCheck
from console.services.apply.intents import ApplyPlan
from console.services.apply.session import ApplySession
from console.services.apply.write_check import Confirmation, WriteCheck
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import Workspace
from console.services.plan.load import load_plan
from console.services.plan.planner import Planner
from tests.integration.consumer_log import redelivered_from
from tests.support.writes import write_access

CLUSTER = "pops"
BACK = 3  # messages replayed on every queue


async def plan_back(sb: Sandbox, runner: SparkRunner, ws: Path, group: str, topic: str) -> str:
    """A plan moving `group` back BACK messages on every queue of `topic`; its URI."""
    async with sb.admin(timeout=10) as admin:
        reader = sb.reader(admin)
        planner = Planner(Workspace(ws), runner, reader=reader, cluster=CLUSTER)
        spec = ResetSpec(Scope(CLUSTER, (group,), topics=(topic,)), ShiftBy(-BACK))
        return (await planner.plan(spec)).uri


async def popped_everything(sb: Sandbox, group: str, topic: str, timeout: float = 90.0) -> None:
    """Until the group's committed offsets reach every queue's max: POP moves them when the
    messages are popped."""
    deadline = time.monotonic() + timeout
    async with sb.admin(timeout=10) as admin:
        while True:
            short = []
            for broker, addr in sorted(sb.broker_addrs.items()):
                for mq, stats in (await admin.topic_stats(addr, topic)).items():
                    at = await admin.query_consumer_offset(addr, group, topic, mq.queue_id)
                    if at != stats.max_offset:
                        short.append(f"{broker}:{mq.queue_id} at {at} of {stats.max_offset}")
            if not short:
                return
            assert time.monotonic() < deadline, f"{group} did not pop everything: {short}"
            await asyncio.sleep(1)


async def reset_a_popping_group(
    sb: Sandbox, runner: SparkRunner, ws: Path, *, orderly: bool, topic: str = TOPIC_CLICKS
) -> Journal:
    """A new group pops `topic` (in order per queue with `orderly`: FIFO) and acks all of it;
    it is moved back BACK messages by an apply session while its consumer runs. The check
    must choose the brokers' own reset, the read-back verify every queue, and the consumer be
    handed each queue's messages from the target again; the journal."""
    group = f"pop-{'fifo' if orderly else 'acker'}-{uuid.uuid4().hex[:6]}"
    async with sb.admin(timeout=10) as admin:
        for addr in sb.broker_addrs.values():
            await admin.create_group(addr, group)
            await set_pop_mode(admin, addr, topic, group)
    consumer = await sb.start_pop_consumer(group, topic, orderly=orderly)
    try:
        await popped_everything(sb, group, topic)
        uri = await plan_back(sb, runner, ws, group, topic)
        plan = load_plan(Workspace(ws), uri, cluster=CLUSTER, now_ms=int(time.time() * 1000))
        seen_from = consumer.log.stat().st_size
        checks: list[WriteCheck] = []

        async def confirm(check: WriteCheck) -> Confirmation:
            checks.append(check)
            return Confirmation(check.names)

        async with sb.admin(timeout=10) as admin:
            reader = sb.reader(admin)
            proxies = (sb.proxy_addr,) if sb.proxy_addr else ()
            access = write_access(reader, ws, CLUSTER, proxies=proxies)
            result = await ApplySession(access, ApplyPlan(plan)).run(confirm)

        (check,) = checks
        assert isinstance(check, ApplyCheck)
        (writes,) = check.groups
        assert writes.pop
        assert writes.consumers_online == 1
        assert writes.path.kind is ResetPathKind.SERVER_SIDE
        assert "popped and not acked still come back" in writes.path.reason
        journal = result.journal
        assert journal is not None, result.refused
        unverified = [(q.broker, q.queue_id, q.state.value, q.detail) for q in journal.queues]
        assert {q.state for q in journal.queues} == {QueueState.VERIFIED}, unverified
        targets = {(q.broker, q.queue_id): q.target for q in journal.queues}
        again = await redelivered_from(consumer.log, seen_from, targets, topic)
        assert again == targets
        return journal
    finally:
        await consumer.stop()
