"""RocketMQ 5.5's lite topics in the sandbox (RIP-83; console.domain.lite): a parent topic of
message type LITE, a lite group bound to it, and one LiteClient (a lite producer and the group's
LitePushConsumer, through the proxy), for a sandbox of 5.5.0 or later that runs the proxy.

The brokers need `enableLmq=true` and `enableMultiDispatch=true` (LITE_BROKER_KEYS): without
them a lite message is stored in the parent topic only, never under its lite topic.

Parent topic ``chats`` (2+2 queues), group ``chat-agents`` (`lite.bind.topic=chats`). The
consumer subscribes four lite topics and consumes what is sent to them; it then leaves two
(`unsubscribeLite`: their offsets stay where it stopped) and more is sent to every one:

- ``session-1``, ``session-2``  still consumed: caught up;
- ``session-3``                 left: 7 messages behind;
- ``session-4``                 left: 3 messages behind.

The group's lag is 10, the sum of its lite topics' (each on the broker its name hashes to,
among those that hold the parent topic; a send the client retried on a loaded machine can be
stored twice, so LiteSeed holds the lags found); `mqadmin getLiteGroupInfo -p chats -g
chat-agents` counts the same on brokers that keep consumer offsets in their JSON file (on
RocksDB ones, `configManagerVersion=v2`, it counts 0: see console/services/read/lite_read.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Protocol

from console.domain.lite import lite_queue
from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import RocketMQError
from console.sandbox.errors import SeedError
from console.sandbox.seed import wait_for_routes

TOPIC_CHATS = "chats"
GROUP_LITE = "chat-agents"
#: broker.conf keys of a broker that stores lite topics (MessageStoreConfig).
LITE_BROKER_KEYS = {"enableLmq": "true", "enableMultiDispatch": "true"}
#: The topic attribute of a parent topic, the group attribute of a lite group.
LITE_TOPIC_ATTRIBUTES = {"message.type": "LITE"}
QUEUES_PER_BROKER = 2


@dataclass(frozen=True, slots=True)
class LiteSession:
    """One lite topic: messages sent before the consumer leaves those it leaves, and after."""

    name: str
    first: int
    then: int
    left: bool = False


SESSIONS = (
    LiteSession("session-1", 3, 2),
    LiteSession("session-2", 4, 1),
    LiteSession("session-3", 5, 7, left=True),
    LiteSession("session-4", 6, 3, left=True),
)


@dataclass(frozen=True, slots=True)
class LiteSeed:
    """What the lite part of the scenario holds once seeded: each lite topic's broker, and the
    lag of each as the brokers hold it (0 where the consumer is caught up). A send the client
    retried on a loaded machine may be stored twice, so the lags are what was found, not what
    SESSIONS sends."""

    brokers: dict[str, str]
    lags: dict[str, int]
    seconds: float

    @property
    def total_lag(self) -> int:
        return sum(self.lags.values())


class Commanded(Protocol):
    """The LiteClient process (console.sandbox.consumers.JavaConsumer)."""

    async def command(self, line: str, timeout: float = ...) -> None: ...


@dataclass(frozen=True, slots=True)
class LiteHeld:
    """One lite topic's queue as a broker holds it."""

    broker: str
    max_offset: int
    committed: int


#: Whether a lite topic (its session) holds what a stage of the scenario waits for.
Wanted = Callable[[LiteSession, LiteHeld], bool]


async def seed_lite(
    admin: AdminClient,
    brokers: Mapping[str, str],
    launch: Callable[[], Awaitable[Commanded]],
    timeout: float = 90.0,
    parent_on: Collection[str] | None = None,
) -> LiteSeed:
    """Create ``chats`` on the brokers named in `parent_on` (every one of `brokers` by
    default) and ``chat-agents`` on every broker (the proxy asks any broker whether a group is
    a lite group, and one that does not hold it says "regular group"), start the LiteClient
    (`launch`), and bring each lite topic to its lag (see the module's docstring)."""
    started = time.monotonic()
    holding = set(brokers if parent_on is None else parent_on)
    for name, addr in brokers.items():
        if name in holding:
            await admin.create_topic(
                addr,
                TOPIC_CHATS,
                read_queues=QUEUES_PER_BROKER,
                write_queues=QUEUES_PER_BROKER,
                attributes=LITE_TOPIC_ATTRIBUTES,
            )
        await admin.create_group(
            addr, GROUP_LITE, broadcast_enable=False, attributes={"lite.bind.topic": TOPIC_CHATS}
        )
    await wait_for_routes(admin, [TOPIC_CHATS], holding)
    client = await launch()
    for s in SESSIONS:
        await client.command(f"subscribe {s.name}")
    for s in SESSIONS:
        await client.command(f"send {s.name} {s.first}")
    deadline = time.monotonic() + timeout
    consumed = await wait_lite(
        admin,
        brokers,
        lambda s, h: h.max_offset >= s.first and h.committed == h.max_offset,
        deadline,
    )
    for s in SESSIONS:
        if s.left:
            await client.command(f"unsubscribe {s.name}")
    for s in SESSIONS:
        await client.command(f"send {s.name} {s.then}")

    def then(s: LiteSession, h: LiteHeld) -> bool:
        before = consumed[s.name]
        sent = h.max_offset >= before.max_offset + s.then
        return sent and h.committed == (before.committed if s.left else h.max_offset)

    held = await wait_lite(admin, brokers, then, deadline)
    return LiteSeed(
        {n: h.broker for n, h in held.items()},
        {n: h.max_offset - h.committed for n, h in held.items()},
        time.monotonic() - started,
    )


async def wait_lite(
    admin: AdminClient, brokers: Mapping[str, str], wanted: Wanted, deadline: float
) -> dict[str, LiteHeld]:
    """Until each lite topic of SESSIONS holds what `wanted` says on one broker, the same at
    two readings in a row (a message is indexed under its lite topic a moment after its
    send); what each holds then, by name."""
    last: dict[str, LiteHeld] | None = None
    while True:
        found: dict[str, LiteHeld] = {}
        short: list[str] = []
        for s in SESSIONS:
            queue = lite_queue(TOPIC_CHATS, s.name)
            said = []
            for name, addr in sorted(brokers.items()):
                try:
                    held = await admin.max_offset(addr, queue, 0)
                    at = await admin.query_consumer_offset(addr, GROUP_LITE, queue, 0)
                except RocketMQError as exc:
                    said.append(f"{name}: {exc}")
                    continue
                if held:
                    said.append(f"{name}: max {held}, committed {at}")
                here = LiteHeld(name, held, at if at is not None else -1)
                if held and wanted(s, here):
                    found[s.name] = here
            if s.name not in found:
                short.append(f"{s.name} ({'; '.join(said) or 'nowhere yet'})")
        if not short and found == last:
            return found
        last = found if not short else None
        if time.monotonic() >= deadline:
            raise SeedError(f"lite topics not where the scenario puts them: {', '.join(short)}")
        await asyncio.sleep(0.5)
