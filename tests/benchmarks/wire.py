"""Wire benchmarks: `lag` against mqadmin, `lag` over TLS against `lag` in plaintext (the same
group on the same brokers: the bench sandbox takes both), and request rate by number in flight.

- `lag_cli_tls_s`: `lag -g GROUP --json` over TLS, the whole process (its handshakes with the
  name server and both brokers included); `lag_tls_cost` is its ratio to `lag_cli_s` (target
  < 1.3).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from console.rocketmq.admin import AdminClient
from console.sandbox.cache import Distribution, cache_root
from console.sandbox.jvm import jvm_env
from console.sandbox.mqadmin import Mqadmin
from console.sandbox.scenario import GROUP_LIVE
from console.sandbox.toolchain import find_tools
from tests.benchmarks.stats import RUNS, median_of, time_process

RPC_SECONDS = 1.5


def run() -> dict[str, float]:
    namesrv = os.environ["RMQ_BENCH_NAMESRV"]
    work = Path(os.environ["RMQ_BENCH_RUN_DIR"]) / "bench-mqadmin"
    console = str(Path(sys.executable).with_name("rmq-console"))
    lag = median_of(
        RUNS,
        lambda: time_process([console, "lag", "-g", GROUP_LIVE, "--json", "--namesrv", namesrv]),
    )
    tls_env = {**os.environ, "RMQ_CONSOLE_CONFIG": os.environ["RMQ_BENCH_TLS_CONFIG"]}
    lag_tls = median_of(
        RUNS,
        lambda: time_process(
            [console, "lag", "-g", GROUP_LIVE, "--json", "--cluster", "bench-tls"], env=tls_env
        ),
    )
    # The whole mqadmin process, as an operator waits for it (JVM start to exit).
    tool = Mqadmin(find_tools().java, Distribution.in_cache(cache_root()), namesrv, work)
    (work / "home").mkdir(parents=True, exist_ok=True)
    argv = tool.argv("consumerProgress", "-g", GROUP_LIVE)
    env = jvm_env(work / "home")
    mqadmin = median_of(RUNS, lambda: time_process(argv, env=env))
    out = {
        "lag_cli_s": lag,
        "lag_cli_tls_s": lag_tls,
        "lag_tls_cost": lag_tls / lag,
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
