"""Reading the message at the boundary of 1,000 queues, against mqadmin's one message a JVM.

- `boundary_messages_1k_s`: the first message after the reset of 1,000 queues (4 topics of 125
  queues on each of the two brokers, a few JSON messages in each), as the preview and
  `plan --boundary` read them: a new admin client, the brokers from the name server, one pull
  per queue (256 in flight), every message decoded, median of RUNS after one untimed read.
  Goal < 2 s.
- `boundary_messages_1k_skip_s`: the same for skips (two messages a queue: the first consumed
  and the last skipped).
- `mqadmin_query_msg_one_s`: one `mqadmin queryMsgByOffset` (a JVM per message), median of
  RUNS; `mqadmin_query_msg_1k_s` is 1,000 of them at that median.

Every timed read must show every queue's message; one that does not fails the benchmark.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from pathlib import Path

from console.domain.boundary_messages import BoundaryRequest
from console.rocketmq.admin import AdminClient
from console.sandbox.cache import Distribution, cache_root
from console.sandbox.jvm import jvm_env
from console.sandbox.mqadmin_oracle import Mqadmin, parse_query_msg
from console.sandbox.seed import wait_for_routes
from console.sandbox.toolchain import find_tools
from console.services.read.boundary import read_boundaries
from console.services.read.reader import ClusterReader
from tests.benchmarks.stats import RUNS, median_of

TOPICS = 4
QUEUES_PER_BROKER = 125  # 4 topics x 125 queues x 2 brokers = 1,000 queues
MESSAGES_PER_QUEUE = 3
IN_FLIGHT = 256


def run() -> dict[str, float]:
    namesrv = os.environ["RMQ_BENCH_NAMESRV"]
    work = Path(os.environ["RMQ_BENCH_RUN_DIR"]) / "bench-boundary"
    topics = [f"bench-boundary-{i}" for i in range(TOPICS)]
    brokers = asyncio.run(_seed(namesrv, topics))
    replays = [
        BoundaryRequest(t, b, q, MESSAGES_PER_QUEUE, 1)
        for b in brokers
        for t in topics
        for q in range(QUEUES_PER_BROKER)
    ]
    skips = [BoundaryRequest(r.topic, r.broker, r.queue_id, 0, 2) for r in replays]
    # Untimed: the brokers' first pulls of these queues (files mapped, code paths compiled),
    # which a broker in service has long done.
    asyncio.run(_timed(namesrv, replays))
    out = {
        "boundary_messages_1k_s": median_of(RUNS, lambda: asyncio.run(_timed(namesrv, replays))),
        "boundary_messages_1k_skip_s": median_of(RUNS, lambda: asyncio.run(_timed(namesrv, skips))),
    }
    one = median_of(RUNS, lambda: _mqadmin_one(namesrv, work, topics[0], sorted(brokers)[0]))
    out["mqadmin_query_msg_one_s"] = one
    out["mqadmin_query_msg_1k_s"] = one * 1000
    return out


async def _seed(namesrv: str, topics: list[str]) -> list[str]:
    """The topics on both brokers, MESSAGES_PER_QUEUE messages in every queue, served."""
    async with AdminClient(namesrv, timeout=60) as admin:
        brokers = await admin.master_addrs()
        for addr in brokers.values():
            for topic in topics:
                await admin.create_topic(
                    addr, topic, read_queues=QUEUES_PER_BROKER, write_queues=QUEUES_PER_BROKER
                )
        await wait_for_routes(admin, topics, set(brokers))
        gate = asyncio.Semaphore(IN_FLIGHT)

        async def send(addr: str, topic: str, queue_id: int, seq: int) -> None:
            body = json.dumps({"topic": topic, "queue": queue_id, "seq": seq, "pad": "x" * 200})
            async with gate:
                await admin.send_message(
                    addr, topic, queue_id, body.encode(), tags="bench", keys=f"{queue_id}-{seq}"
                )

        await asyncio.gather(
            *(
                send(addr, t, q, seq)
                for addr in brokers.values()
                for t in topics
                for q in range(QUEUES_PER_BROKER)
                for seq in range(MESSAGES_PER_QUEUE)
            )
        )
        # A message is served a moment after its send is acknowledged.
        deadline = time.monotonic() + 60
        for addr in brokers.values():
            for topic in topics:
                while any(
                    s.max_offset < MESSAGES_PER_QUEUE
                    for s in (await admin.topic_stats(addr, topic)).values()
                ):
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{topic} on {addr}: messages not served in 60 s")
                    await asyncio.sleep(0.2)
        return sorted(brokers)


async def _timed(namesrv: str, wanted: list[BoundaryRequest]) -> float:
    """A new client, as a command or the network process opens one; every queue read."""
    started = time.perf_counter()
    async with AdminClient(namesrv, timeout=10) as admin:
        got = await read_boundaries(ClusterReader(admin), wanted, in_flight=IN_FLIGHT)
    elapsed = time.perf_counter() - started
    missing = [b for b in got if b.first is None or (b.request.skips and b.last_skipped is None)]
    if missing:
        b = missing[0]
        raise RuntimeError(
            f"{len(missing)} of {len(got)} boundaries not read, e.g. {b.request}: "
            f"{b.first_note or b.last_note}"
        )
    return elapsed


def _mqadmin_one(namesrv: str, work: Path, topic: str, broker: str) -> float:
    """One whole mqadmin process printing one message."""
    tool = Mqadmin(find_tools().java, Distribution.in_cache(cache_root()), namesrv, work)
    (work / "home").mkdir(parents=True, exist_ok=True)
    argv = tool.argv("queryMsgByOffset", "-t", topic, "-b", broker, "-i", "0", "-o", "1")
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=jvm_env(work / "home"))
    elapsed = time.perf_counter() - started
    found = parse_query_msg(done.stdout) if done.returncode == 0 else None
    if found is None:
        raise RuntimeError(f"mqadmin queryMsgByOffset: {done.stdout} {done.stderr}".strip())
    Path(found.body_path).unlink(missing_ok=True)  # the body file it writes under /tmp
    return elapsed
