"""The seeded scenario: fixed topic and group names, and what each one demonstrates.

Tests, the demo and the docs refer to these names; change them here only.

Topics (created on both brokers; every queue gets a different number of messages, so lag is
uneven the way it is in production):

- ``orders``   4+4 queues. Keeps growing after the seed: a trickle producer sends to it
               at a rate that rises and falls (about 2–14 msg/s, period 60 s).
- ``payments`` 8+8 queues. Stable after the seed: safe for exact offset assertions.
- ``audit``    4+4 queues. Stable after the seed.
- ``ledger``   4+4 queues. Keeps growing after the seed, slowly: a trickle of its own sends
               1 msg/s to its queues in turn (one message per queue every 8 s). One message
               on broker-a queue 1, sent after the seed's batches, has the key ``POISON``.

Messages are sent in batches about a second apart, so their store times differ and a
timestamp search lands between batches (`SeedReport.batches` records the boundaries).

Groups (all CLUSTERING unless noted):

- ``shipping-service`` ONLINE: a real Java push consumer on ``orders``, one thread, ~8 msg/s,
  about the trickle's average rate: lag stays well above zero and moves up and down.
- ``notifications``    ONLINE, BROADCASTING, on ``orders``: offsets live in the client's
  offsets.json under the run directory, so the broker has no consume stats for it.
- ``billing-service``  OFFLINE with lag: offsets committed by hand at 60 % of ``orders``; no
  consumer ever ran. Its ``%RETRY%`` topic exists so ``mqadmin consumerProgress`` finds it.
- ``risk-engine``      OFFLINE with a retry backlog: a consumer on ``payments`` that failed
  every 2nd delivery ran until it had consumed from ``%RETRY%risk-engine`` too (so the
  retry topic has committed offsets and shows in consume stats), then stopped, leaving
  the messages that failed in its last second in the retry topic.
- ``fraud-audit``      OFFLINE with dead letters: a consumer on ``audit`` failing every 3rd
  delivery with max reconsume 1, so repeat failures went to ``%DLQ%fraud-audit``.
- ``analytics-etl``    OFFLINE, partly committed: offsets only on broker-a queues 0–3 of
  ``payments``; every other queue has NOTHING committed (unknown, not 0).
- ``inventory-sync``   OFFLINE and caught up: committed at the max offset of ``audit`` (lag 0).
- ``ledger-sync``      ONLINE, ORDERLY, stuck on one queue: a Java push consumer on ``ledger``
  (MessageListenerOrderly) that fails every delivery of a message keyed ``POISON``
  (SUSPEND_CURRENT_QUEUE_A_MOMENT, retried forever, as orderly consumers do by default). Its
  committed offset on broker-a queue 1 stays at the poison message while messages pile up
  behind it; its other queues keep up with the trickle. Skipping that one message (shift-by
  +1 on that queue) frees it. It keeps the Java client's own pull settings (pullBatchSize
  32, pullThresholdForQueue 1000) rather than the other consumers' small cache: the broker
  hands a server-side reset to the consumer only as the answer to a pull, and a queue whose
  cache is past the threshold sends none (README, "Skipping a poison message"). At 1 msg
  every 8 s that takes over two hours of being stuck.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from console.rocketmq.models import MessageModel

TOPIC_ORDERS = "orders"
TOPIC_PAYMENTS = "payments"
TOPIC_AUDIT = "audit"
TOPIC_LEDGER = "ledger"

GROUP_LIVE = "shipping-service"
GROUP_BROADCAST = "notifications"
GROUP_OFFLINE = "billing-service"
GROUP_RETRY = "risk-engine"
GROUP_DLQ = "fraud-audit"
GROUP_PARTIAL = "analytics-etl"
GROUP_CAUGHT_UP = "inventory-sync"
GROUP_POISON = "ledger-sync"

#: A message whose keys include this is failed every time by the consumers given it.
POISON_KEY = "POISON"


@dataclass(frozen=True, slots=True)
class TopicPlan:
    name: str
    queues_per_broker: int
    base_messages: int  # messages in queue 0 of the first broker
    step: int  # each further queue holds this many more (skew across queues)
    tags: str

    def messages_in(self, broker_index: int, queue_id: int) -> int:
        # broker-b's queues are offset by half a step so the two brokers never match exactly.
        return self.base_messages + self.step * queue_id + (self.step // 2) * broker_index


class Setup(StrEnum):
    """How a group gets its state during the seed."""

    LIVE_CONSUMER = "live consumer"  # a Java consumer that keeps running
    RAN_THEN_STOPPED = "ran then stopped"  # a Java consumer run until a condition, then stopped
    HAND_COMMITTED = "hand committed"  # offsets written with UPDATE_CONSUMER_OFFSET


@dataclass(frozen=True, slots=True)
class GroupPlan:
    name: str
    topic: str
    setup: Setup
    demonstrates: str
    model: MessageModel = MessageModel.CLUSTERING
    sleep_ms: int = 0
    fail_every: int = 0
    max_reconsume: int | None = None
    retry_max_times: int = 16
    orderly: bool = False  # MessageListenerOrderly instead of MessageListenerConcurrently
    poison_key: str | None = None  # fail every delivery of a message with this key
    pull_batch: int | None = None  # pullBatchSize; None: the sandbox consumers' small default
    pull_threshold: int | None = None  # pullThresholdForQueue; None: likewise


TOPICS: tuple[TopicPlan, ...] = (
    TopicPlan(TOPIC_ORDERS, 4, base_messages=120, step=20, tags="created"),
    TopicPlan(TOPIC_PAYMENTS, 8, base_messages=60, step=8, tags="paid"),
    TopicPlan(TOPIC_AUDIT, 4, base_messages=40, step=6, tags="logged"),
    TopicPlan(TOPIC_LEDGER, 4, base_messages=20, step=4, tags="posted"),
)

GROUPS: tuple[GroupPlan, ...] = (
    GroupPlan(
        GROUP_LIVE,
        TOPIC_ORDERS,
        Setup.LIVE_CONSUMER,
        "online group whose lag is above zero and moving",
        sleep_ms=125,
    ),
    GroupPlan(
        GROUP_BROADCAST,
        TOPIC_ORDERS,
        Setup.LIVE_CONSUMER,
        "online BROADCASTING group: offsets kept by the client, not the broker",
        model=MessageModel.BROADCASTING,
        sleep_ms=50,
    ),
    GroupPlan(
        GROUP_OFFLINE,
        TOPIC_ORDERS,
        Setup.HAND_COMMITTED,
        "offline group with lag (no consumer connected)",
    ),
    GroupPlan(
        GROUP_RETRY,
        TOPIC_PAYMENTS,
        Setup.RAN_THEN_STOPPED,
        "offline group with a retry backlog in %RETRY%risk-engine",
        sleep_ms=1,
        fail_every=2,
    ),
    GroupPlan(
        GROUP_DLQ,
        TOPIC_AUDIT,
        Setup.RAN_THEN_STOPPED,
        "offline group with dead letters in %DLQ%fraud-audit",
        fail_every=3,
        max_reconsume=1,
        retry_max_times=1,
    ),
    GroupPlan(
        GROUP_PARTIAL,
        TOPIC_PAYMENTS,
        Setup.HAND_COMMITTED,
        "offsets committed on some queues only; the rest are unknown",
    ),
    GroupPlan(
        GROUP_CAUGHT_UP,
        TOPIC_AUDIT,
        Setup.HAND_COMMITTED,
        "offline group that is fully caught up (lag 0)",
    ),
    GroupPlan(
        GROUP_POISON,
        TOPIC_LEDGER,
        Setup.LIVE_CONSUMER,
        "online orderly group stuck on a poison message (broker-a queue 1)",
        orderly=True,
        poison_key=POISON_KEY,
        pull_batch=32,
        pull_threshold=1000,
    ),
)

BATCHES = 6  # the seed sends each queue's messages in this many timed batches
BATCH_PAUSE_S = 1.0
OFFLINE_COMMIT_FRACTION = 0.6  # billing-service committed at 60 % of each queue
PARTIAL_COMMIT_QUEUES = range(4)  # analytics-etl: broker-a queues 0..3 of payments
#: The poisoned queue of ``ledger``: (index of the broker in name order, queue id).
POISON_QUEUE = (0, 1)
#: Messages sent to the poisoned queue right after the poison one: waiting behind it.
POISON_BACKLOG = 3


@dataclass(frozen=True, slots=True)
class TricklePlan:
    """A producer that keeps sending to every queue of `topic` in turn after the seed."""

    topic: str
    mean_rate: float  # msg/s
    amplitude: float = 0.0  # msg/s; the rate is a sine around the mean
    period_s: float = 60.0


TRICKLES: tuple[TricklePlan, ...] = (
    # About what shipping-service consumes, rising and falling, so its lag moves.
    TricklePlan(TOPIC_ORDERS, mean_rate=8.0, amplitude=6.0, period_s=60.0),
    # Slow: messages keep arriving behind ledger-sync's poison without filling its cache soon.
    TricklePlan(TOPIC_LEDGER, mean_rate=1.0),
)


def topic_plan(name: str) -> TopicPlan:
    return next(t for t in TOPICS if t.name == name)


def group_plan(name: str) -> GroupPlan:
    return next(g for g in GROUPS if g.name == name)


def growing_topics() -> frozenset[str]:
    """Topics whose max offsets keep moving after the seed (a trickle sends to them)."""
    return frozenset(t.topic for t in TRICKLES)


def live_groups() -> tuple[GroupPlan, ...]:
    """Groups whose consumers keep running after the seed: their committed offsets move."""
    return tuple(g for g in GROUPS if g.setup is Setup.LIVE_CONSUMER)
