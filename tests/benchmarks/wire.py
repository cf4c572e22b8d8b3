"""Wire benchmarks: `lag` against mqadmin, and request rate by number in flight."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from console.rocketmq.admin import AdminClient
from console.sandbox.mqadmin import mqadmin_argv
from console.sandbox.scenario import BENCH_GROUP
from tests.benchmarks.stats import RUNS, median_of, time_process

RPC_SECONDS = 1.5


def run() -> dict[str, float]:
    namesrv = os.environ["RMQ_BENCH_NAMESRV"]
    console = str(Path(sys.executable).with_name("rmq-console"))
    lag = median_of(
        RUNS,
        lambda: time_process([console, "lag", "-g", BENCH_GROUP, "--json", "--namesrv", namesrv]),
    )
    mqadmin = median_of(
        RUNS, lambda: time_process(mqadmin_argv("consumerProgress", "-g", BENCH_GROUP, "-n", namesrv))
    )
    out = {
        "lag_cli_s": lag,
        "mqadmin_consumer_progress_s": mqadmin,
        "lag_speedup": mqadmin / lag,
    }
    for inflight in (1, 16, 256):
        out[f"rpc_per_s_inflight_{inflight}"] = median_of(
            RUNS, lambda n=inflight: asyncio.run(_rpc_rate(namesrv, n))
        )
    return out


async def _rpc_rate(namesrv: str, inflight: int) -> float:
    """GET_MAX_OFFSET requests per second against one broker with `inflight` outstanding."""
    async with AdminClient(namesrv) as client:
        broker = sorted((await client.master_addrs()).values())[0]
        await client.max_offset(broker, "TBW102", 0)  # connect outside the timed part
        done = 0
        deadline = time.perf_counter() + RPC_SECONDS

        async def worker() -> None:
            nonlocal done
            while time.perf_counter() < deadline:
                await client.max_offset(broker, "TBW102", 0)
                done += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(inflight)))
        return done / (time.perf_counter() - started)
