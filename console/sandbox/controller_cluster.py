"""A separate cluster in controller mode (RocketMQ 5, RIP-44): a name server, a standalone
controller, and two replicas of each broker, which the controller elects a master among.

Each replica is a JVM of its own (`broker-a-n0`, `broker-a-n1`: the process, its store and its
ports), started with `enableControllerMode=true`, `brokerId=-1`, `brokerRole=SLAVE` and the
controller's address, as apache/rocketmq's distribution/conf/controller/quick-start has it. The
controller (`ControllerStartup`, a one-node DLedger group as controller-standalone.conf) listens
on its DLedger peer port only: that is the brokers' `controllerAddr`. It elects the first
replica to register master, which then registers with the name server as broker id 0; the
other registers under the id the controller gave it (1 or 2): an id is a role, not an identity.
A replica copies its master's commit log as it is written, and its topics, groups and consumer
offsets every 10 s (5.3.3 ReplicasManager, SlaveSynchronize.syncAll), so the seed is waited for
on every replica before the cluster is handed over.

For the tests of failover: `kill` a master (SIGKILL: its connections close, the controller
elects the other replica within a second), `start` it again (it rejoins as a replica, and joins
the SyncStateSet once it has caught up), `pause` one (SIGSTOP: it answers nothing, its
heartbeats stop).

Seeded scenario on each broker set: topic `failover-orders` (4 queues per set, 10 messages
each), group `failover-billing` committed at a different offset on every queue.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from console.rocketmq.admin import AdminClient
from console.rocketmq.controller import ReplicaSet
from console.rocketmq.errors import RocketMQError
from console.rocketmq.models import MessageQueue
from console.sandbox import rundir
from console.sandbox.cache import Distribution, cache_root
from console.sandbox.cluster import (
    UPDATE_BROKER_CONFIG,
    ClusterSetup,
    broker_properties,
    namesrv_properties,
)
from console.sandbox.errors import StartupError
from console.sandbox.jars import fetch_jars
from console.sandbox.jvm import BROKER_MAIN, NAMESRV_MAIN, JvmOptions
from console.sandbox.ports import LOOPBACK, ClusterPorts, free_ports
from console.sandbox.proc import LaunchSpec, log_tail
from console.sandbox.process_set import ProcessSet
from console.sandbox.seed import commit_offsets, send_patiently, wait_for_routes
from console.sandbox.toolchain import find_tools
from console.services.apply.offset_writer import OffsetWrite

CONTROLLER_MAIN = "org.apache.rocketmq.controller.ControllerStartup"
CONTROLLER_CLUSTER = "ControllerCluster"
NAMESRV = "namesrv"
CONTROLLER = "controller"
BROKER_NAMES: tuple[str, ...] = ("broker-a", "broker-b")
REPLICAS = 2
FAILOVER_TOPIC = "failover-orders"
FAILOVER_GROUP = "failover-billing"
QUEUES = 4
MESSAGES_PER_QUEUE = 10
_NUDGE_EVERY = 2.0


def replica_name(broker: str, index: int) -> str:
    """The process (and run directory) name of a replica of `broker`."""
    return f"{broker}-n{index}"


@dataclass(frozen=True, slots=True)
class ControllerOptions:
    run_dir: Path | None = None  # default <cache>/sandbox-controller; wiped at start
    cache: Path | None = None
    #: The broker sets, two replicas each (the suite's cluster has one).
    brokers: tuple[str, ...] = BROKER_NAMES
    seed: bool = True
    #: For the JVMs to boot, register and be elected (a loaded two-core machine is slow).
    start_timeout: float = 180.0
    #: How long a replica may take to hold its master's offsets (a copy every 10 s).
    sync_timeout: float = 90.0


@dataclass(frozen=True, slots=True)
class ControllerSeed:
    topic: str
    group: str
    max_offsets: dict[MessageQueue, int]
    committed: dict[MessageQueue, int]


@dataclass(frozen=True, slots=True)
class ControllerLayout:
    """Where everything of the cluster is: its directory and ports (each replica's listen port
    by process name), and which replicas make each broker set."""

    run_dir: Path
    namesrv_port: int
    controller_port: int
    replica_ports: dict[str, int]
    sets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    broker_jvm: JvmOptions = field(default_factory=lambda: JvmOptions(heap_mb=256, direct_mb=256))
    server_jvm: JvmOptions = field(default_factory=lambda: JvmOptions(heap_mb=128))

    @property
    def namesrv_addr(self) -> str:
        return f"{LOOPBACK}:{self.namesrv_port}"

    @property
    def controller_addr(self) -> str:
        return f"{LOOPBACK}:{self.controller_port}"

    def addr_of(self, replica: str) -> str:
        return f"{LOOPBACK}:{self.replica_ports[replica]}"

    def broker_of(self, replica: str) -> str:
        return next(b for b, names in self.sets.items() if replica in names)

    @property
    def setup(self) -> ClusterSetup:
        """The plain sandbox's layout of the same ports, for its broker.conf defaults."""
        ports = ClusterPorts(self.namesrv_port, dict(self.replica_ports))
        # No POP here: without the timer wheel a replica killed and started again is back in
        # seconds, not after its timer log's recovery.
        return ClusterSetup(
            run_dir=self.run_dir, ports=ports, cluster_name=CONTROLLER_CLUSTER, serves_pop=False
        )


def plan_layout(run_dir: Path, brokers: Iterable[str]) -> ControllerLayout:
    sets = {b: tuple(replica_name(b, i) for i in range(REPLICAS)) for b in brokers}
    names = [n for ns in sets.values() for n in ns]
    # The controller takes one of the blocks free_ports reserves for brokers: its port, the
    # block's listen port, is as free and as reserved as theirs.
    ports = free_ports([*names, CONTROLLER])
    controller = ports.brokers.pop(CONTROLLER)
    return ControllerLayout(run_dir, ports.namesrv, controller, ports.brokers, sets)


def controller_properties(layout: ControllerLayout) -> dict[str, str]:
    """A one-node controller (controller-standalone.conf), its DLedger store in the run dir."""
    return {
        "controllerDLegerGroup": "group1",
        "controllerDLegerPeers": f"n0-{layout.controller_addr}",
        "controllerDLegerSelfId": "n0",
        "controllerStorePath": str(layout.run_dir / CONTROLLER / "store"),
        # Its DLedger log's files are 1 GiB by default.
        "mappedFileSize": str(16 * 1024 * 1024),
    }


def replica_properties(layout: ControllerLayout, replica: str) -> dict[str, str]:
    """The sandbox's small broker, in controller mode: its id and role the controller's to give
    (quick-start/broker-n0.conf)."""
    store = layout.run_dir / replica / "store"
    return {
        **broker_properties(layout.setup, replica),
        "brokerName": layout.broker_of(replica),
        "brokerId": "-1",
        "brokerRole": "SLAVE",
        "enableControllerMode": "true",
        "controllerAddr": layout.controller_addr,
        "storePathEpochFile": str(store / "epochFileCheckpoint"),
        # A send waits for the master alone: a paused replica must not stall the seed.
        "allAckInSyncStateSet": "false",
        # A replica that has caught up says so at its next HA heartbeat, and only then does
        # its master take it into the SyncStateSet: every 5 s by default, a second here, so a
        # replica started again is electable (and waited for) seconds sooner.
        "haSendHeartbeatInterval": "1000",
    }


class ControllerSandbox(ProcessSet):
    """A running controller-mode cluster: addresses, what was seeded, and control of each
    process. Every method opens its own client: it may be called from any event loop."""

    def __init__(self, dist: Distribution, java: Path, layout: ControllerLayout) -> None:
        super().__init__(dist, java, layout.run_dir)
        self.layout = layout
        self.seed: ControllerSeed | None = None
        self._last_nudge: dict[str, float] = {}

    # ---- addresses -------------------------------------------------------------------------

    @property
    def run_dir(self) -> Path:
        return self.layout.run_dir

    @property
    def namesrv_addr(self) -> str:
        return self.layout.namesrv_addr

    @property
    def controller_addr(self) -> str:
        return self.layout.controller_addr

    @property
    def cluster_name(self) -> str:
        return CONTROLLER_CLUSTER

    @property
    def brokers(self) -> tuple[str, ...]:
        return tuple(self.layout.sets)

    def replicas(self, broker: str) -> tuple[str, ...]:
        return self.layout.sets[broker]

    def addr_of(self, replica: str) -> str:
        return self.layout.addr_of(replica)

    def replica_at(self, addr: str) -> str:
        return next(n for n in self.layout.replica_ports if self.addr_of(n) == addr)

    def admin(self, timeout: float = 3.0) -> AdminClient:
        return AdminClient([self.namesrv_addr], timeout=timeout)

    # ---- lifecycle -------------------------------------------------------------------------

    async def start(self, timeout: float) -> None:
        """The name server and the controller, then every replica once the controller answers
        (a broker that finds none at start retries only seconds later); wait until each broker
        set has a master elected and every replica registered and in the SyncStateSet."""
        deadline = time.monotonic() + timeout
        for name in (NAMESRV, CONTROLLER):
            self._spawn(name)
        await self._wait_controller(timeout)
        for name in self.layout.replica_ports:
            self._spawn(name)
        for broker in self.brokers:
            await self.wait_in_sync(broker, deadline - time.monotonic())

    async def _wait_controller(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        async with self.admin(timeout=2.0) as admin:
            while True:
                self._check_alive([NAMESRV, CONTROLLER])
                try:
                    said = await admin.controller_metadata(self.controller_addr)
                except RocketMQError as exc:
                    last = str(exc)
                else:
                    if said.is_leader:
                        return
                    last = "no leader yet"
                if time.monotonic() >= deadline:
                    raise StartupError(
                        f"the controller did not lead after {timeout:.0f}s ({last})\n"
                        + log_tail(self.log_path(CONTROLLER), 25)
                    )
                await asyncio.sleep(0.25)

    async def start_replica(self, replica: str, timeout: float = 120.0) -> None:
        """Start a replica again on its store and ports; wait until it is registered and back
        in its set's SyncStateSet."""
        proc = self._procs.get(replica)
        if proc is None or not proc.running:
            self._spawn(replica)
        await self.wait_in_sync(self.layout.broker_of(replica), timeout)

    def pause(self, replica: str) -> None:
        """SIGSTOP a replica (its heartbeats stop) or the controller (nobody is elected): it
        keeps its sockets and answers nothing."""
        pid = self._running(replica).pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)

    def resume(self, replica: str) -> None:
        pid = self._running(replica).pid
        assert pid is not None
        os.kill(pid, signal.SIGCONT)

    # ---- who is master ---------------------------------------------------------------------

    async def master_of(self, broker: str) -> str | None:
        """The replica the name server lists as `broker`'s master now (None: none)."""
        async with self.admin(timeout=2.0) as admin:
            info = await admin.cluster_info()
        listed = info.brokers.get(broker)
        addr = listed.master_addr if listed is not None else None
        return self.replica_at(addr) if addr is not None else None

    async def wait_master(self, broker: str, *, not_on: str, timeout: float = 60.0) -> str:
        """Wait until the name server lists a master of `broker` other than `not_on` (a
        replica's name), elected by the controller; its replica's name."""
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while True:
            try:
                master = await self.master_of(broker)
            except RocketMQError as exc:
                last = str(exc)
            else:
                if master is not None and master != not_on:
                    return master
                last = f"the name server lists {master or 'no master'}"
            if time.monotonic() >= deadline:
                raise StartupError(f"no new master of {broker} after {timeout:.0f}s ({last})")
            await asyncio.sleep(0.2)

    async def wait_unlisted(self, broker: str, addr: str, timeout: float = 30.0) -> None:
        """Wait until the name server no longer lists `addr` for `broker` (a killed broker's
        connection closes, and the name server drops it)."""
        deadline = time.monotonic() + timeout
        while True:
            async with self.admin(timeout=2.0) as admin:
                info = await admin.cluster_info()
            listed = info.brokers.get(broker)
            if listed is None or addr not in listed.addrs.values():
                return
            if time.monotonic() >= deadline:
                raise StartupError(f"the name server still lists {addr} after {timeout:.0f}s")
            await asyncio.sleep(0.1)

    async def replica_set(self, broker: str) -> ReplicaSet | None:
        async with self.admin(timeout=2.0) as admin:
            sets = await admin.replica_sets(self.controller_addr, [broker])
        return sets.get(broker)

    async def wait_in_sync(self, broker: str, timeout: float) -> None:
        """Wait until every running replica of `broker` is registered with the name server
        (one of them as master), answers, and is alive in the controller's SyncStateSet."""
        wanted = {self.addr_of(n): n for n in self.replicas(broker) if self.running(n)}
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        async with self.admin(timeout=2.0) as admin:
            while True:
                self._check_alive([NAMESRV, CONTROLLER, *wanted.values()])
                try:
                    last = await self._not_in_sync(admin, broker, wanted)
                except RocketMQError as exc:
                    last = str(exc)
                if not last:
                    return
                if time.monotonic() >= deadline:
                    raise StartupError(
                        f"{broker} not ready after {timeout:.0f}s ({last})\n"
                        + "\n".join(log_tail(self.log_path(n), 25) for n in wanted.values())
                    )
                await asyncio.sleep(0.25)

    async def _not_in_sync(self, admin: AdminClient, broker: str, wanted: dict[str, str]) -> str:
        """What `broker` still lacks ("" when nothing)."""
        info = await admin.cluster_info()
        listed = info.brokers.get(broker)
        addrs = set(listed.addrs.values()) if listed is not None else set()
        missing = [n for a, n in wanted.items() if a not in addrs]
        if missing:
            await self._nudge(admin, [a for a, n in wanted.items() if n in missing])
            return f"not registered yet: {', '.join(missing)}"
        if listed is None or listed.master_addr is None:
            return "no master elected yet"
        sets = await admin.replica_sets(self.controller_addr, [broker])
        held = sets.get(broker)
        in_sync = {r.addr for r in held.replicas if r.in_sync and r.alive} if held else set()
        lacking = [n for a, n in wanted.items() if a not in in_sync]
        if lacking:
            return f"not in the SyncStateSet yet: {', '.join(lacking)}"
        for addr in wanted:
            await admin.broker_runtime(addr)
        return ""

    async def _nudge(self, admin: AdminClient, addrs: Iterable[str]) -> None:
        """A booted broker that missed its first registration registers at once when its
        permission is set again (see console.sandbox.cluster, SandboxCluster._nudge)."""
        now = time.monotonic()
        for addr in addrs:
            if now - self._last_nudge.get(addr, 0.0) < _NUDGE_EVERY:
                continue
            self._last_nudge[addr] = now
            try:
                await admin.call(addr, UPDATE_BROKER_CONFIG, body=b"brokerPermission=6\n")
            except RocketMQError:
                pass  # not listening yet (or its role not given yet): the next round

    # ---- processes -------------------------------------------------------------------------

    def _spawn(self, name: str) -> None:
        super()._spawn(name)
        self._last_nudge[name] = time.monotonic()

    def _launch_spec(self, name: str) -> LaunchSpec:
        layout = self.layout
        if name == NAMESRV:
            props, main, jvm = namesrv_properties(layout.setup), NAMESRV_MAIN, layout.server_jvm
        elif name == CONTROLLER:
            props, main, jvm = controller_properties(layout), CONTROLLER_MAIN, layout.server_jvm
        else:
            props, main, jvm = replica_properties(layout, name), BROKER_MAIN, layout.broker_jvm
        home = layout.run_dir / "rocketmq-home"
        home.mkdir(parents=True, exist_ok=True)
        return self._java_spec(name, props, main, jvm, home)


@asynccontextmanager
async def controller_sandbox(
    options: ControllerOptions | None = None,
) -> AsyncIterator[ControllerSandbox]:
    """Start the cluster, seed each broker set on its master, wait until every replica holds
    the seed; yield it; always stop it."""
    options = options or ControllerOptions()
    tools = find_tools()
    cache = options.cache or cache_root()
    dist = (await fetch_jars(cache)).distribution
    run_dir = (options.run_dir or cache / "sandbox-controller").resolve()
    pidfile = await asyncio.to_thread(rundir.prepare, run_dir)
    sb = ControllerSandbox(dist, tools.java, plan_layout(run_dir, options.brokers))
    try:
        await sb.start(options.start_timeout)
        if options.seed:
            async with sb.admin() as admin:
                sb.seed = await seed_sets(sb, admin)
                await wait_copied(sb, admin, sb.seed, options.sync_timeout)
        replicas = {n: sb.addr_of(n) for n in sb.layout.replica_ports}
        rundir.write_info(run_dir, rundir.SandboxInfo(sb.namesrv_addr, sb.cluster_name, replicas))
        yield sb
    finally:
        try:
            await sb.stop()
        except BaseException:
            sb.stop_now()
            raise
        finally:
            pidfile.release()


async def seed_sets(sb: ControllerSandbox, admin: AdminClient) -> ControllerSeed:
    """The topic and group on each set's master; messages; a different committed offset on
    every queue."""
    masters: dict[str, str] = {}
    for broker in sb.brokers:
        master = await sb.master_of(broker)
        if master is None:
            raise StartupError(f"{broker} has no master to seed")
        masters[broker] = sb.addr_of(master)
    for addr in masters.values():
        await admin.create_topic(addr, FAILOVER_TOPIC, read_queues=QUEUES, write_queues=QUEUES)
        await admin.create_group(addr, FAILOVER_GROUP)
    await wait_for_routes(admin, [FAILOVER_TOPIC], set(masters))
    max_offsets: dict[MessageQueue, int] = {}
    for broker, addr in masters.items():
        for q in range(QUEUES):
            mq = MessageQueue(FAILOVER_TOPIC, broker, q)
            for seq in range(MESSAGES_PER_QUEUE):
                body = json.dumps({"broker": broker, "queue": q, "seq": seq}).encode()
                sent = await send_patiently(
                    admin, addr, FAILOVER_TOPIC, q, body, tags="failover", keys=str(seq)
                )
                max_offsets[mq] = sent.queue_offset + 1
    committed = {mq: 2 + mq.queue_id for mq in max_offsets}
    await commit_offsets(
        admin,
        (
            OffsetWrite(masters[mq.broker_name], FAILOVER_GROUP, mq.topic, mq.queue_id, o)
            for mq, o in committed.items()
        ),
    )
    return ControllerSeed(FAILOVER_TOPIC, FAILOVER_GROUP, max_offsets, committed)


async def wait_copied(
    sb: ControllerSandbox, admin: AdminClient, seed: ControllerSeed, timeout: float
) -> None:
    """Until every replica answers the seed's committed offsets (a copy every 10 s)."""
    await wait_offsets(sb, admin, seed.group, seed.committed, timeout)


async def wait_offsets(
    sb: ControllerSandbox,
    admin: AdminClient,
    group: str,
    offsets: Mapping[MessageQueue, int],
    timeout: float,
    replicas: Iterable[str] | None = None,
) -> None:
    """Until each of `replicas` (default: every running one) answers `offsets` for its set's
    queues (QUERY_CONSUMER_OFFSET at its own address)."""
    names = [n for n in (replicas or sb.layout.replica_ports) if sb.running(n)]
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while True:
        lacking = []
        for name in names:
            broker = sb.layout.broker_of(name)
            for mq, offset in offsets.items():
                if mq.broker_name != broker:
                    continue
                try:
                    held = await admin.query_consumer_offset(
                        sb.addr_of(name), group, mq.topic, mq.queue_id
                    )
                except RocketMQError as exc:
                    held = None
                    last = str(exc)
                if held != offset:
                    lacking.append(f"{name} holds {held} on {mq.queue_id}, not {offset}")
        if not lacking:
            return
        last = "; ".join(lacking[:3])
        if time.monotonic() >= deadline:
            raise StartupError(f"the replicas did not copy {group} in {timeout:.0f}s ({last})")
        await asyncio.sleep(0.5)
