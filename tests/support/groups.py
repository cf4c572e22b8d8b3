"""Groups the sandbox tests make for themselves (new, with commits behind each queue's max), their
committed offsets, and plans for them."""

from __future__ import annotations

import asyncio
import time
import uuid

from console.domain.spec import ResetSpec, Scope, ShiftBy
from console.rocketmq.admin import AdminClient
from console.rocketmq.topics import retry_topic
from console.sandbox.runner import Sandbox
from console.sandbox.scenario import TOPIC_ORDERS
from console.services.apply.offset_writer import OffsetWrite, OffsetWriter
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import Workspace
from console.services.plan.load import LoadedPlan, load_plan
from console.services.plan.planner import Planner

Queue = tuple[str, int]  # broker name, queue id
BEHIND = 5  # the group's commits stay this far behind each queue's max offset


async def new_group(
    sandbox: Sandbox, admin: AdminClient, topic: str = TOPIC_ORDERS
) -> tuple[str, dict[Queue, int]]:
    """A group of its own on `topic` (the scenario's orders), committed BEHIND messages short
    of the end of every queue; returns it with those commits."""
    group = f"it-apply-{uuid.uuid4().hex[:8]}"
    commits: dict[Queue, int] = {}
    writes = []
    for broker, addr in sorted(sandbox.broker_addrs.items()):
        await admin.create_group(addr, group)
        for mq, stats in (await admin.topic_stats(addr, topic)).items():
            assert stats.max_offset > BEHIND + 3, f"the scenario seeds every {topic} queue"
            commits[(broker, mq.queue_id)] = stats.max_offset - BEHIND
            writes.append(OffsetWrite(addr, group, topic, mq.queue_id, stats.max_offset - BEHIND))
    report = await OffsetWriter(admin).write(writes)
    assert report.ok, report.summary()
    return group, commits


async def committed(
    sandbox: Sandbox, admin: AdminClient, group: str, topic: str = TOPIC_ORDERS
) -> dict[Queue, int | None]:
    out: dict[Queue, int | None] = {}
    for broker, addr in sorted(sandbox.broker_addrs.items()):
        for mq in await admin.topic_stats(addr, topic):
            out[(broker, mq.queue_id)] = await admin.query_consumer_offset(
                addr, group, topic, mq.queue_id
            )
    return out


async def shift_plan(
    sandbox: Sandbox, admin: AdminClient, runner: SparkRunner, ws: Workspace, group: str
) -> LoadedPlan:
    reader = sandbox.reader(admin)
    planner = Planner(ws, runner, reader=reader, cluster="sandbox")
    spec = ResetSpec(Scope("sandbox", (group,), topics=(TOPIC_ORDERS,)), ShiftBy(-3))
    result = await planner.plan(spec)
    return load_plan(ws, result.uri, cluster="sandbox", now_ms=int(time.time() * 1000))


BACK_MS = 5_000  # the reset time: this long before the oldest message the group stands at


async def group_with_retry_backlog(sandbox: Sandbox, admin: AdminClient) -> tuple[str, int]:
    """A group of its own whose %RETRY% topic holds messages it has not consumed."""
    group, _ = await new_group(sandbox, admin)
    topic = retry_topic(group)
    writes = []
    for addr in sandbox.broker_addrs.values():
        await admin.create_topic(addr, topic, read_queues=1, write_queues=1)
    for addr in sandbox.broker_addrs.values():
        for i in range(4):
            await admin.send_message(addr, topic, 0, f"retry {i}".encode(), keys=f"r{i}")
        writes.append(OffsetWrite(addr, group, topic, 0, 1))
    assert (await OffsetWriter(admin).write(writes)).ok
    return group, 3 * len(sandbox.broker_addrs)


def fresh_group(sandbox: Sandbox, topic: str = TOPIC_ORDERS) -> tuple[str, dict[Queue, int]]:
    """`new_group`, for a test that is not a coroutine."""

    async def make() -> tuple[str, dict[Queue, int]]:
        async with sandbox.admin(timeout=10) as admin:
            return await new_group(sandbox, admin, topic)

    return asyncio.run(make())


def offsets_of(sandbox: Sandbox, group: str, topic: str = TOPIC_ORDERS) -> dict[Queue, int | None]:
    """`committed`, for a test that is not a coroutine."""

    async def read() -> dict[Queue, int | None]:
        async with sandbox.admin(timeout=10) as admin:
            return await committed(sandbox, admin, group, topic)

    return asyncio.run(read())
