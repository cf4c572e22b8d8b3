"""A separate RocketMQ 4.9.7 cluster in DLedger mode: a name server and one broker set of three
peers that elect their master among themselves (Raft), with no controller.

Each peer is a JVM of its own (`broker-d-n0` .. `broker-d-n2`: the process, its store and its
ports), a broker with `enableDLegerCommitLog=true`, the set's `dLegerGroup`, every peer's
`dLegerPeers` and its own `dLegerSelfId`, as apache/rocketmq 4.9.x's distribution/conf/dledger
has it. The commit log is DLedger's, replicated by the peers; the elected leader registers with
the name server as broker id 0, a follower as its self id + 1 (n1 as 2): an id is a role, not
an identity. A majority (two of three) must be up for an election: a master killed is replaced
within seconds (about 5 s on the sandbox: the followers' heartbeat timeouts, then a vote). A
follower copies its master's topics, groups and consumer offsets every 10 s (4.9.x
SlaveSynchronize), so the seed is waited for on every peer before the cluster is handed over.

Seeded scenario: topic `dledger-orders` (4 queues, 10 messages each), group `dledger-billing`
committed at a different offset on every queue.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import RocketMQError
from console.rocketmq.models import MessageQueue
from console.rocketmq.topics import retry_topic
from console.sandbox import rundir
from console.sandbox.cache import Distribution, cache_root
from console.sandbox.cluster import (
    ClusterSetup,
    broker_properties,
    namesrv_properties,
)
from console.sandbox.errors import StartupError
from console.sandbox.jars import fetch_jars
from console.sandbox.jvm import BROKER_MAIN, NAMESRV_MAIN, JvmOptions
from console.sandbox.legacy import LEGACY_VERSION, write_logging_config
from console.sandbox.ports import LOOPBACK, ClusterPorts, free_ports
from console.sandbox.proc import LaunchSpec, log_tail
from console.sandbox.process_set import ProcessSet
from console.sandbox.seed import commit_offsets, send_patiently, wait_for_routes
from console.sandbox.toolchain import find_tools
from console.services.apply.offset_writer import OffsetWrite

DLEDGER_CLUSTER = "DLedgerCluster"
DLEDGER_BROKER = "broker-d"
NAMESRV = "namesrv"
PEERS = 3
DLEDGER_TOPIC = "dledger-orders"
DLEDGER_GROUP = "dledger-billing"
QUEUES = 4
MESSAGES_PER_QUEUE = 10


def peer_name(index: int) -> str:
    """The process (and run directory) name of peer `index`; its DLedger self id is n<index>."""
    return f"{DLEDGER_BROKER}-n{index}"


def _raft_name(peer: str) -> str:
    return f"{peer}-raft"


@dataclass(frozen=True, slots=True)
class DLedgerOptions:
    run_dir: Path | None = None  # default <cache>/sandbox-dledger; wiped at start
    cache: Path | None = None
    seed: bool = True
    #: For the JVMs to boot, elect a master and register (a loaded two-core machine is slow).
    start_timeout: float = 180.0
    #: How long a follower may take to hold its master's offsets (a copy every 10 s).
    sync_timeout: float = 60.0


@dataclass(frozen=True, slots=True)
class DLedgerSeed:
    topic: str
    group: str
    max_offsets: dict[MessageQueue, int]
    committed: dict[MessageQueue, int]


@dataclass(frozen=True, slots=True)
class DLedgerLayout:
    """Where everything of the cluster is: its directory, the name server's port, and each
    peer's listen port and DLedger (Raft) port, by process name."""

    run_dir: Path
    namesrv_port: int
    peer_ports: dict[str, int]
    raft_ports: dict[str, int]
    broker_jvm: JvmOptions = field(default_factory=lambda: JvmOptions(heap_mb=256, direct_mb=256))
    server_jvm: JvmOptions = field(default_factory=lambda: JvmOptions(heap_mb=128))

    @property
    def namesrv_addr(self) -> str:
        return f"{LOOPBACK}:{self.namesrv_port}"

    def addr_of(self, peer: str) -> str:
        return f"{LOOPBACK}:{self.peer_ports[peer]}"

    @property
    def dledger_peers(self) -> str:
        """`dLegerPeers`: every peer's self id and Raft address."""
        return ";".join(
            f"n{i}-{LOOPBACK}:{self.raft_ports[p]}" for i, p in enumerate(self.peer_ports)
        )

    @property
    def setup(self) -> ClusterSetup:
        """The plain sandbox's layout of the same ports, for its broker.conf defaults."""
        ports = ClusterPorts(self.namesrv_port, dict(self.peer_ports))
        return ClusterSetup(run_dir=self.run_dir, ports=ports, cluster_name=DLEDGER_CLUSTER)


def plan_layout(run_dir: Path) -> DLedgerLayout:
    peers = [peer_name(i) for i in range(PEERS)]
    # A Raft port takes one of the blocks free_ports reserves for brokers: as free and as
    # reserved as a listen port.
    ports = free_ports([*peers, *(_raft_name(p) for p in peers)])
    raft = {p: ports.brokers.pop(_raft_name(p)) for p in peers}
    return DLedgerLayout(run_dir, ports.namesrv, ports.brokers, raft)


def peer_properties(layout: DLedgerLayout, peer: str) -> dict[str, str]:
    """The sandbox's small broker as a DLedger peer (distribution/conf/dledger/broker-n0.conf).
    DLedger's data files take the commit log's size (16 MiB here, 1 GiB by default)."""
    return {
        **broker_properties(layout.setup, peer),
        "brokerName": DLEDGER_BROKER,
        "enableDLegerCommitLog": "true",
        "dLegerGroup": DLEDGER_BROKER,
        "dLegerPeers": layout.dledger_peers,
        "dLegerSelfId": f"n{list(layout.peer_ports).index(peer)}",
    }


class DLedgerSandbox(ProcessSet):
    """A running DLedger cluster: addresses, what was seeded, and control of each peer. Every
    method opens its own client: it may be called from any event loop."""

    def __init__(self, dist: Distribution, java: Path, layout: DLedgerLayout) -> None:
        super().__init__(dist, java, layout.run_dir)
        self.layout = layout
        self.seed: DLedgerSeed | None = None

    @property
    def run_dir(self) -> Path:
        return self.layout.run_dir

    @property
    def namesrv_addr(self) -> str:
        return self.layout.namesrv_addr

    @property
    def cluster_name(self) -> str:
        return DLEDGER_CLUSTER

    @property
    def broker(self) -> str:
        return DLEDGER_BROKER

    @property
    def peers(self) -> tuple[str, ...]:
        return tuple(self.layout.peer_ports)

    def addr_of(self, peer: str) -> str:
        return self.layout.addr_of(peer)

    def peer_at(self, addr: str) -> str:
        return next(p for p in self.peers if self.addr_of(p) == addr)

    def admin(self, timeout: float = 3.0) -> AdminClient:
        return AdminClient([self.namesrv_addr], timeout=timeout)

    # ---- lifecycle -------------------------------------------------------------------------

    async def start(self, timeout: float) -> None:
        """The name server, then every peer once it answers; wait until the peers elected a
        master and all three are registered."""
        deadline = time.monotonic() + timeout
        self._spawn(NAMESRV)
        await self._wait_namesrv(timeout)
        for peer in self.peers:
            self._spawn(peer)
        await self.wait_registered(deadline - time.monotonic())

    async def _wait_namesrv(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        async with self.admin(timeout=2.0) as admin:
            while True:
                self._check_alive([NAMESRV])
                try:
                    await admin.cluster_info()
                    return
                except RocketMQError as exc:
                    if time.monotonic() >= deadline:
                        raise StartupError(
                            f"the name server did not answer after {timeout:.0f}s ({exc})"
                        ) from exc
                await asyncio.sleep(0.25)

    async def start_peer(self, peer: str, timeout: float = 120.0) -> None:
        """Start a peer again on its store and ports; wait until the running peers have a
        master and every one of them is registered."""
        if not self.running(peer):
            self._spawn(peer)
        await self.wait_registered(timeout)

    # ---- who is master ---------------------------------------------------------------------

    async def listed(self) -> dict[int, str]:
        """The set's addresses the name server lists now, by broker id (0: the master)."""
        async with self.admin(timeout=2.0) as admin:
            info = await admin.cluster_info()
        found = info.brokers.get(DLEDGER_BROKER)
        return dict(found.addrs) if found is not None else {}

    async def master_of(self) -> str | None:
        """The peer the name server lists as master now (None: none)."""
        addr = (await self.listed()).get(0)
        return self.peer_at(addr) if addr is not None else None

    async def wait_master(self, *, not_on: str, timeout: float = 60.0) -> str:
        """Wait until the name server lists a master other than `not_on` (a peer's name); its
        peer's name."""
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while True:
            try:
                master = await self.master_of()
            except RocketMQError as exc:
                last = str(exc)
            else:
                if master is not None and master != not_on:
                    return master
                last = f"the name server lists {master or 'no master'}"
            if time.monotonic() >= deadline:
                raise StartupError(f"no new master after {timeout:.0f}s ({last})")
            await asyncio.sleep(0.2)

    async def wait_unlisted(self, peer: str, timeout: float = 30.0) -> None:
        """Wait until the name server no longer lists `peer` (a killed broker's connection
        closes, and the name server drops it)."""
        deadline = time.monotonic() + timeout
        while self.addr_of(peer) in (await self.listed()).values():
            if time.monotonic() >= deadline:
                raise StartupError(f"the name server still lists {peer} after {timeout:.0f}s")
            await asyncio.sleep(0.1)

    async def wait_registered(self, timeout: float) -> None:
        """Wait until every running peer is registered with the name server, one of them as
        master, and answers."""
        wanted = {self.addr_of(p): p for p in self.peers if self.running(p)}
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while True:
            self._check_alive([NAMESRV, *wanted.values()])
            try:
                last = await self._not_registered(wanted)
            except RocketMQError as exc:
                last = str(exc)
            if not last:
                return
            if time.monotonic() >= deadline:
                raise StartupError(
                    f"{DLEDGER_BROKER} not ready after {timeout:.0f}s ({last})\n"
                    + "\n".join(log_tail(self.log_path(n), 25) for n in wanted.values())
                )
            await asyncio.sleep(0.25)

    async def _not_registered(self, wanted: dict[str, str]) -> str:
        """What the set still lacks ("" when nothing)."""
        listed = await self.listed()
        missing = [p for a, p in wanted.items() if a not in listed.values()]
        if missing:
            return f"not registered yet: {', '.join(missing)}"
        if 0 not in listed:
            return "no master elected yet"
        async with self.admin(timeout=2.0) as admin:
            for addr in wanted:
                await admin.broker_runtime(addr)
        return ""

    # ---- processes -------------------------------------------------------------------------

    def _launch_spec(self, name: str) -> LaunchSpec:
        layout = self.layout
        if name == NAMESRV:
            props, main, jvm = namesrv_properties(layout.setup), NAMESRV_MAIN, layout.server_jvm
        else:
            props, main, jvm = peer_properties(layout, name), BROKER_MAIN, layout.broker_jvm
        home = layout.run_dir / "rocketmq-home"
        write_logging_config(home)
        return self._java_spec(name, props, main, jvm, home)


@asynccontextmanager
async def dledger_sandbox(options: DLedgerOptions | None = None) -> AsyncIterator[DLedgerSandbox]:
    """Start the cluster, seed it on its master, wait until every peer holds the seed; yield
    it; always stop it."""
    options = options or DLedgerOptions()
    tools = find_tools()
    cache = options.cache or cache_root()
    dist = (await fetch_jars(cache, version=LEGACY_VERSION)).distribution
    run_dir = (options.run_dir or cache / "sandbox-dledger").resolve()
    pidfile = await asyncio.to_thread(rundir.prepare, run_dir)
    sb = DLedgerSandbox(dist, tools.java, plan_layout(run_dir))
    try:
        await sb.start(options.start_timeout)
        if options.seed:
            async with sb.admin() as admin:
                sb.seed = await seed_set(sb, admin)
                await wait_copied(sb, admin, sb.seed, options.sync_timeout)
        peers = {p: sb.addr_of(p) for p in sb.peers}
        rundir.write_info(run_dir, rundir.SandboxInfo(sb.namesrv_addr, sb.cluster_name, peers))
        yield sb
    finally:
        try:
            await sb.stop()
        except BaseException:
            sb.stop_now()
            raise
        finally:
            pidfile.release()


async def seed_set(sb: DLedgerSandbox, admin: AdminClient) -> DLedgerSeed:
    """The topic and group (and its retry topic, by which mqadmin finds it) on the master;
    messages; a different committed offset on every queue."""
    master = await sb.master_of()
    if master is None:
        raise StartupError(f"{DLEDGER_BROKER} has no master to seed")
    addr = sb.addr_of(master)
    await admin.create_topic(addr, DLEDGER_TOPIC, read_queues=QUEUES, write_queues=QUEUES)
    await admin.create_topic(addr, retry_topic(DLEDGER_GROUP), read_queues=1, write_queues=1)
    await admin.create_group(addr, DLEDGER_GROUP)
    await wait_for_routes(admin, [DLEDGER_TOPIC, retry_topic(DLEDGER_GROUP)], {DLEDGER_BROKER})
    max_offsets: dict[MessageQueue, int] = {}
    for q in range(QUEUES):
        mq = MessageQueue(DLEDGER_TOPIC, DLEDGER_BROKER, q)
        for seq in range(MESSAGES_PER_QUEUE):
            body = json.dumps({"queue": q, "seq": seq}).encode()
            sent = await send_patiently(
                admin, addr, DLEDGER_TOPIC, q, body, tags="dledger", keys=str(seq)
            )
            max_offsets[mq] = sent.queue_offset + 1
    committed = {mq: 2 + mq.queue_id for mq in max_offsets}
    await commit_offsets(
        admin,
        (OffsetWrite(addr, DLEDGER_GROUP, mq.topic, mq.queue_id, o) for mq, o in committed.items()),
    )
    return DLedgerSeed(DLEDGER_TOPIC, DLEDGER_GROUP, max_offsets, committed)


async def wait_copied(
    sb: DLedgerSandbox, admin: AdminClient, seed: DLedgerSeed, timeout: float
) -> None:
    """Until every running peer answers the seed's committed offsets at its own address (a
    follower copies them every 10 s)."""
    deadline = time.monotonic() + timeout
    while True:
        lacking = []
        for peer in (p for p in sb.peers if sb.running(p)):
            for mq, offset in seed.committed.items():
                try:
                    held: object = await admin.query_consumer_offset(
                        sb.addr_of(peer), seed.group, mq.topic, mq.queue_id
                    )
                except RocketMQError as exc:
                    held = str(exc)
                if held != offset:
                    lacking.append(f"{peer} holds {held} on {mq.queue_id}, not {offset}")
        if not lacking:
            return
        if time.monotonic() >= deadline:
            raise StartupError(
                f"the peers did not copy {seed.group} in {timeout:.0f}s ({'; '.join(lacking[:3])})"
            )
        await asyncio.sleep(0.5)
