"""RocketMQ 5's own consumers in the sandbox: two POP groups beside the seeded scenario, for a
sandbox that runs the proxy.

POP consumption: the broker hands messages out (pops them) and the consumer acks each. The
broker's committed offset moves when messages are popped, before they are acked; popped and
not acked messages live only as checkpoints (revived later through the group's POP retry topic
`%RETRY%<group>_<topic>`). A reader that takes "max - committed" as the lag sees them as
consumed.

Topic ``clicks``: 2+2 queues, uneven (10, 14 on broker-a; 12, 16 on broker-b: 52 messages).

- ``click-counter``  ONLINE, POP (remoting): a Java push consumer of the remoting client, the
  group set to POP on every broker (what `mqadmin setConsumeMode -c CLUSTER -t clicks -g
  click-counter -m POP -q 0` sends: SET_MESSAGE_REQUEST_MODE). It never acks: it popped every
  message and holds them (invisible for 5 minutes, then revived through the retry topic and
  popped again). The broker's committed offset is the max on every queue (consume stats say
  lag 0); its running info says waitAckCount 52.
- ``click-audit``    ONLINE, POP through the proxy: a SimpleConsumer of the gRPC client
  (rocketmq-client-java), connected to the proxy only. It received every message and acks none.
  The brokers list no connection for it; the proxy does.

Both groups' offsets are committed at 0 before their consumers start, so each pops the topic
from its first message whatever its client's "consume from" default.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import RocketMQError
from console.rocketmq.models import MessageQueue
from console.sandbox.errors import SeedError
from console.sandbox.scenario import TopicPlan
from console.sandbox.seed import commit_offsets, send_patiently, wait_for_routes
from console.services.apply.offset_writer import OffsetWrite

TOPIC_CLICKS = "clicks"
GROUP_POP = "click-counter"
GROUP_GRPC = "click-audit"
CLICKS = TopicPlan(TOPIC_CLICKS, 2, base_messages=10, step=4, tags="clicked")
#: RequestCode.SET_MESSAGE_REQUEST_MODE (what `mqadmin setConsumeMode` sends); sandbox only.
SET_MESSAGE_REQUEST_MODE = 401


@dataclass(frozen=True, slots=True)
class PopSeed:
    """What the POP part of the scenario holds once both consumers popped everything."""

    max_offsets: dict[MessageQueue, int]
    seconds: float

    @property
    def messages(self) -> int:
        return sum(self.max_offsets.values())


Launch = Callable[[str], Awaitable[object]]


async def seed_pop(
    admin: AdminClient,
    brokers: Mapping[str, str],
    launch: Launch,
    timeout: float = 90.0,
) -> PopSeed:
    """Create ``clicks`` and the two groups, send the messages, commit 0, set click-counter to
    POP, start both consumers (`launch(group)`), and wait until each has popped every message."""
    started = time.monotonic()
    for addr in brokers.values():
        queues = CLICKS.queues_per_broker
        await admin.create_topic(addr, TOPIC_CLICKS, read_queues=queues, write_queues=queues)
        for group in (GROUP_POP, GROUP_GRPC):
            await admin.create_group(addr, group)
    await wait_for_routes(admin, [TOPIC_CLICKS], set(brokers))
    max_offsets: dict[MessageQueue, int] = {}
    for index, (broker, addr) in enumerate(sorted(brokers.items())):
        for q in range(CLICKS.queues_per_broker):
            mq = MessageQueue(TOPIC_CLICKS, broker, q)
            for seq in range(CLICKS.messages_in(index, q)):
                body = json.dumps({"topic": TOPIC_CLICKS, "queue": q, "seq": seq}).encode()
                sent = await send_patiently(
                    admin, addr, TOPIC_CLICKS, q, body, tags=CLICKS.tags, keys=f"click-{seq}"
                )
                max_offsets[mq] = sent.queue_offset + 1
    await commit_offsets(
        admin,
        (
            OffsetWrite(brokers[mq.broker_name], group, mq.topic, mq.queue_id, 0)
            for group in (GROUP_POP, GROUP_GRPC)
            for mq in max_offsets
        ),
    )
    for addr in brokers.values():
        await set_pop_mode(admin, addr, TOPIC_CLICKS, GROUP_POP)
    await asyncio.gather(launch(GROUP_POP), launch(GROUP_GRPC))
    await wait_popped(admin, brokers, max_offsets, timeout)
    return PopSeed(max_offsets, time.monotonic() - started)


async def set_pop_mode(admin: AdminClient, addr: str, topic: str, group: str) -> None:
    """The group consumes `topic` in POP mode on the broker at `addr` (its remoting clients
    follow it when they let the broker assign their queues)."""
    body = {"consumerGroup": group, "mode": "POP", "popShareQueueNum": 0, "topic": topic}
    await admin.call(addr, SET_MESSAGE_REQUEST_MODE, body=json.dumps(body).encode())


async def wait_popped(
    admin: AdminClient,
    brokers: Mapping[str, str],
    max_offsets: Mapping[MessageQueue, int],
    timeout: float,
) -> None:
    """Until both groups' committed offsets reach the max on every queue: POP moves them when
    the messages are popped, so everything was handed out (and, by these consumers, held)."""
    deadline = time.monotonic() + timeout
    wanted = [(g, mq) for g in (GROUP_POP, GROUP_GRPC) for mq in max_offsets]
    while True:
        answers = await asyncio.gather(
            *(
                admin.query_consumer_offset(brokers[mq.broker_name], g, mq.topic, mq.queue_id)
                for g, mq in wanted
            ),
            return_exceptions=True,
        )
        short = [
            f"{g} {mq.broker_name}:{mq.queue_id} at {a}"
            for (g, mq), a in zip(wanted, answers, strict=True)
            if isinstance(a, RocketMQError) or a != max_offsets[mq]
        ]
        if not short:
            return
        if time.monotonic() >= deadline:
            raise SeedError(f"POP consumers did not pop every message in {timeout:.0f}s: {short}")
        await asyncio.sleep(0.5)
