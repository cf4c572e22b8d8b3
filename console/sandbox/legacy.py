"""A separate RocketMQ 4.9.7 cluster: a name server and one broker, seeded through the wire client.

For what only a 4.x broker shows. Before 5.0 QUERY_CONSUMER_OFFSET has no setZeroIfNotFound: a
queue the group never committed answers SUCCESS offset 0 while the queue's message 0 is in
memory, so "never committed" and "committed 0" look alike there (only the broker's offset table
tells them apart), and QUERY_CONSUME_TIME_SPAN counts such a queue's delay from 1970. 4.9.7 is
the newest 4.x release on Maven Central (4.9.8's server jars are not published).

The broker keeps 1 MiB commit-log files and deletes every full one at its next cleaning round
(`fileReservedTime=0`, every hour a deletion hour), so a topic seeded first loses its oldest
messages: a group committed there sits below the queue's min offset, as on a cluster whose
commit logs expired.

Seeded scenario (`LegacySeed`):
- ``v4-orders`` (4 queues, 5 messages each), group ``v4-billing``: queue 0 committed at 3,
  queue 1 committed at 0 (a real 0), queues 2 and 3 never committed.
- ``v4-expired`` (1 queue, written first, 1.2 MiB), group ``v4-lagging`` committed at 1: once
  the first commit-log file is deleted the queue's min offset is above 1.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from console.rocketmq.admin import AdminClient
from console.rocketmq.models import MessageQueue
from console.rocketmq.topics import retry_topic
from console.sandbox import rundir
from console.sandbox.cache import cache_root
from console.sandbox.cluster import ClusterSetup, SandboxCluster
from console.sandbox.errors import SeedError
from console.sandbox.jars import fetch_jars
from console.sandbox.ports import free_ports
from console.sandbox.seed import commit_offsets, send_patiently, wait_for_routes
from console.sandbox.toolchain import find_tools
from console.services.apply.offset_writer import OffsetWrite

LEGACY_VERSION = "4.9.7"
LEGACY_CLUSTER = "LegacyCluster"
LEGACY_BROKER = "broker-v4"
ORDERS = "v4-orders"
BILLING = "v4-billing"
ORDERS_QUEUES = 4
ORDERS_MESSAGES = 5  # per queue
BILLING_COMMITTED = {0: 3, 1: 0}  # queues 2 and 3: never committed
EXPIRED = "v4-expired"
LAGGING = "v4-lagging"
LAGGING_COMMITTED = 1
COMMIT_LOG_FILE = 1024 * 1024
EXPIRED_MESSAGES = 12
EXPIRED_BODY = 100 * 1024  # 12 x 100 KiB: more than one commit-log file

# 4.x start-up reads its logging configuration from $ROCKETMQ_HOME/conf and exits without it.
_LOGBACK = """<configuration>
  <appender name="OUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5p %c{1} - %m%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="OUT"/></root>
</configuration>
"""
_LOGBACK_FILES = ("logback_namesrv.xml", "logback_broker.xml", "logback_tools.xml")


def write_logging_config(rocketmq_home: Path) -> None:
    """The logging configuration a 4.x name server, broker or mqadmin needs in its
    ROCKETMQ_HOME."""
    conf = rocketmq_home / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    for name in _LOGBACK_FILES:
        (conf / name).write_text(_LOGBACK)


BROKER_PROPERTIES = {
    "mappedFileSizeCommitLog": str(COMMIT_LOG_FILE),
    # Every full commit-log file is expired at once, at every cleaning round (every 10 s).
    "fileReservedTime": "0",
    "deleteWhen": ";".join(f"{h:02d}" for h in range(24)),
}


@dataclass(frozen=True, slots=True)
class LegacyOptions:
    run_dir: Path | None = None  # default <cache>/sandbox-legacy; wiped at start
    cache: Path | None = None
    seed: bool = True
    start_timeout: float = 120.0
    expiry_timeout: float = 90.0  # until the first commit-log file is deleted


@dataclass(frozen=True, slots=True)
class LegacySeed:
    committed: dict[MessageQueue, int]  # what was committed, by queue (both groups)
    never_committed: tuple[MessageQueue, ...]  # v4-billing's queues without a commit
    expired_min_offset: int  # v4-expired's min offset once its first file was deleted


class LegacySandbox:
    """A running 4.9.7 cluster: addresses and what was seeded."""

    def __init__(self, cluster: SandboxCluster) -> None:
        self.cluster = cluster
        self.seed: LegacySeed | None = None

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
    def broker_addr(self) -> str:
        return self.cluster.broker_addrs[LEGACY_BROKER]

    def admin(self, timeout: float = 3.0) -> AdminClient:
        return self.cluster.admin(timeout)


@asynccontextmanager
async def legacy_sandbox(options: LegacyOptions | None = None) -> AsyncIterator[LegacySandbox]:
    """Start the 4.9.7 cluster (and seed it), yield it, and always stop it."""
    options = options or LegacyOptions()
    tools = find_tools()
    cache = options.cache or cache_root()
    dist = (await fetch_jars(cache, version=LEGACY_VERSION)).distribution
    run_dir = (options.run_dir or cache / "sandbox-legacy").resolve()
    pidfile = await asyncio.to_thread(rundir.prepare, run_dir)
    config = ClusterSetup(
        run_dir=run_dir,
        ports=free_ports([LEGACY_BROKER]),
        cluster_name=LEGACY_CLUSTER,
        broker_extra=BROKER_PROPERTIES,
    )
    write_logging_config(config.rocketmq_home)
    legacy = LegacySandbox(SandboxCluster(dist, tools.java, config))
    try:
        await legacy.cluster.start(options.start_timeout)
        info = rundir.SandboxInfo(
            legacy.namesrv_addr, legacy.cluster_name, {LEGACY_BROKER: legacy.broker_addr}
        )
        rundir.write_info(run_dir, info)
        if options.seed:
            async with legacy.admin() as admin:
                legacy.seed = await seed_legacy(admin, legacy.broker_addr, options.expiry_timeout)
        yield legacy
    finally:
        try:
            await legacy.cluster.stop()
        except BaseException:
            legacy.cluster.stop_now()
            raise
        finally:
            pidfile.release()


async def seed_legacy(admin: AdminClient, addr: str, expiry_timeout: float) -> LegacySeed:
    """The expiring topic first (its messages fill the first commit-log file), then the orders;
    commits one queue at a time (§9.1); waits until the first file is deleted."""
    await admin.create_topic(addr, EXPIRED, read_queues=1, write_queues=1)
    await admin.create_topic(addr, ORDERS, read_queues=ORDERS_QUEUES, write_queues=ORDERS_QUEUES)
    for group in (BILLING, LAGGING):
        await admin.create_topic(addr, retry_topic(group), read_queues=1, write_queues=1)
        await admin.create_group(addr, group)
    await wait_for_routes(
        admin, [EXPIRED, ORDERS, retry_topic(BILLING), retry_topic(LAGGING)], {LEGACY_BROKER}
    )
    filler = b"x" * EXPIRED_BODY
    for seq in range(EXPIRED_MESSAGES):
        await send_patiently(admin, addr, EXPIRED, 0, filler, tags="expired", keys=str(seq))
    for queue_id in range(ORDERS_QUEUES):
        for seq in range(ORDERS_MESSAGES):
            body = f'{{"queue": {queue_id}, "seq": {seq}}}'.encode()
            await send_patiently(admin, addr, ORDERS, queue_id, body, tags="v4", keys=str(seq))
    committed = {MessageQueue(ORDERS, LEGACY_BROKER, q): o for q, o in BILLING_COMMITTED.items()}
    expired = MessageQueue(EXPIRED, LEGACY_BROKER, 0)
    await commit_offsets(
        admin,
        [
            *(OffsetWrite(addr, BILLING, mq.topic, mq.queue_id, o) for mq, o in committed.items()),
            OffsetWrite(addr, LAGGING, EXPIRED, 0, LAGGING_COMMITTED),
        ],
    )
    committed[expired] = LAGGING_COMMITTED
    never = tuple(
        MessageQueue(ORDERS, LEGACY_BROKER, q)
        for q in range(ORDERS_QUEUES)
        if q not in BILLING_COMMITTED
    )
    return LegacySeed(committed, never, await _expired_min(admin, addr, expiry_timeout))


async def _expired_min(admin: AdminClient, addr: str, timeout: float) -> int:
    """Wait for the broker's cleaning round to delete the first commit-log file."""
    deadline = time.monotonic() + timeout
    while True:
        stats = await admin.topic_stats(addr, EXPIRED)
        low = min(s.min_offset for s in stats.values())
        if low > LAGGING_COMMITTED:
            return low
        if time.monotonic() >= deadline:
            raise SeedError(
                f"{EXPIRED}'s first commit-log file was not deleted within {timeout:.0f}s "
                f"(min offset still {low})"
            )
        await asyncio.sleep(1.0)
