"""Seeds the scenario of `console.sandbox.scenario` into a fresh cluster with our admin client."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import ResponseCode
from console.rocketmq.errors import BrokerError, RocketMQError
from console.rocketmq.models import MessageModel, MessageQueue, SendResult
from console.rocketmq.topics import dlq_topic, retry_topic
from console.sandbox import scenario as sc
from console.sandbox.errors import SeedError
from console.services.apply.offset_writer import OffsetWrite, OffsetWriter
from console.services.infra.fanout import Limit

_SEND_CONCURRENCY = 16
_BUSY_RETRIES = 20
RETRY_TARGET = 40  # messages in %RETRY%risk-engine before its consumer may stop
DLQ_TARGET = 10  # messages in %DLQ%fraud-audit before its consumer is stopped
_DELAY_LEVEL_1_S = 1.0  # SandboxConsumer retries at delay level 1


class RunningConsumer(Protocol):
    async def stop(self, grace: float = ...) -> None: ...


Launcher = Callable[[sc.GroupPlan], Coroutine[Any, Any, RunningConsumer]]


@dataclass(frozen=True, slots=True)
class SeedBatch:
    """One timed batch of sends. A timestamp between two batches' times separates them."""

    index: int
    started_ms: int  # wall clock just before the first send of the batch
    finished_ms: int  # wall clock after the last send was acknowledged
    max_offsets: dict[MessageQueue, int]  # every queue's max offset after this batch


@dataclass(frozen=True, slots=True)
class SeedReport:
    seconds: float
    batches: list[SeedBatch]
    committed: dict[str, dict[MessageQueue, int]]  # hand-committed offsets, by group
    retry_backlog: int  # unconsumed messages in %RETRY%risk-engine after its consumer stopped
    dead_letters: int  # messages in %DLQ%fraud-audit
    phases: dict[str, float]  # seconds per seeding step
    #: The queue offset of each poison message sent (scenario.POISON_KEY), by queue
    poisoned: dict[MessageQueue, int]

    @property
    def max_offsets(self) -> dict[MessageQueue, int]:
        """Max offsets when seeding ended (orders grows later; payments and audit do not)."""
        return self.batches[-1].max_offsets

    def messages(self, topic: str) -> int:
        return sum(n for mq, n in self.max_offsets.items() if mq.topic == topic)


async def seed_scenario(
    admin: AdminClient,
    brokers: Mapping[str, str],
    launch: Launcher,
    after_create: Callable[[], None] | None = None,
) -> SeedReport:
    """Create topics and groups, send the messages, commit offsets, run the failing consumers.

    `brokers` maps broker name to master address; it must be a fresh cluster. `after_create`
    is called once topics and groups exist, so a caller can start its own consumers early.
    """
    started = last = time.monotonic()
    phases: dict[str, float] = {}

    def lap(phase: str) -> None:
        nonlocal last
        now = time.monotonic()
        phases[phase] = now - last
        last = now

    await create_resources(admin, brokers)
    lap("create")
    if after_create is not None:
        after_create()
    # A consumer JVM takes seconds to boot: the failing ones boot while the messages go out.
    starting = {
        name: asyncio.create_task(launch(sc.group_plan(name)), name=f"launch-{name}")
        for name in (sc.GROUP_RETRY, sc.GROUP_DLQ)
    }
    try:
        batches = await send_batches(admin, brokers)
        poisoned = await send_poison(admin, brokers)
        lap("send")
        committed = await commit_by_hand(admin, brokers, batches[-1].max_offsets)
        lap("commit")
        retry_backlog, dead_letters = await run_failing_consumers(admin, brokers, starting)
        lap("consumers")
    finally:
        # A no-op once launched: the launcher owns, and stops, what it started.
        for task in starting.values():
            task.cancel()
        await asyncio.gather(*starting.values(), return_exceptions=True)
    return SeedReport(
        seconds=time.monotonic() - started,
        batches=batches,
        committed=committed,
        retry_backlog=retry_backlog,
        dead_letters=dead_letters,
        phases=phases,
        poisoned=poisoned,
    )


async def create_resources(admin: AdminClient, brokers: Mapping[str, str]) -> None:
    """Topics, groups and the groups' %RETRY% topics on every broker, then wait for routes.

    Retry topics are created up front even though brokers create them on a consumer's first
    heartbeat: a group that only has hand-committed offsets needs one for mqadmin to find it,
    and a Java consumer only learns routes that exist when it starts (others at its next poll).
    """
    topics = [(t.name, t.queues_per_broker) for t in sc.TOPICS]
    topics += [(retry_topic(g.name), 1) for g in sc.GROUPS if g.model is MessageModel.CLUSTERING]
    for addr in brokers.values():
        for topic, queues in topics:
            await admin.create_topic(addr, topic, read_queues=queues, write_queues=queues)
        for group in sc.GROUPS:
            await admin.create_group(
                addr, group.name, broadcast_enable=True, retry_max_times=group.retry_max_times
            )
    await wait_for_routes(admin, [t for t, _ in topics], set(brokers))


async def wait_for_routes(
    admin: AdminClient, topics: list[str], brokers: set[str], timeout: float = 30.0
) -> None:
    deadline = time.monotonic() + timeout
    pending = list(topics)
    while pending:
        still: list[str] = []
        for topic in pending:
            try:
                route = await admin.topic_route(topic)
            except RocketMQError:
                still.append(topic)
                continue
            if {q.broker_name for q in route.queues} != brokers:
                still.append(topic)
        pending = still
        if pending and time.monotonic() >= deadline:
            raise SeedError(f"name server has no complete route for {pending} after {timeout}s")
        if pending:
            await asyncio.sleep(0.2)


async def send_batches(admin: AdminClient, brokers: Mapping[str, str]) -> list[SeedBatch]:
    names = sorted(brokers)
    plan = [
        (topic, broker, queue_id, topic.messages_in(b_index, queue_id))
        for topic in sc.TOPICS
        for b_index, broker in enumerate(names)
        for queue_id in range(topic.queues_per_broker)
    ]
    offsets = {MessageQueue(t.name, b, q): 0 for t, b, q, _ in plan}
    limit = Limit(_SEND_CONCURRENCY)
    batches: list[SeedBatch] = []

    async def send(topic: sc.TopicPlan, broker: str, queue_id: int, seq: int, batch: int) -> None:
        body = {"topic": topic.name, "broker": broker, "queue": queue_id, "seq": seq}
        result = await limit.run(
            lambda: send_patiently(
                admin,
                brokers[broker],
                topic.name,
                queue_id,
                json.dumps(body | {"batch": batch}).encode(),
                tags=topic.tags,
                keys=f"{topic.name}-{broker}-{queue_id}-{seq}",
            )
        )
        mq = MessageQueue(topic.name, broker, queue_id)
        offsets[mq] = max(offsets[mq], result.queue_offset + 1)

    for batch in range(sc.BATCHES):
        if batch:
            await asyncio.sleep(sc.BATCH_PAUSE_S)
        started = _now_ms()
        sends = []
        for topic, broker, queue_id, total in plan:
            first, count = _batch_slice(total, batch)
            sends += [send(topic, broker, queue_id, s, batch) for s in range(first, first + count)]
        await asyncio.gather(*sends)
        batches.append(SeedBatch(batch, started, _now_ms(), dict(offsets)))
    return batches


async def send_patiently(
    admin: AdminClient,
    addr: str,
    topic: str,
    queue_id: int,
    body: bytes,
    *,
    tags: str,
    keys: str,
) -> SendResult:
    """Send, retrying while the broker says it is busy, as the Java producer does."""
    attempt = 0
    while True:
        try:
            return await admin.send_message(addr, topic, queue_id, body, tags=tags, keys=keys)
        except BrokerError as exc:
            attempt += 1
            if exc.code != ResponseCode.SYSTEM_BUSY or attempt >= _BUSY_RETRIES:
                raise
            await asyncio.sleep(0.1 * attempt)


async def send_poison(admin: AdminClient, brokers: Mapping[str, str]) -> dict[MessageQueue, int]:
    """The poison message on `scenario.POISON_QUEUE` of ledger, then a few ordinary ones behind
    it: ledger-sync stops there with messages waiting. Returns the poison's queue and offset."""
    plan = sc.topic_plan(sc.TOPIC_LEDGER)
    broker_index, queue_id = sc.POISON_QUEUE
    broker = sorted(brokers)[broker_index]
    addr = brokers[broker]
    poison = await send_patiently(
        admin,
        addr,
        plan.name,
        queue_id,
        b'{"poison":true}',
        tags=plan.tags,
        keys=f"{sc.POISON_KEY} {plan.name}-poison",
    )
    for n in range(sc.POISON_BACKLOG):
        await send_patiently(
            admin,
            addr,
            plan.name,
            queue_id,
            json.dumps({"topic": plan.name, "behind_poison": n}).encode(),
            tags=plan.tags,
            keys=f"{plan.name}-behind-poison-{n}",
        )
    return {MessageQueue(plan.name, broker, queue_id): poison.queue_offset}


def _batch_slice(total: int, batch: int) -> tuple[int, int]:
    """First sequence number and count of a queue's messages that go in `batch`."""
    size, extra = divmod(total, sc.BATCHES)
    first = batch * size + min(batch, extra)
    return first, size + (1 if batch < extra else 0)


async def commit_by_hand(
    admin: AdminClient, brokers: Mapping[str, str], max_offsets: Mapping[MessageQueue, int]
) -> dict[str, dict[MessageQueue, int]]:
    first_broker = sorted(brokers)[0]
    targets: dict[str, dict[MessageQueue, int]] = {
        sc.GROUP_OFFLINE: {
            mq: int(m * sc.OFFLINE_COMMIT_FRACTION)
            for mq, m in max_offsets.items()
            if mq.topic == sc.TOPIC_ORDERS
        },
        sc.GROUP_PARTIAL: {
            mq: m // 2
            for mq, m in max_offsets.items()
            if mq.topic == sc.TOPIC_PAYMENTS
            and mq.broker_name == first_broker
            and mq.queue_id in sc.PARTIAL_COMMIT_QUEUES
        },
        sc.GROUP_CAUGHT_UP: {mq: m for mq, m in max_offsets.items() if mq.topic == sc.TOPIC_AUDIT},
    }
    await commit_offsets(
        admin,
        (
            OffsetWrite(brokers[mq.broker_name], group, mq.topic, mq.queue_id, offset)
            for group, offsets in targets.items()
            for mq, offset in offsets.items()
        ),
    )
    return targets


async def commit_offsets(admin: AdminClient, writes: Iterable[OffsetWrite]) -> None:
    """Commit offsets as a group's consumer would, through the console's offset writer (each
    new topic@group's first queue alone, then the rest at once, every one read back)."""
    report = await OffsetWriter(admin).write(writes)
    if not report.ok:
        raise SeedError(f"committing offsets by hand: {report.summary()}")


async def run_failing_consumers(
    admin: AdminClient,
    brokers: Mapping[str, str],
    starting: Mapping[str, Awaitable[RunningConsumer]],
    timeout: float = 45.0,
) -> tuple[int, int]:
    """Run risk-engine until it consumes from its retry topic, fraud-audit until dead letters.

    `starting` holds the two consumers (being) launched, by group name.

    Returns (retry backlog, dead letters) once both consumers are stopped.
    """
    retry, dlq = retry_topic(sc.GROUP_RETRY), dlq_topic(sc.GROUP_DLQ)

    async def retrying() -> bool:
        # Committed retry offsets make the retry topic part of the group's consume stats.
        if await _messages_in(admin, brokers, retry) < RETRY_TARGET:
            return False
        committed = [
            await _committed(admin, addr, sc.GROUP_RETRY, retry) for addr in brokers.values()
        ]
        return any(c for c in committed)

    async def dead_lettered() -> bool:
        return await _messages_in(admin, brokers, dlq) >= DLQ_TARGET

    async def run_until(group: str, done: Callable[[], Awaitable[bool]], what: str) -> None:
        consumer = await starting[group]
        deadline = time.monotonic() + timeout
        try:
            while not await done():
                if time.monotonic() >= deadline:
                    raise SeedError(f"{group}: no {what} after {timeout:.0f}s")
                await asyncio.sleep(0.25)
        finally:
            await consumer.stop()

    await asyncio.gather(
        run_until(sc.GROUP_RETRY, retrying, f"consumption from {retry}"),
        run_until(sc.GROUP_DLQ, dead_lettered, f"{DLQ_TARGET} messages in {dlq}"),
    )
    # Messages sent back just before the stop reach %RETRY% after their delay level.
    await asyncio.sleep(_DELAY_LEVEL_1_S + 0.5)
    backlog = await _unconsumed(admin, brokers, sc.GROUP_RETRY, retry)
    if backlog <= 0:
        raise SeedError(f"{sc.GROUP_RETRY} left no retry backlog")
    return backlog, await _messages_in(admin, brokers, dlq)


async def _messages_in(admin: AdminClient, brokers: Mapping[str, str], topic: str) -> int:
    """Messages ever written to queue 0 of `topic` on all brokers (retry and DLQ have one queue)."""
    total = 0
    for addr in brokers.values():
        try:
            total += await admin.max_offset(addr, topic, 0)
        except RocketMQError:
            pass  # the broker has not created the topic (yet)
    return total


async def _committed(admin: AdminClient, addr: str, group: str, topic: str) -> int | None:
    try:
        return await admin.query_consumer_offset(addr, group, topic, 0)
    except RocketMQError:
        return None


async def _unconsumed(
    admin: AdminClient, brokers: Mapping[str, str], group: str, topic: str
) -> int:
    total = 0
    for addr in brokers.values():
        try:
            max_offset = await admin.max_offset(addr, topic, 0)
            committed = await admin.query_consumer_offset(addr, group, topic, 0)
        except RocketMQError:
            continue
        total += max_offset - (committed or 0)
    return total


def _now_ms() -> int:
    return int(time.time() * 1000)
