"""A separate cluster with a slave: a name server, one master broker and its slave (broker id 1,
`brokerRole=SLAVE`, same broker name), each a JVM of its own with its own store and ports.

For what only a master/slave pair shows: a master down while its slave still serves reads, and
writes that must never go to the slave. Stopping or pausing its master disturbs no other test.

The master is seeded before the slave starts: a 5.3.3 slave copies the master's commit log
continuously (HA), but its topics, groups and consumer offsets only by SlaveSynchronize.syncAll,
10 s after start and then every 60 s. Seeding first means the first copy has everything, and
`replica_sandbox` waits until the slave answers with the master's offsets.

Seeded scenario: topic `replica-orders` (4 queues, 10 messages each), group `replica-billing`
committed at a different offset on every queue.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import RocketMQError
from console.rocketmq.models import MessageQueue
from console.sandbox import rundir
from console.sandbox.cache import cache_root
from console.sandbox.cluster import ClusterSetup, SandboxCluster, slave_name
from console.sandbox.errors import StartupError
from console.sandbox.jars import fetch_jars
from console.sandbox.ports import ClusterPorts, free_ports
from console.sandbox.seed import commit_offsets, send_patiently, wait_for_routes
from console.sandbox.toolchain import find_tools
from console.services.apply.offset_writer import OffsetWrite

REPLICA_CLUSTER = "ReplicaCluster"
REPLICA_BROKER = "broker-r"
REPLICA_TOPIC = "replica-orders"
REPLICA_GROUP = "replica-billing"
QUEUES = 4
MESSAGES_PER_QUEUE = 10


@dataclass(frozen=True, slots=True)
class ReplicaOptions:
    run_dir: Path | None = None  # default <cache>/sandbox-replica; wiped at start
    ports: ClusterPorts | None = None  # default: free ports, with a slave of REPLICA_BROKER
    cache: Path | None = None
    #: For the master, then again for the slave (a loaded two-core machine boots a JVM slowly).
    start_timeout: float = 180.0
    #: How long the slave may take to hold the master's offsets (first copy 10 s after start).
    sync_timeout: float = 120.0


@dataclass(frozen=True, slots=True)
class ReplicaSeed:
    topic: str
    group: str
    max_offsets: dict[MessageQueue, int]
    committed: dict[MessageQueue, int]


class ReplicaSandbox:
    """A running master/slave cluster: addresses, what was seeded, and control of the master."""

    def __init__(self, cluster: SandboxCluster) -> None:
        self.cluster = cluster
        self.seed: ReplicaSeed | None = None

    @property
    def run_dir(self) -> Path:
        return self.cluster.config.run_dir

    @property
    def namesrv_addr(self) -> str:
        return self.cluster.namesrv_addr

    @property
    def cluster_name(self) -> str:
        return self.cluster.cluster_name

    @property
    def broker(self) -> str:
        return REPLICA_BROKER

    @property
    def master_addr(self) -> str:
        return self.cluster.broker_addrs[REPLICA_BROKER]

    @property
    def slave_addr(self) -> str:
        return self.cluster.slave_addrs[REPLICA_BROKER]

    def admin(self, timeout: float = 3.0) -> AdminClient:
        return self.cluster.admin(timeout)

    async def stop_master(self) -> None:
        """Stop the master's JVM (it unregisters; the name server keeps listing the slave)."""
        await self.cluster.stop_broker(REPLICA_BROKER)

    async def start_master(self, timeout: float = 90.0) -> None:
        await self.cluster.start_broker(REPLICA_BROKER, timeout)

    def pause_master(self) -> None:
        """SIGSTOP the master: it holds its sockets and answers nothing."""
        self.cluster.pause(REPLICA_BROKER)

    def resume_master(self) -> None:
        self.cluster.resume(REPLICA_BROKER)

    def pause_slave(self) -> None:
        """SIGSTOP the slave: it copies nothing from its master (messages, groups, offsets)
        until resumed; the name server keeps listing it for up to 2 minutes."""
        self.cluster.pause(slave_name(REPLICA_BROKER))

    def resume_slave(self) -> None:
        self.cluster.resume(slave_name(REPLICA_BROKER))


@asynccontextmanager
async def replica_sandbox(options: ReplicaOptions | None = None) -> AsyncIterator[ReplicaSandbox]:
    """Start the master, seed it, start its slave and wait until the slave holds the master's
    offsets; yield the cluster; always stop it."""
    options = options or ReplicaOptions()
    tools = find_tools()
    cache = options.cache or cache_root()
    dist = (await fetch_jars(cache)).distribution
    run_dir = (options.run_dir or cache / "sandbox-replica").resolve()
    pidfile = await asyncio.to_thread(rundir.prepare, run_dir)
    ports = options.ports or free_ports([REPLICA_BROKER], slaves=[REPLICA_BROKER])
    config = ClusterSetup(
        run_dir=run_dir, ports=ports, cluster_name=REPLICA_CLUSTER, serves_pop=False
    )
    replica = ReplicaSandbox(SandboxCluster(dist, tools.java, config))
    try:
        await replica.cluster.start(options.start_timeout, slaves=False)
        async with replica.admin() as admin:
            replica.seed = await seed_replica(admin, replica.master_addr)
            await replica.cluster.start_slave(REPLICA_BROKER, options.start_timeout)
            await wait_synced(admin, replica.slave_addr, replica.seed, options.sync_timeout)
        info = rundir.SandboxInfo(
            replica.namesrv_addr,
            replica.cluster_name,
            {
                REPLICA_BROKER: replica.master_addr,
                slave_name(REPLICA_BROKER): replica.slave_addr,
            },
        )
        rundir.write_info(run_dir, info)
        yield replica
    finally:
        try:
            await replica.cluster.stop()
        except BaseException:
            replica.cluster.stop_now()
            raise
        finally:
            pidfile.release()


async def seed_replica(admin: AdminClient, addr: str) -> ReplicaSeed:
    """Topic and group on the master; messages; a different committed offset on every queue."""
    await admin.create_topic(addr, REPLICA_TOPIC, read_queues=QUEUES, write_queues=QUEUES)
    await admin.create_group(addr, REPLICA_GROUP)
    await wait_for_routes(admin, [REPLICA_TOPIC], {REPLICA_BROKER})
    max_offsets: dict[MessageQueue, int] = {}
    for q in range(QUEUES):
        mq = MessageQueue(REPLICA_TOPIC, REPLICA_BROKER, q)
        for seq in range(MESSAGES_PER_QUEUE):
            body = json.dumps({"queue": q, "seq": seq}).encode()
            sent = await send_patiently(
                admin, addr, REPLICA_TOPIC, q, body, tags="replica", keys=str(seq)
            )
            max_offsets[mq] = sent.queue_offset + 1
    committed = {mq: 1 + mq.queue_id * 2 for mq in max_offsets}
    await commit_offsets(
        admin,
        (OffsetWrite(addr, REPLICA_GROUP, mq.topic, mq.queue_id, o) for mq, o in committed.items()),
    )
    return ReplicaSeed(REPLICA_TOPIC, REPLICA_GROUP, max_offsets, committed)


async def wait_synced(
    admin: AdminClient, slave_addr: str, seed: ReplicaSeed, timeout: float
) -> None:
    """Poll the slave's consume stats until every queue has the master's max and committed
    offsets."""
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while True:
        try:
            stats = await admin.consume_stats(slave_addr, seed.group)
        except RocketMQError as exc:
            last = str(exc)
        else:
            held = {
                mq: (s.broker_offset, s.consumer_offset)
                for mq, s in stats.queues.items()
                if mq.topic == seed.topic
            }
            wanted = {mq: (seed.max_offsets[mq], c) for mq, c in seed.committed.items()}
            if held == wanted:
                return
            last = f"slave holds {held}, master {wanted}"
        if time.monotonic() >= deadline:
            raise StartupError(
                f"the slave {slave_addr} did not copy the master in {timeout:.0f}s ({last})"
            )
        await asyncio.sleep(1.0)
