"""Typed results of admin operations: what the broker and name server answer, and nothing more."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple

from .message import Message

MASTER_ID = 0


class MessageQueue(NamedTuple):
    """One queue: topic, broker, queue id. A tuple: a scan of 10,000 groups hashes, compares and
    sorts a million of them, each a call into Python code as a dataclass, in C as a tuple."""

    topic: str
    broker_name: str
    queue_id: int


@dataclass(frozen=True, slots=True)
class Broker:
    """One broker set (a master and its slaves) as the name server lists it."""

    name: str
    cluster: str
    addrs: dict[int, str]

    @property
    def master_addr(self) -> str | None:
        return self.addrs.get(MASTER_ID)


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    brokers: dict[str, Broker]
    clusters: dict[str, list[str]]


@dataclass(frozen=True, slots=True)
class QueueData:
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0


@dataclass(frozen=True, slots=True)
class TopicRoute:
    topic: str
    brokers: list[Broker]
    queues: list[QueueData]


@dataclass(frozen=True, slots=True)
class QueueStats:
    """Broker offsets of one queue: min offset, max offset (next to write), last store time."""

    queue: MessageQueue
    min_offset: int
    max_offset: int
    last_update_timestamp: int


class QueueConsumeStats(NamedTuple):
    """One queue of GET_CONSUME_STATS; consumer_offset is 0 when nothing is committed there.
    A tuple, as MessageQueue is: a scan of 10,000 groups reads 160,000 of these."""

    queue: MessageQueue
    broker_offset: int
    consumer_offset: int
    pull_offset: int | None
    last_timestamp: int


@dataclass(frozen=True, slots=True)
class ConsumeStats:
    queues: dict[MessageQueue, QueueConsumeStats]
    consume_tps: float


@dataclass(frozen=True, slots=True)
class ConsumeTimeSpan:
    """Store times around a group's position on one queue (QUERY_CONSUME_TIME_SPAN)."""

    queue: MessageQueue
    min_timestamp: int
    max_timestamp: int
    consume_timestamp: int
    delay_ms: int  # now - store time of the first unconsumed message; 0 when caught up


class MessageModel(StrEnum):
    CLUSTERING = "CLUSTERING"
    BROADCASTING = "BROADCASTING"


@dataclass(frozen=True, slots=True)
class ClientConnection:
    client_id: str
    client_addr: str
    language: str
    version: int


@dataclass(frozen=True, slots=True)
class ConsumerConnection:
    """Who is online for a group right now; an empty `clients` list means offline."""

    clients: list[ClientConnection]
    consume_type: str | None
    message_model: str | None
    consume_from_where: str | None
    subscriptions: dict[str, str] = field(default_factory=dict)  # topic -> expression


@dataclass(frozen=True, slots=True)
class HaStatus:
    """What a broker says of its replication (GET_BROKER_HA_STATUS); the slave's side only."""

    master: bool
    max_offset: int  # a slave's own commit log end (bytes)
    master_flush_offset: int  # the master's, as the slave last heard it (0: never heard)
    last_read_ms: int  # when the slave last read from its master (epoch ms; 0: never)


@dataclass(frozen=True, slots=True)
class SubscriptionGroup:
    name: str
    consume_enable: bool
    consume_broadcast_enable: bool
    consume_message_orderly: bool
    retry_queue_nums: int
    retry_max_times: int
    #: A lite group's parent topic (its attribute `lite.bind.topic`, RocketMQ 5.5); None: an
    #: ordinary group.
    lite_bind_topic: str | None = None


@dataclass(frozen=True, slots=True)
class LiteLagInfo:
    """One lite topic of a lite group as a broker lists it (LiteLagInfo)."""

    lite_topic: str
    lag_count: int
    #: Store time of its oldest unconsumed message (epoch ms); -1: the broker did not say.
    earliest_unconsumed_ms: int


@dataclass(frozen=True, slots=True)
class LiteGroupInfo:
    """GET_LITE_GROUP_INFO's answer (GetLiteGroupInfoResponseBody) for a whole lite group:
    the lag the broker counts over the lite topics it holds offsets of, and the `topK` lite
    topics most behind by count and, where it collects them, by time."""

    group: str
    parent_topic: str
    total_lag: int
    #: The oldest unconsumed message among those of `by_time` (epoch ms); -1: none listed.
    earliest_unconsumed_ms: int
    by_count: tuple[LiteLagInfo, ...]
    by_time: tuple[LiteLagInfo, ...]


@dataclass(frozen=True, slots=True)
class SendResult:
    msg_id: str
    topic: str
    queue_id: int
    queue_offset: int


class BoundaryType(StrEnum):
    """Which message a timestamp search lands on when several share or straddle the time."""

    LOWER = "LOWER"  # first message stored at or after the timestamp
    UPPER = "UPPER"  # last message stored at or before the timestamp


class PullStatus(StrEnum):
    """What a PULL_MESSAGE answered (response codes 0, 19, 20, 21)."""

    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"  # 19: nothing at the offset (the queue's end, or an empty queue)
    RETRY_IMMEDIATELY = "RETRY_IMMEDIATELY"  # 20: nothing matched; a slave's "out of range"
    OFFSET_MOVED = "OFFSET_MOVED"  # 21: below the min offset (deleted) or beyond the max


@dataclass(frozen=True, slots=True)
class PullResult:
    """A pull's answer: its status, where a next pull would begin, the queue's min and max
    offsets when the broker answered, and the messages found (empty unless FOUND)."""

    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: tuple[Message, ...] = ()
    #: The broker id the broker suggests reading from next (1: its slave; mostly 0).
    suggest_broker_id: int = 0
