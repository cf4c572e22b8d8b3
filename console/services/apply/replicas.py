"""Where a write must be copied before a switch cannot roll it back, read before writing.

Consumer offsets are not in the replicated commit log: a replica copies its master's offset
table on a timer (SlaveSynchronize.syncAll: every 10 s in controller mode, every 60 s for a
classic 5.3.3 slave). A write the master read back is lost if the master goes and a replica
that had not copied it yet takes over (apache/rocketmq 4771, 6345, 7790, 9711). So each broker
a write goes to is read for:

- its mode: controller mode (RocketMQ 5's automatic switch) or classic master/slave, as its
  master says (GET_BROKER_CONFIG `enableControllerMode`);
- in controller mode, who may be elected: the replicas its controller has in the SyncStateSet
  (console/services/read/replication.py) besides the master, and the master's epoch; a replica
  outside it is behind and cannot be elected while it is, so it is named and not waited for;
- in classic mode, the slaves the name server lists: one is never elected, but it is what
  clients read from while its master is down;
- a broker set with no master: no write at all (a replica takes no offsets; in controller mode
  one is elected within seconds, and the refusal says to apply again then).

`wait_s` is how long the write waits for each replica to answer the new offsets itself
(QUERY_CONSUMER_OFFSET at its own address): by default 15 s in controller mode (a copy every
10 s), and none for a classic slave (a copy every minute), which the check then says.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import RocketMQError
from console.services.infra.fanout import ask_each
from console.services.read.replication import broker_mode, read_replication
from console.services.read.routes import BrokerRoute

if TYPE_CHECKING:
    from console.services.read.reader import ClusterReader

#: How long a write waits for the replicas of a broker in controller mode by default.
CONTROLLER_WAIT_S = 15.0
#: What a classic slave's copy interval (5.3.3) makes a wait that would see it.
CLASSIC_COPY_S = 60.0
CONTROLLER_COPY_S = 10.0


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
    controller_mode: bool | None
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
    def word(self) -> str:
        return "replica" if self.controller_mode else "slave"

    def plan_line(self) -> str:
        """What the write will do about this broker's replicas, in one line."""
        names = ", ".join(c.label for c in self.copies)
        head = f"{self.broker}: master {self.master_text}"
        if not self.copies:
            tail = "; no other replica in sync: a switch now has no replica to go to"
            if self.controller_mode is False:
                tail = "; no slave"
            return head + tail + "".join(f"; {n}" for n in self.notes)
        if self.wait_s <= 0:
            every = CONTROLLER_COPY_S if self.controller_mode else CLASSIC_COPY_S
            until = (
                "a switch to it would roll the write back"
                if self.controller_mode
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


def default_wait(controller_mode: bool | None, given: float | None) -> float:
    if given is not None:
        return max(0.0, given)
    return CONTROLLER_WAIT_S if controller_mode else 0.0


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
    modes: dict[str, bool | None] = {}
    for name, answer in configs.items():
        if isinstance(answer, dict):
            modes[name] = broker_mode(answer).controller_mode
        elif isinstance(answer, RocketMQError):
            modes[name] = None
        else:
            raise answer
    controlled = {n: r for n, r in with_master.items() if modes.get(n)}
    replication = await read_replication(admin, controlled) if controlled else None
    out: dict[str, BrokerReplicas] = {}
    for name, route in with_master.items():
        master = route.master_addr
        assert master is not None
        mode = modes.get(name)
        if not mode or replication is None:
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
                name, master, True, None, copies, default_wait(True, wait_s), (note,)
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
            name, master, True, epoch, copies, default_wait(True, wait_s), notes
        )
    return ReplicasNow(out, tuple(blockers))


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
    mode: bool | None = None
    if route.read_addr is not None:
        try:
            mode = broker_mode(await admin.broker_config(route.read_addr)).controller_mode
        except RocketMQError:
            mode = None
    if mode:
        return (
            f"broker {name} has no master now (replica(s) {listed} listed): its controller "
            "elects one within seconds; apply again once `rmq-console brokers` shows a master "
            "(nothing is written to a replica)"
        )
    return (
        f"broker {name} has no master registered (slave(s) {listed} listed): offsets are "
        "written to a master only; apply again once it is back"
    )
