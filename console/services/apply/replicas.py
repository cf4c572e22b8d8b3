"""Where a write must be copied before a switch cannot roll it back, read before writing.

Consumer offsets are not in the replicated commit log: a replica copies its master's offset
table on a timer (SlaveSynchronize.syncAll: every 10 s in controller mode and for a 4.9.x
DLedger follower, every 60 s for a classic 5.3.3 slave). A write the master read back is lost if
the master goes and a replica that had not copied it yet takes over (apache/rocketmq 4771, 6345,
7790, 9711). So each broker a write goes to is read for:

- its mode, as its master says (GET_BROKER_CONFIG): controller mode (RocketMQ 5's automatic
  switch, `enableControllerMode`), DLedger mode (4.5 to 4.9: the peers elect the master among
  themselves, `enableDLegerCommitLog`) or classic master/slave;
- in controller mode, who may be elected: the replicas its controller has in the SyncStateSet
  (console/services/read/replication.py) besides the master, and the master's epoch; a replica
  outside it is behind and cannot be elected while it is, so it is named and not waited for;
- in DLedger mode, every follower the name server lists: any may be elected, and 4.9.x says
  nothing more (no SyncStateSet or epoch: it answers GET_BROKER_HA_STATUS and
  GET_BROKER_EPOCH_CACHE "not supported"); a peer of its `dLegerPeers` not listed is named;
- in classic mode, the slaves the name server lists: one is never elected, but it is what
  clients read from while its master is down;
- a broker set with no master: no write at all (a replica takes no offsets; in controller or
  DLedger mode one is elected within seconds, and the refusal says to apply again then).

`wait_s` is how long the write waits for each replica to answer the new offsets itself
(QUERY_CONSUMER_OFFSET at its own address): by default 15 s where a master is elected (a copy
every 10 s), and none for a classic slave (a copy every minute), which the check then says.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import RocketMQError
from console.services.infra.fanout import ask_each
from console.services.read.replication import broker_mode, read_replication
from console.services.read.routes import BrokerRoute
from console.services.read.slave_checks import DLEDGER_ELECTION

if TYPE_CHECKING:
    from console.services.read.reader import ClusterReader

#: How long a write waits by default for the replicas of a broker whose master is elected
#: (controller or DLedger mode).
ELECTED_WAIT_S = 15.0
#: What a classic slave's copy interval (5.3.3) makes a wait that would see it.
CLASSIC_COPY_S = 60.0
#: A replica's copy interval in controller mode, and a 4.9.x DLedger follower's.
ELECTED_COPY_S = 10.0


class SetMode(StrEnum):
    """How a broker set's master is chosen, as its master's configuration says."""

    CONTROLLER = "controller mode"
    DLEDGER = "DLedger mode"
    CLASSIC = "master/slave"

    @property
    def elects(self) -> bool:
        """A replica may become master on its own: what it has not copied, a switch loses."""
        return self is not SetMode.CLASSIC


def set_mode(config: Mapping[str, str]) -> SetMode:
    if broker_mode(config).controller_mode:
        return SetMode.CONTROLLER
    if config.get("enableDLegerCommitLog", "").strip().lower() == "true":
        return SetMode.DLEDGER
    return SetMode.CLASSIC


@dataclass(frozen=True, slots=True)
class Copy:
    """A replica a write must be copied to."""

    addr: str
    #: The id it is listed or known under (the controller's in controller mode).
    broker_id: int | None

    @property
    def label(self) -> str:
        said = f" (id {self.broker_id})" if self.broker_id is not None else ""
        return f"{self.addr}{said}"


@dataclass(frozen=True, slots=True)
class BrokerReplicas:
    """One broker's master and the replicas a write to it must be copied to."""

    broker: str
    master_addr: str
    #: None when its master did not say.
    mode: SetMode | None
    #: The master's epoch as its controller says (controller mode).
    epoch: int | None
    copies: tuple[Copy, ...]
    #: How long the write waits for them to copy it (0: not waited for).
    wait_s: float
    #: Replicas not waited for, and why; and why the replicas are not known, when they are not.
    notes: tuple[str, ...] = ()

    @property
    def master_text(self) -> str:
        """The master as the check's facts name it: a switch changes it (or its epoch)."""
        return (
            self.master_addr if self.epoch is None else f"{self.master_addr} (epoch {self.epoch})"
        )

    @property
    def elects(self) -> bool:
        return self.mode is not None and self.mode.elects

    @property
    def word(self) -> str:
        return "replica" if self.elects else "slave"

    def plan_line(self) -> str:
        """What the write will do about this broker's replicas, in one line."""
        names = ", ".join(c.label for c in self.copies)
        head = f"{self.broker}: master {self.master_text}"
        if not self.copies:
            tail = "; no other replica in sync: a switch now has no replica to go to"
            if self.mode is SetMode.DLEDGER:
                tail = "; no follower listed: a switch now has no replica to go to"
            elif self.mode is SetMode.CLASSIC:
                tail = "; no slave"
            return head + tail + "".join(f"; {n}" for n in self.notes)
        if self.wait_s <= 0:
            every = ELECTED_COPY_S if self.elects else CLASSIC_COPY_S
            until = (
                "a switch to it would roll the write back"
                if self.elects
                else "reads from it while the master is down show the old offsets"
            )
            text = (
                f"; not waiting for {self.word}(s) {names} to copy the write (a {self.word} "
                f"copies offsets every {every:.0f} s; --replica-wait {every + 15:.0f} waits): "
                f"until one has, {until}"
            )
        else:
            text = (
                f"; the write waits up to {self.wait_s:.0f} s for {self.word}(s) {names} to copy it"
            )
        return head + text + "".join(f"; {n}" for n in self.notes)


@dataclass(frozen=True, slots=True)
class ReplicasNow:
    by_broker: Mapping[str, BrokerReplicas]
    #: Brokers a write cannot go to now (no master), one line each.
    blockers: tuple[str, ...]


def default_wait(mode: SetMode | None, given: float | None) -> float:
    if given is not None:
        return max(0.0, given)
    return ELECTED_WAIT_S if mode is not None and mode.elects else 0.0


async def read_replicas(
    admin: AdminClient,
    routes: Mapping[str, BrokerRoute],
    brokers: Iterable[str],
    *,
    wait_s: float | None = None,
) -> ReplicasNow:
    """The master and the replicas to copy to of each of `brokers`; a blocker for each that has
    no master now (or is not registered at all)."""
    wanted = sorted(set(brokers))
    blockers: list[str] = []
    with_master = {n: routes[n] for n in wanted if n in routes and routes[n].master_addr}
    for name in wanted:
        if name not in routes:
            blockers.append(f"broker {name} is not registered with the name server (down?)")
        elif name not in with_master:
            blockers.append(await _no_master(admin, name, routes[name]))
    configs = await ask_each(
        {n: r.master_addr for n, r in with_master.items() if r.master_addr}, admin.broker_config
    )
    modes: dict[str, SetMode | None] = {}
    said: dict[str, Mapping[str, str]] = {}
    for name, answer in configs.items():
        if isinstance(answer, dict):
            modes[name], said[name] = set_mode(answer), answer
        elif isinstance(answer, RocketMQError):
            modes[name] = None
        else:
            raise answer
    controlled = {n: r for n, r in with_master.items() if modes.get(n) is SetMode.CONTROLLER}
    replication = await read_replication(admin, controlled) if controlled else None
    out: dict[str, BrokerReplicas] = {}
    for name, route in with_master.items():
        master = route.master_addr
        assert master is not None
        mode = modes.get(name)
        if mode is SetMode.DLEDGER:
            out[name] = _dledger_set(name, master, route, said[name], wait_s)
            continue
        if mode is not SetMode.CONTROLLER or replication is None:
            notes: tuple[str, ...] = (
                ()
                if mode is not None
                else ("its master did not say its mode: its slaves are waited for as listed",)
            )
            copies = tuple(Copy(a, i) for i, a in sorted(route.slaves.items()))
            out[name] = BrokerReplicas(
                name, master, mode, None, copies, default_wait(mode, wait_s), notes
            )
            continue
        known = replication.sets.get(name)
        if known is None:
            why = "; ".join(g.line() for g in replication.gaps) or "the controller did not say"
            copies = tuple(Copy(a, i) for i, a in sorted(route.slaves.items()))
            note = f"the SyncStateSet is unknown ({why}): the replicas listed are waited for"
            out[name] = BrokerReplicas(
                name, master, mode, None, copies, default_wait(mode, wait_s), (note,)
            )
            continue
        copies = tuple(
            Copy(r.addr, r.broker_id) for r in known.in_sync if r.addr != master and r.alive
        )
        notes = tuple(
            f"replica {r.addr} (id {r.broker_id}) is outside the SyncStateSet (behind its "
            "master): not waited for, and not electable while it is"
            for r in known.replicas
            if r.addr != master and not r.in_sync
        )
        epoch = replication.epochs.get(master, known.master_epoch)
        out[name] = BrokerReplicas(
            name, master, mode, epoch, copies, default_wait(mode, wait_s), notes
        )
    return ReplicasNow(out, tuple(blockers))


def _dledger_set(
    name: str, master: str, route: BrokerRoute, config: Mapping[str, str], wait_s: float | None
) -> BrokerReplicas:
    """A DLedger set: any follower may be elected once its commit log is as far as the
    majority's, and 4.9.x says no more than the name server does, so every follower listed is
    waited for; a peer of the group it does not list (down, or not registered again yet) is
    named, since it cannot be asked."""
    copies = tuple(Copy(a, i) for i, a in sorted(route.slaves.items()))
    notes = tuple(
        f"peer {peer} of its DLedger group is not listed by the name server (down?): not waited for"
        for peer in _unlisted_peers(config, route)
    )
    return BrokerReplicas(
        name, master, SetMode.DLEDGER, None, copies, default_wait(SetMode.DLEDGER, wait_s), notes
    )


def _unlisted_peers(config: Mapping[str, str], route: BrokerRoute) -> list[str]:
    """The self ids of `dLegerPeers` (`n0-host:port;n1-...`) other than the master's that the
    name server lists under no id: a follower registers as its self id's number + 1
    (DLedgerCommitLog.getId: `n1` as 2). A self id not of that shape is not judged."""
    me = config.get("dLegerSelfId", "").strip()
    out = []
    for entry in config.get("dLegerPeers", "").split(";"):
        peer = entry.split("-", 1)[0].strip()
        number = peer[1:]
        if peer and peer != me and number.isdigit() and int(number) + 1 not in route.slaves:
            out.append(peer)
    return out


#: How a write finds its brokers' replicas (WriteAccess.replicas): the reader, the brokers,
#: the wait asked for (None: by mode).
ReplicaLookup = Callable[["ClusterReader", Iterable[str], "float | None"], Awaitable[ReplicasNow]]


async def replicas_now(
    reader: ClusterReader, brokers: Iterable[str], wait_s: float | None
) -> ReplicasNow:
    """`read_replicas` from the name server's routes asked again (a switch moves the master)."""
    routes = await reader.fresh_routes()
    return await read_replicas(reader.admin, routes, brokers, wait_s=wait_s)


async def _no_master(admin: AdminClient, name: str, route: BrokerRoute) -> str:
    """Why nothing is written to a broker whose master the name server does not list, and
    when to try again."""
    listed = ", ".join(route.slaves.values())
    mode: SetMode | None = None
    if route.read_addr is not None:
        try:
            mode = set_mode(await admin.broker_config(route.read_addr))
        except RocketMQError:
            mode = None
    if mode is SetMode.CONTROLLER:
        return (
            f"broker {name} has no master now (replica(s) {listed} listed): its controller "
            "elects one within seconds; apply again once `rmq-console brokers` shows a master "
            "(nothing is written to a replica)"
        )
    if mode is SetMode.DLEDGER:
        return (
            f"broker {name} has no master now (replica(s) {listed} listed; {DLEDGER_ELECTION}): "
            "apply again once `rmq-console brokers` shows a master (nothing is written to a "
            "replica)"
        )
    return (
        f"broker {name} has no master registered (slave(s) {listed} listed): offsets are "
        "written to a master only; apply again once it is back"
    )
