"""Who may become master of each broker set, as its controller says (controller mode, RocketMQ
5): the controller's leader, each set's master epoch and SyncStateSet, and each replica's own
epoch. Classic master/slave has none of it: a slave is never elected there.

The brokers say whether they run in controller mode and where their controller is
(GET_BROKER_CONFIG: `enableControllerMode`, `controllerAddr`, several addresses split by `;`).
Each controller is asked who leads them (CONTROLLER_GET_METADATA_INFO), the leader for the sets
(CONTROLLER_GET_SYNC_STATE_DATA), each registered replica for its epochs (GET_BROKER_EPOCH_CACHE);
the requests are console/rocketmq/controller.py's. What could not be asked is a gap naming it:
a set whose SyncStateSet is unknown is never shown as in sync.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from console.domain.gaps import Gap, Part, Why, gap
from console.rocketmq.admin import AdminClient
from console.rocketmq.controller import ControllerMetadata, ReplicaSet
from console.rocketmq.errors import RocketMQError
from console.services.infra.fanout import ask_each
from console.services.read.routes import BrokerHealth, BrokerRoute, ReplicaFacts


@dataclass(frozen=True, slots=True)
class BrokerMode:
    """What one broker set's broker says of its replication (GET_BROKER_CONFIG)."""

    controller_mode: bool
    controllers: tuple[str, ...]  # its controllerAddr, split


def broker_mode(config: Mapping[str, str]) -> BrokerMode:
    on = config.get("enableControllerMode", "").strip().lower() == "true"
    addrs = tuple(a.strip() for a in config.get("controllerAddr", "").split(";") if a.strip())
    return BrokerMode(on, addrs if on else ())


@dataclass(frozen=True, slots=True)
class Replication:
    """The controller's view of the broker sets in controller mode (none: classic)."""

    #: The controller addresses the brokers name (empty: no broker runs in controller mode).
    controllers: tuple[str, ...] = ()
    #: The controller that leads them, as one of them said (None: none said).
    leader: ControllerMetadata | None = None
    #: The sets in controller mode, as the leader answered, by broker name.
    sets: Mapping[str, ReplicaSet] = field(default_factory=dict)
    #: Each replica's own last epoch (GET_BROKER_EPOCH_CACHE), by registered address.
    epochs: Mapping[str, int] = field(default_factory=dict)
    #: Brokers that said they run in controller mode.
    in_controller_mode: tuple[str, ...] = ()
    gaps: tuple[Gap, ...] = ()

    @property
    def controller_mode(self) -> bool:
        return bool(self.in_controller_mode)

    def controller_line(self) -> str | None:
        """`controller 127.0.0.1:9878 (leader n0 at 127.0.0.1:9878)`; None in classic mode."""
        if not self.controllers:
            return None
        named = ", ".join(self.controllers)
        if self.leader is None:
            return f"controller {named} (no leader known)"
        return (
            f"controller {named} (leader {self.leader.leader_id or '?'} at "
            f"{self.leader.leader_addr or '?'})"
        )


async def read_replication(
    admin: AdminClient, routes: Mapping[str, BrokerRoute], *, epochs: bool = True
) -> Replication:
    """Ask one address of each set whether it runs in controller mode; where some do, their
    controllers and (with `epochs`) every registered replica's epoch."""
    one = {n: r.read_addr for n, r in routes.items() if r.read_addr is not None}
    configs = await ask_each(one, admin.broker_config)
    modes: dict[str, BrokerMode] = {}
    for name, answer in configs.items():
        if isinstance(answer, dict):
            modes[name] = broker_mode(answer)
        elif not isinstance(answer, RocketMQError):
            raise answer
    in_mode = tuple(sorted(n for n, m in modes.items() if m.controller_mode))
    if not in_mode:
        return Replication()
    controllers = tuple(dict.fromkeys(a for n in in_mode for a in modes[n].controllers))
    gaps: list[Gap] = []
    leader = await _leader(admin, controllers, gaps)
    sets: dict[str, ReplicaSet] = {}
    if leader is not None and leader.leader_addr:
        try:
            sets = await admin.replica_sets(leader.leader_addr, list(in_mode))
        except RocketMQError as exc:
            gaps.append(gap(Part.CONTROLLER, leader.leader_addr, exc))
    for name in in_mode:
        if name not in sets and not gaps:
            gaps.append(
                Gap(
                    Part.CONTROLLER,
                    name,
                    Why.NOT_FOUND,
                    f"the controller knows no broker set {name}: who may become its master is "
                    "unknown",
                )
            )
    held: dict[str, int] = {}
    if epochs:
        addrs = {a: a for n in in_mode for a in routes[n].addrs.values()}
        caches = await ask_each(addrs, admin.epoch_cache)
        for addr, cache in caches.items():
            if isinstance(cache, BaseException):
                if not isinstance(cache, RocketMQError):
                    raise cache
                continue  # the replica's health says it did not answer
            if cache.last_epoch is not None:
                held[addr] = cache.last_epoch
    return Replication(controllers, leader, sets, held, in_mode, tuple(gaps))


async def _leader(
    admin: AdminClient, controllers: Sequence[str], gaps: list[Gap]
) -> ControllerMetadata | None:
    """Every controller asked who leads them; the leader's own answer first, else any that
    names a leader. A controller that does not answer is a gap only when none says."""
    answers = await asyncio.gather(
        *(admin.controller_metadata(a) for a in controllers), return_exceptions=True
    )
    said = [a for a in answers if isinstance(a, ControllerMetadata)]
    for a in answers:
        if isinstance(a, BaseException) and not isinstance(a, RocketMQError):
            raise a
    chosen = next((a for a in said if a.is_leader), None) or next(
        (a for a in said if a.leader_addr), None
    )
    if chosen is None:
        for addr, a in zip(controllers, answers, strict=True):
            if isinstance(a, RocketMQError):
                gaps.append(gap(Part.CONTROLLER, addr, a))
        if not gaps:
            gaps.append(
                Gap(
                    Part.CONTROLLER,
                    ", ".join(controllers),
                    Why.NOT_REPORTED,
                    "no controller names a leader (an election among the controllers?): who "
                    "may become master is unknown",
                )
            )
    return chosen


def with_replication(
    health: Sequence[BrokerHealth], replication: Replication
) -> list[BrokerHealth]:
    """Each address of a set in controller mode with what its controller says of it, and the
    replicas the controller knows that the name server does not list (down, or not registered
    again yet) as rows of their own."""
    if not replication.controller_mode:
        return list(health)
    leader = replication.leader
    controller = leader.leader_addr if leader is not None and leader.leader_addr else None
    out: list[BrokerHealth] = []
    listed: set[tuple[str, str]] = set()
    for h in health:
        if h.name not in replication.in_controller_mode:
            out.append(h)
            continue
        known = replication.sets.get(h.name)
        listed.add((h.name, h.addr))
        if not h.addr:  # the name server lists no master
            if known is not None:
                h = replace(h, error=_no_master(known))
            out.append(h)
            continue
        out.append(replace(h, replica=_facts(h.addr, known, controller, replication)))
    for name, known in sorted(replication.sets.items()):
        for r in known.replicas:
            if (name, r.addr) in listed:
                continue
            out.append(
                BrokerHealth(
                    name,
                    r.addr,
                    up=False,
                    error="known to the controller, not registered with the name server"
                    + ("" if r.alive else " (the controller hears no heartbeat)"),
                    broker_id=-1,
                    replica=_facts(r.addr, known, controller, replication),
                )
            )
    return sorted(out, key=lambda h: (h.name, h.broker_id < 0, h.broker_id))


def _facts(
    addr: str, known: ReplicaSet | None, controller: str | None, replication: Replication
) -> ReplicaFacts:
    if known is None:
        why = "; ".join(g.line() for g in replication.gaps) or "the controller did not say"
        return ReplicaFacts(controller, epoch=replication.epochs.get(addr), unknown=why)
    replica = known.replica_at(addr)
    return ReplicaFacts(
        controller,
        controller_id=replica.broker_id if replica is not None else None,
        alive=replica.alive if replica is not None else None,
        in_sync=replica.in_sync if replica is not None else None,
        master_epoch=known.master_epoch,
        sync_state_set_epoch=known.sync_state_set_epoch,
        epoch=replication.epochs.get(addr),
        unknown=None if replica is not None else "the controller does not list this address",
    )


def _no_master(known: ReplicaSet) -> str:
    """Why a set in controller mode has no master listed, as its controller says."""
    if known.master_addr is not None:
        return (
            f"the controller elected {known.master_addr} (epoch {known.master_epoch}), not "
            "registered with the name server yet"
        )
    alive = [r.addr for r in known.in_sync if r.alive]
    if alive:
        return (
            f"no master elected yet: in sync and alive {', '.join(alive)}, one of which the "
            "controller elects within seconds"
        )
    return (
        "no master elected yet: no replica of the SyncStateSet is alive, none can be elected "
        "until one is back"
    )


def replica_set_lines(health: Sequence[BrokerHealth]) -> list[str]:
    """One line per broker set in controller mode, from what its addresses say: its master and
    epoch, and who is in the SyncStateSet (`brokers` prints them under its table, the
    console's overview under its own)."""
    lines = []
    for name in sorted({h.name for h in health if h.replica is not None}):
        mine = [h for h in health if h.name == name and h.replica is not None]
        facts = [h.replica for h in mine if h.replica is not None]
        epoch = next((f.master_epoch for f in facts if f.master_epoch is not None), None)
        masters = [h.addr for h in mine if h.broker_id == 0 and h.addr]
        master = masters[0] if masters else "none"
        if epoch is None:
            why = next((f.unknown for f in facts if f.unknown), "the controller did not say")
            lines.append(f"{name}: master {master}; its SyncStateSet is unknown ({why})")
            continue
        in_sync = [
            f"{h.addr} (id {h.replica.controller_id})"
            for h in mine
            if h.replica is not None and h.replica.in_sync
        ]
        lines.append(
            f"{name}: master {master}, epoch {epoch}; in the SyncStateSet: "
            f"{', '.join(in_sync) or 'nobody'}"
        )
    return lines


def replication_problems(health: Sequence[BrokerHealth], replication: Replication) -> list[str]:
    """What `brokers` names on stderr beside the addresses down: what the controller could not
    say, and each replica outside its SyncStateSet (a switch now could not elect it)."""
    lines = [g.line() for g in replication.gaps]
    for h in health:
        facts = h.replica
        if facts is not None and h.up and facts.in_sync is False and h.broker_id != 0:
            lines.append(
                f"{h.name} replica {h.addr} is outside the SyncStateSet (behind its master): "
                "it cannot be elected while it is"
            )
    return lines
