"""Where a cluster's brokers are, as the name server lists them now, and how they answered: a
broker's route (its master and slaves, where reads go), an address's health, and what a read of
many brokers gives (the queues of a topic, the groups they know) with a gap for each that did not
answer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from console.domain.gaps import Gap, Why
from console.rocketmq.models import MASTER_ID, Broker, QueueStats, SubscriptionGroup


@dataclass(frozen=True, slots=True)
class BrokerRoute:
    """One broker (a master and its slaves, one broker name) as the name server lists it now.

    `master_addr` is None when no master is registered: it is down (a stopped master
    unregisters; a hung one is dropped after ~10 s without heartbeat) while its slaves may
    still serve reads. RocketMQ's own clients then read from a slave
    (MQClientInstance.findBrokerAddressInSubscribe: the master, else the first slave listed);
    they also commit offsets there, which the console never does.
    """

    name: str
    master_addr: str | None
    slaves: Mapping[int, str]  # broker id (1, 2, ...) -> address

    @classmethod
    def of(cls, broker: Broker) -> BrokerRoute:
        slaves = {i: a for i, a in sorted(broker.addrs.items()) if i != MASTER_ID}
        return cls(broker.name, broker.master_addr, slaves)

    @property
    def read_addr(self) -> str | None:
        """Where to read: the master, else the slave with the lowest id; None: nowhere."""
        if self.master_addr is not None:
            return self.master_addr
        return next(iter(self.slaves.values()), None)

    @property
    def from_slave(self) -> bool:
        """Reads go to a slave because the master is down."""
        return self.master_addr is None and bool(self.slaves)

    @property
    def addrs(self) -> dict[int, str]:
        """Every registered address by broker id, the master (0) first."""
        master = {MASTER_ID: self.master_addr} if self.master_addr is not None else {}
        return {**master, **self.slaves}


def read_addrs(routes: Mapping[str, BrokerRoute]) -> dict[str, str]:
    """Where to read each broker (master, else slave), by broker name; brokers with no address
    at all are left out."""
    return {n: r.read_addr for n, r in routes.items() if r.read_addr is not None}


def brokers_to_read_from_slave(routes: Mapping[str, BrokerRoute]) -> tuple[str, ...]:
    """The brokers whose reads go to a slave, master down."""
    return tuple(n for n, r in routes.items() if r.from_slave)


@dataclass(frozen=True, slots=True)
class ReplicaFacts:
    """One address of a broker set in controller mode, as its controller and itself say
    (console/services/read/replication.py); None where it was not said."""

    #: The controller leader's address.
    controller: str | None
    #: The controller's id of the replica: stable, whatever its role (the name server's id).
    controller_id: int | None = None
    alive: bool | None = None  # the controller hears its heartbeats
    in_sync: bool | None = None  # in the SyncStateSet: it may be elected
    master_epoch: int | None = None  # the set's: one more at each election
    sync_state_set_epoch: int | None = None
    epoch: int | None = None  # the replica's own last epoch
    #: Why the controller's part is not known (it did not answer, knows no such set).
    unknown: str | None = None


@dataclass(frozen=True, slots=True)
class BrokerHealth:
    """One broker address (a master, id 0, or a slave): up or down, and what it says about
    itself. A master the name server no longer lists is down with no address."""

    name: str
    addr: str
    up: bool
    version: str | None = None
    put_today: int | None = None  # messages stored today (broker runtime msgPutTotalTodayNow)
    get_today: int | None = None  # messages delivered today (msgGetTotalTodayNow)
    error: str | None = None
    broker_id: int = MASTER_ID
    why: Why | None = None  # why it did not answer (a refused signature is not "down")
    #: Where `addr` (what the broker registered) is connected to, when not itself (mapped).
    reached: str | None = None
    #: In controller mode: what its controller says of it (None: classic master/slave).
    replica: ReplicaFacts | None = None

    @property
    def role(self) -> str:
        if self.broker_id < MASTER_ID:
            return "-"  # a replica the name server does not list: no role now
        return "MASTER" if self.broker_id == MASTER_ID else "SLAVE"


#: Why a broker listed with slaves only has no master address.
MASTER_NOT_REGISTERED = "master not registered with the name server (down); its slave serves reads"


@dataclass(frozen=True, slots=True)
class QueuesRead:
    """The queues of one topic across the brokers asked, and the brokers that did not answer
    (by name): their queues are missing here, not empty. `gaps` says why, one per broker."""

    queues: tuple[QueueStats, ...]
    unreachable: tuple[str, ...] = ()
    gaps: tuple[Gap, ...] = ()


@dataclass(frozen=True, slots=True)
class GroupList:
    """The groups the brokers know, and a gap for each broker that did not say."""

    groups: dict[str, SubscriptionGroup]
    gaps: tuple[Gap, ...] = ()
