"""A cluster on "another network": one name server and one broker that binds 127.0.0.1 and
registers 127.0.0.77 with the name server, as a broker in a pod registers its pod IP. Nothing
listens at the registered address (the broker binds loopback only: `bindAddress`), so a client
that connects where the name server says is refused, as from outside the pod network; mapped to
127.0.0.1, or through a SOCKS proxy that reaches 127.0.0.77 "on its side" (by mapping it, as
the bastion's network would), it answers.

Seeded through the sandbox's own client (mapped): topic `far-orders` (4 queues) in timed
batches, so a timestamp search lands between batches; group `far-billing` committed by hand at
half of every queue. No consumers: nothing of this machine could reach the broker.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from console.config import ClusterConfig
from console.rocketmq.admin import AdminClient
from console.rocketmq.models import MessageQueue
from console.rocketmq.topics import retry_topic
from console.sandbox import rundir
from console.sandbox.cache import cache_root
from console.sandbox.cluster import ClusterSetup, SandboxCluster
from console.sandbox.jars import fetch_jars
from console.sandbox.ports import LOOPBACK, ClusterPorts, free_ports
from console.sandbox.seed import SeedBatch, commit_offsets, send_patiently, wait_for_routes
from console.sandbox.toolchain import find_tools
from console.services.apply.offset_writer import OffsetWrite

#: Where the broker says it is: a loopback address nothing listens on (all of 127.0.0.0/8 is
#: this machine's, but the broker binds 127.0.0.1 only).
FAR_HOST = "127.0.0.77"
FAR_CLUSTER = "FarCluster"
FAR_BROKER = "broker-far"
FAR_TOPIC = "far-orders"
FAR_GROUP = "far-billing"
QUEUES = 4
BATCHES = 3
MESSAGES_PER_BATCH = 4  # per queue and batch
BATCH_PAUSE_S = 1.0


@dataclass(frozen=True, slots=True)
class FarOptions:
    run_dir: Path | None = None
    ports: ClusterPorts | None = None
    cache: Path | None = None
    start_timeout: float = 120.0


@dataclass(frozen=True, slots=True)
class FarSeed:
    topic: str
    group: str
    batches: list[SeedBatch]
    committed: dict[MessageQueue, int]


class FarSandbox:
    def __init__(self, cluster: SandboxCluster, seed: FarSeed | None = None) -> None:
        self.cluster = cluster
        self.seed = seed

    @property
    def namesrv_addr(self) -> str:
        return self.cluster.namesrv_addr

    @property
    def broker_addr(self) -> str:
        """The broker's registered address: nothing listens there."""
        return self.cluster.broker_addrs[FAR_BROKER]

    @property
    def listen_addr(self) -> str:
        """Where the broker really listens."""
        return f"{LOOPBACK}:{self.cluster.config.ports.brokers[FAR_BROKER]}"

    @property
    def address_map(self) -> tuple[tuple[str, str], ...]:
        """The map that reaches it from here: its registered host to loopback."""
        return ((FAR_HOST, LOOPBACK),)

    def cluster_config(self, name: str = "far", **kw: object) -> ClusterConfig:
        return ClusterConfig(name=name, namesrv=(self.namesrv_addr,), **kw)  # type: ignore[arg-type]

    def admin(self, timeout: float = 3.0) -> AdminClient:
        """A client that reaches the broker (mapped) and may write."""
        return self.cluster.admin(timeout)


@asynccontextmanager
async def far_sandbox(options: FarOptions | None = None) -> AsyncIterator[FarSandbox]:
    """Start the far cluster and seed it, yield it, and always stop it."""
    options = options or FarOptions()
    tools = find_tools()
    cache = options.cache or cache_root()
    dist = (await fetch_jars(cache)).distribution
    run_dir = (options.run_dir or cache / "sandbox-far").resolve()
    pidfile = await asyncio.to_thread(rundir.prepare, run_dir)
    config = ClusterSetup(
        run_dir=run_dir,
        ports=options.ports or free_ports([FAR_BROKER]),
        cluster_name=FAR_CLUSTER,
        registered_host=FAR_HOST,
        serves_pop=False,
    )
    far = FarSandbox(SandboxCluster(dist, tools.java, config))
    try:
        await far.cluster.start(options.start_timeout)
        info = rundir.SandboxInfo(far.namesrv_addr, FAR_CLUSTER, far.cluster.broker_addrs)
        rundir.write_info(run_dir, info)
        async with far.admin(timeout=15.0) as admin:
            far.seed = await seed_far(admin, far.broker_addr)
        yield far
    finally:
        try:
            await far.cluster.stop()
        except BaseException:
            far.cluster.stop_now()
            raise
        finally:
            pidfile.release()


async def seed_far(admin: AdminClient, addr: str) -> FarSeed:
    """Topic, group and retry topic; messages in timed batches; offsets committed at half."""
    await admin.create_topic(addr, FAR_TOPIC, read_queues=QUEUES, write_queues=QUEUES)
    await admin.create_topic(addr, retry_topic(FAR_GROUP), read_queues=1, write_queues=1)
    await admin.create_group(addr, FAR_GROUP)
    await wait_for_routes(admin, [FAR_TOPIC, retry_topic(FAR_GROUP)], {FAR_BROKER})
    offsets = {MessageQueue(FAR_TOPIC, FAR_BROKER, q): 0 for q in range(QUEUES)}
    batches: list[SeedBatch] = []
    for batch in range(BATCHES):
        if batch:
            # Store times a clear second apart: a time between batches splits every queue.
            await asyncio.sleep(BATCH_PAUSE_S)
        started = _now_ms()
        for mq in offsets:
            for seq in range(MESSAGES_PER_BATCH):
                body = json.dumps({"queue": mq.queue_id, "batch": batch, "seq": seq}).encode()
                sent = await send_patiently(
                    admin, addr, FAR_TOPIC, mq.queue_id, body, tags="far", keys=f"{batch}-{seq}"
                )
                offsets[mq] = max(offsets[mq], sent.queue_offset + 1)
        batches.append(SeedBatch(batch, started, _now_ms(), dict(offsets)))
    committed = {mq: n // 2 for mq, n in offsets.items()}
    await commit_offsets(
        admin,
        (OffsetWrite(addr, FAR_GROUP, mq.topic, mq.queue_id, o) for mq, o in committed.items()),
    )
    return FarSeed(FAR_TOPIC, FAR_GROUP, batches, committed)


def _now_ms() -> int:
    return int(time.time() * 1000)
