"""Offsets of a consumer group as the console talks about them (see PRODUCT.md "Words")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from enum import StrEnum
from functools import partial
from typing import NamedTuple

from console.domain.gaps import Gap, Part
from console.domain.lite import LiteLag
from console.rocketmq.topics import is_retry_topic

#: The Java client's copy of a group's offsets.json, kept beside it (offsets.json.bak).
BACKUP_SUFFIX = ".bak"
#: One queue of one group's picture: topic, broker, queue id.
QueueKey = tuple[str, str, int]

#: GroupOffsets.message_model of a group whose offsets live on its clients.
BROADCASTING = "BROADCASTING"
#: What every view says of such a group instead of a row of zeros.
CLIENT_LOCAL_NOTE = (
    "client-local offsets: a BROADCASTING group keeps them on each consumer host "
    "(offsets.json), the broker holds none"
)
#: What every view says of brokers whose queues were read from a slave (GroupOffsets.from_slave).
FROM_SLAVE = "from slave, master down"


class QueueOffsets(NamedTuple):
    """One queue of one group: broker offsets and what the group committed.

    `committed` is None when the group never committed on the queue: the lag is then unknown,
    never 0 (the broker's consume stats would say 0, which reads as "caught up"). It is None too
    when the read could not tell (the group's `gaps` then name the queue).
    `min_offset` is None when the broker did not answer for it (a gap names the topic and
    broker): a min read as 0 would say every message since the first is still there.

    A tuple: a read of 10,000 groups makes 160,000 of these, and a refresh sends them to the
    console's UI process; a frozen dataclass is made field by field in Python, and pickled so.
    """

    topic: str
    broker: str
    queue_id: int
    min_offset: int | None
    max_offset: int
    committed: int | None
    pull_offset: int | None = None
    last_timestamp: int = 0  # store time of the last consumed message, epoch ms; 0 = unknown
    client_id: str | None = None

    def __reduce__(self) -> tuple[type[QueueOffsets], tuple[object, ...]]:
        # Its values, made again through __new__: a named tuple's own pickling asks each one
        # for its arguments through Python code, and copyreg's, a third slower.
        return (QueueOffsets, tuple(self))

    @property
    def lag(self) -> int | None:
        if self.committed is None:
            return None
        return max(self.max_offset - self.committed, 0)

    @property
    def in_flight(self) -> int | None:
        if self.committed is None or self.pull_offset is None:
            return None
        return max(self.pull_offset - self.committed, 0)

    @property
    def below_min(self) -> bool:
        """Committed below the queue's min offset: the messages in between are already deleted
        (the commit log rolled over them), so the consumer's next pull jumps forward. False when
        either is unknown."""
        if self.committed is None or self.min_offset is None:
            return False
        return self.committed < self.min_offset

    @property
    def key(self) -> tuple[str, str, int]:
        return self[:3]  # topic, broker, queue id


@dataclass(frozen=True, slots=True)
class Client:
    client_id: str
    addr: str
    language: str
    version: int
    #: The proxy (its remoting address) a gRPC client came through; None: a remoting client
    #: connected to the brokers themselves.
    proxy: str | None = None

    @property
    def transport(self) -> str:
        return f"gRPC via proxy {self.proxy}" if self.proxy else "remoting"


class Kind(StrEnum):
    """How a group's clients take their messages (PRODUCT.md "consumer kinds")."""

    PUSH = "push"  # remoting push: the client pulls its queues and commits what it consumed
    PULL = "pull"  # remoting pull (lite pull): likewise, driven by the application
    POP = "POP"  # the broker hands messages out and the client acks each
    #: A lite group's consumer (RocketMQ 5.5 LitePushConsumer): the broker hands out each lite
    #: topic's messages in order, and the offset moves as they are acked (console.domain.lite).
    LITE = "lite"


#: How a broker's consume type reads (GET_CONSUMER_CONNECTION_LIST's consumeType).
CONSUME_TYPES = {
    "CONSUME_PASSIVELY": Kind.PUSH,
    "CONSUME_ACTIVELY": Kind.PULL,
    "CONSUME_POP": Kind.POP,
}


@dataclass(frozen=True, slots=True)
class Consumption:
    """What a group's consumption is, as far as anything read says: the kinds of its clients
    (a group set to POP on a broker pops there, whatever its clients call themselves), and
    whether they come through the brokers' remoting port or through a proxy (gRPC)."""

    kinds: tuple[Kind, ...] = ()
    remoting: bool = False
    grpc: bool = False

    @property
    def pop(self) -> bool:
        return Kind.POP in self.kinds

    def label(self) -> str:
        """`push, remoting`; `POP, gRPC via proxy`; `?` when nothing said."""
        kinds = "/".join(self.kinds) or "?"
        ways = [w for w, on in (("remoting", self.remoting), ("gRPC via proxy", self.grpc)) if on]
        return f"{kinds}, {' + '.join(ways)}" if ways else kinds


@dataclass(frozen=True, slots=True)
class PopInFlight:
    """Messages of a POP group popped on one broker's topic and not yet acked: the broker's
    committed offset is already past them, so they are part of the lag. Counted per broker
    and topic (a POP client holds `topic/broker/-1`, any queue of the broker)."""

    topic: str
    broker: str
    messages: int
    #: Where the number comes from (the clients' running info, waitAckCount).
    source: str


@dataclass(frozen=True, slots=True)
class Ghost:
    """One client listed by a broker on several connections (left over from a pause or a
    network blip until they expire, 2 min): every client of the group counts it that many
    times when it rebalances, and so holds fewer queues than it should."""

    broker: str
    client_id: str
    connections: int

    def line(self) -> str:
        return (
            f"{self.broker} lists client {self.client_id} on {self.connections} connections: "
            f"the group rebalances as if it had {self.connections - 1} more consumer(s), so "
            "its clients hold fewer queues than they should until those expire (2 min)"
        )


@dataclass(frozen=True, slots=True)
class SlaveLag:
    """How far a slave read instead of its master is behind it, as the slave reports it
    (GET_BROKER_HA_STATUS): the master's commit log it last heard of, and its own."""

    broker: str
    slave_addr: str
    behind_bytes: int | None  # None: the slave does not know the master's position
    last_contact_ms: int | None  # when it last heard from the master (epoch ms)

    def line(self, now_ms: int) -> str:
        behind = (
            "behind by an unknown amount"
            if self.behind_bytes is None
            else "caught up"
            if self.behind_bytes <= 0
            else f"{self.behind_bytes} bytes of commit log behind"
        )
        heard = ""
        if self.last_contact_ms:
            heard = (
                f", last heard from its master {max(0, now_ms - self.last_contact_ms) // 1000}s ago"
            )
        return f"{self.broker}'s slave {self.slave_addr}: {behind}{heard}"


@dataclass(frozen=True, slots=True)
class ClientStore:
    """One client's offsets of one group, as read from its file, with the brokers' min and max
    of each queue and whether the client is running now (connected to a broker)."""

    client_id: str
    group: str
    path: str  # the file the offsets were read from: offsets.json, or its .bak
    modified_ms: int
    #: None when the brokers' connection list could not be read: nobody can say.
    running: bool | None
    queues: tuple[QueueOffsets, ...] = ()
    #: Why the file could not be read (the queues are then empty), else None.
    error: str | None = None
    #: Queues in the file whose topic or queue the brokers did not list (deleted since).
    unknown: tuple[QueueKey, ...] = field(default_factory=tuple)

    @property
    def from_backup(self) -> bool:
        return self.path.endswith(BACKUP_SUFFIX)

    @property
    def total_lag(self) -> int | None:
        """The client's lag over the group's topics; None when its file could not be read."""
        if self.error is not None:
            return None
        return sum(q.lag or 0 for q in self.queues)


@dataclass(frozen=True, slots=True)
class GroupOffsets:
    """All queues of one group at one instant, with who was online."""

    group: str
    taken_at_ms: int
    queues: tuple[QueueOffsets, ...]
    clients: tuple[Client, ...] = ()
    message_model: str | None = None
    consume_type: str | None = None
    consume_tps: float = 0.0
    #: Messages in the group's %DLQ% topic; a lower bound when a DLQ gap says a broker's part
    #: of it could not be read.
    dlq_messages: int = 0
    #: Brokers whose consume stats failed (each also has a BROKER gap saying why).
    unreachable_brokers: tuple[str, ...] = field(default_factory=tuple)
    #: Brokers whose queues were read from a slave because their master is down (not listed by
    #: the name server, or not answering): complete (a slave holds the master's messages and,
    #: copied every minute, its committed offsets), so no gap, but the operator must know.
    from_slave: tuple[str, ...] = ()
    #: What this read lacks (brokers that did not answer, min offsets, queues whose committed
    #: offset is unknown, the DLQ, the clients): its totals are lower bounds when there is any.
    gaps: tuple[Gap, ...] = ()
    #: False when no broker answered the read at all: nothing here is the group's.
    answered: bool = True
    #: A BROADCASTING group's offsets as its clients on this host keep them (offsets.json),
    #: one per client found; empty when none was found (or the group is not BROADCASTING).
    client_stores: tuple[ClientStore, ...] = ()
    #: Push, pull or POP; remoting or gRPC through a proxy.
    consumption: Consumption = field(default_factory=Consumption)
    #: A POP group's popped-but-unacked messages, where a source reported them (an IN_FLIGHT
    #: gap names what no source reported): part of `total_lag`.
    pop_in_flight: tuple[PopInFlight, ...] = ()
    #: Clients a broker lists on several connections (see Ghost).
    ghosts: tuple[Ghost, ...] = ()
    #: How far behind its master each slave read here is, where it said (see SlaveLag).
    slave_lag: tuple[SlaveLag, ...] = ()
    #: The proxies asked for the group's gRPC clients.
    proxies: tuple[str, ...] = ()
    #: A lite group's lag as its brokers count it (None: not a lite group). Its lite topics'
    #: queues are not in `queues`: this is their lag, counted once.
    lite: LiteLag | None = None
    #: `tally()` and `topic_queues`, worked out once each: the list of 10,000 groups reads a
    #: group's totals for its row, its sample and its status, each a walk of its queues. Not
    #: copied by `replace` (a replaced group has them worked out again).
    _tally: Tally | None = field(default=None, init=False, repr=False, compare=False)
    _topic_queues: tuple[QueueOffsets, ...] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def __reduce__(self) -> tuple[Callable[..., GroupOffsets], tuple[object, ...]]:
        # A refresh of 10,000 groups crosses to the console's UI process: its 160,000 queues
        # as plain tuples, made queues again in C (each one's own pickling is a call into
        # Python at both ends: 0.3 s and 0.5 s for a refresh, against 0.05 s each).
        state = tuple(getattr(self, name) for name in _GROUP_STATE)
        return (_group_from, (state, tuple(map(tuple, self.queues))))

    @property
    def online(self) -> bool:
        return bool(self.clients)

    @property
    def client_local(self) -> bool:
        """A BROADCASTING group: each client keeps its own offsets (offsets.json on its host)
        and the broker holds none, so no total read from the broker says anything about it."""
        return self.message_model == BROADCASTING

    @property
    def partial(self) -> bool:
        return bool(self.gaps)

    @property
    def clients_known(self) -> bool:
        """Whether `clients` is the answer (False: no broker answered who is connected)."""
        return not any(g.part is Part.CLIENTS for g in self.gaps)

    @property
    def topic_queues(self) -> tuple[QueueOffsets, ...]:
        queues = self._topic_queues
        if queues is None:
            queues = tuple(q for q in self.queues if not is_retry_topic(q.topic))
            object.__setattr__(self, "_topic_queues", queues)
        return queues

    @property
    def retry_queues(self) -> tuple[QueueOffsets, ...]:
        return tuple(q for q in self.queues if is_retry_topic(q.topic))

    @property
    def total_lag(self) -> int:
        """Lag summed over the group's topics (retry excluded), for a POP group its messages
        popped and not acked, and for a lite group what its brokers count over its lite topics;
        unknown queues count nothing. A lower bound when `partial`: show it with
        `gaps.at_least`."""
        return self.tally().total_lag

    @property
    def popped_unacked(self) -> int:
        """A POP group's messages popped and not acked (on its topics), as reported."""
        return sum(p.messages for p in self.pop_in_flight if not is_retry_topic(p.topic))

    @property
    def retry_backlog(self) -> int:
        return self.tally().retry_backlog

    @property
    def unknown_queues(self) -> int:
        return self.tally().unknown_queues

    @property
    def below_min_queues(self) -> int:
        """Queues whose committed offset is below the min offset (see QueueOffsets.below_min)."""
        return self.tally().below_min_queues

    def tally(self) -> Tally:
        """The group's queues summed up in one pass (a listing of 10,000 groups shows each
        group's totals side by side)."""
        tally = self._tally
        if tally is None:
            tally = self._count()
            object.__setattr__(self, "_tally", tally)
        return tally

    def _count(self) -> Tally:
        lag = retry = unknown = below_min = 0
        for q in self.queues:
            committed = q.committed
            if committed is None:
                unknown += 1
                continue
            behind = q.max_offset - committed
            if behind > 0:
                if is_retry_topic(q.topic):
                    retry += behind
                else:
                    lag += behind
            if q.below_min:
                below_min += 1
        lite = self.lite.total if self.lite is not None else 0
        return Tally(lag + self.popped_unacked + lite, retry, unknown, below_min)


#: What a GroupOffsets pickles besides its queues (its topic queues are worked out again).
_GROUP_STATE = tuple(
    f.name for f in fields(GroupOffsets) if f.name not in ("queues", "_topic_queues")
)
_QUEUE_FROM_VALUES = partial(tuple.__new__, QueueOffsets)


def _group_from(state: tuple[object, ...], queues: tuple[tuple[object, ...], ...]) -> GroupOffsets:
    group = object.__new__(GroupOffsets)
    for name, value in zip(_GROUP_STATE, state, strict=True):
        object.__setattr__(group, name, value)
    object.__setattr__(group, "queues", tuple(map(_QUEUE_FROM_VALUES, queues)))
    object.__setattr__(group, "_topic_queues", None)
    return group


class Tally(NamedTuple):
    """A group's queues summed up (GroupOffsets.tally): what its properties of these names say."""

    total_lag: int
    retry_backlog: int
    unknown_queues: int
    below_min_queues: int


#: A store time before this is no store time: a broker asked for the time of a message it does
#: not have (deleted below the min offset, or offset -1 when nothing is committed) answers 0 or
#: -1, and its "delay" is then the time since 1970.
EARLIEST_STORE_TIME_MS = 946_684_800_000  # 2000-01-01T00:00:00Z


def known_delay(delay_ms: int, now_ms: int) -> int | None:
    """A broker's delay (now - store time of the next message) as the console may show it:
    None when it was measured from a store time the broker does not have."""
    if delay_ms < 0 or now_ms - delay_ms < EARLIEST_STORE_TIME_MS:
        return None
    return delay_ms
