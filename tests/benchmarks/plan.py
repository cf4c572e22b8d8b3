"""Plan benchmarks, all on local[2]:

- plan_10k_warm_s, plan_1m_warm_s: the plan job on the warm session host, the request as the
  console sends it (snapshot already written and checked), median of RUNS after one warm-up run;
- plan_1m_cold_s: a fresh host started without its warm-up, until the 1m-queue plan is written
  (what `rmq-console plan` pays with nothing warm);
- preview_1k_warm_s: the console's preview screen on a real 1,000-queue group of the sandbox
  (RMQ_BENCH_NAMESRV): from "Preview" to the diff on screen — snapshot, plan job, rows read —
  with the shared session warm.
- preview_small_warm_s: the same on the sandbox's 8-queue billing-service (target < 0.5): what
  is left is the plan job's own floor on a warm local[2] session (its stages scheduled and run
  for 8 rows), beside the snapshot's read and the rows' (compare plan_10k_warm_s).

Where preview_small_warm_s goes, timed phase by phase through the console's planner on a warm
local[2] host (2 cores, load 7-10 from other work): the snapshot read from the brokers and its
Parquet write 0.02-0.04 s, the rows read back 2-5 ms, the plan job 0.44-0.73 s, the whole
0.47-0.77 s; the screen itself adds little (0.73-0.77 s measured at load 8-9). The job is one
Spark query of one stage (Parquet scan, filter, projections, one task: `explain`): in a classic
session the DataFrame's construction over py4j takes ~0.1 s and the query ~0.13 s once the JVM
is JIT-warm, and any query, however trivial (`limit(1).collect()`), ~0.18 s. The session's
one warm-up plan does not make it JIT-warm: the same plan took 0.53 s (median of 8) after it,
0.30 s after 24 more and 0.22 s after 50, with AQE or whole-stage codegen off making no
difference beyond the noise. So the floor is Spark's per-query cost on a warm JVM (~0.2-0.3 s
on an idle machine of this class), not the plan's work; on this loaded machine the goal is met
only when it is otherwise idle.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from console.config import ClusterConfig, Config
from console.domain.job_requests import PlanRequest
from console.domain.plan import SnapshotInfo
from console.domain.spec import StrategyKind
from console.services.infra.spark_runner import SparkRunner, close_shared_runner
from console.services.infra.workspace import SnapshotRef, Workspace
from console.services.read.snapshots import ARROW_SCHEMA, Snapshot, SnapshotStore
from tests.benchmarks.stats import RUNS, median_of

MASTER = "local[2]"
T0 = 1_795_338_300_000
BENCH_TOPIC = "bench-plan-1k"
BENCH_GROUP = "bench-plan-1k-group"
SMALL_GROUP = "billing-service"  # the sandbox's: 8 queues


def run() -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="rmq-bench-plan-") as tmp:
        root = Path(tmp)
        store = SnapshotStore(Workspace(root / "ws"))
        small = Bench("10k", store.save(synthetic(groups=2, topics=5, queues=1000)), 2)
        big = Bench("1m", store.save(synthetic(groups=10, topics=50, queues=2000)), 10)
        out: dict[str, float] = {}
        out["plan_1m_cold_s"] = _cold(root, big)
        with SparkRunner(MASTER, log_path=root / "warm.log") as runner:
            runner.wait_ready(600)
            out["plan_10k_warm_s"] = _warm(runner, root, small)
            out["plan_1m_warm_s"] = _warm(runner, root, big)
        namesrv = os.environ["RMQ_BENCH_NAMESRV"]
        asyncio.run(_seed_group(namesrv))
        out["preview_1k_warm_s"] = asyncio.run(_preview(root, BENCH_GROUP, 1000))
        out["preview_small_warm_s"] = asyncio.run(_preview(root, SMALL_GROUP, 8))
        return out


def synthetic(*, groups: int, topics: int, queues: int) -> Snapshot:
    """groups x topics x queues rows (half on each broker); offsets spread so that a shift of
    -50 moves most queues and clamps some."""
    n = groups * topics * queues
    q = [k % (queues // 2) for k in range(n)]
    table = pa.table(
        {
            "cluster": pa.array(["bench"] * n),
            "broker": pa.array([f"broker-{'ab'[(k // (queues // 2)) % 2]}" for k in range(n)]),
            "broker_addr": pa.array(["127.0.0.1:10911"] * n),
            "topic": pa.array([f"topic-{(k // queues) % topics}" for k in range(n)]),
            "queue_id": pa.array(q, pa.int32()),
            "group": pa.array([f"group-{k // (queues * topics)}" for k in range(n)]),
            "min_offset": pa.array([k % 97 for k in range(n)], pa.int64()),
            "max_offset": pa.array([1000 + k % 1013 for k in range(n)], pa.int64()),
            "committed": pa.array([None if k % 50 == 0 else 40 + k % 900 for k in range(n)]),
            "last_timestamp": pa.array([T0 - k % 3600 * 1000 for k in range(n)], pa.int64()),
            "min_timestamp": pa.array([T0 - 7_200_000] * n, pa.int64()),
            "max_timestamp": pa.array([T0] * n, pa.int64()),
            "clients": pa.array([k % 2 for k in range(n)], pa.int32()),
            "message_model": pa.array(["CLUSTERING"] * n),
            "consume_tps": pa.array([10.0] * n),
            "taken_at": pa.array([T0] * n, pa.int64()),
        },
        schema=ARROW_SCHEMA,
    )
    return Snapshot("bench", T0 + n, table)


@dataclass(frozen=True)
class Bench:
    size: str
    snapshot: SnapshotRef
    groups: int


def _request(root: Path, bench: Bench, name: str) -> str:
    ref = bench.snapshot
    groups = [f"group-{k}" for k in range(bench.groups)]
    return PlanRequest(
        plan_id=name,
        spec={"scope": {"cluster": "bench", "groups": groups}, "strategy": {"shift-by": -50}},
        snapshot_uri=ref.uri,
        snapshot=SnapshotInfo("bench", ref.snapshot_id, ref.taken_at_ms),
        out_uri=f"file://{root / 'plans' / name}",
        created_at_ms=T0,
        prechecked=True,
    ).to_json()


_count = itertools.count()


def _once(runner: SparkRunner, root: Path, bench: Bench) -> float:
    request = _request(root, bench, f"{bench.size}-{next(_count)}")
    started = time.perf_counter()
    runner.submit("plan", request).result(1800)
    return time.perf_counter() - started


def _warm(runner: SparkRunner, root: Path, bench: Bench) -> float:
    _once(runner, root, bench)  # the first plan of this size warms its code paths
    return median_of(RUNS, lambda: _once(runner, root, bench))


def _cold(root: Path, bench: Bench) -> float:
    started = time.perf_counter()
    with SparkRunner(MASTER, log_path=root / "cold.log", warm_up=False) as runner:
        runner.submit("plan", _request(root, bench, "1m-cold")).result(1800)
        return time.perf_counter() - started


# ---- the preview screen on the sandbox -----------------------------------------------------------


async def _seed_group(namesrv: str) -> None:
    """A topic of 500 queues on each broker, two messages in each, and a group committed at 1
    on all 1,000 of them (a real group's offsets: committed, min and max all known)."""
    from console.rocketmq.admin import AdminClient
    from console.services.apply.offset_writer import OffsetWrite, OffsetWriter
    from tests.support.sends import indexed

    async with AdminClient([namesrv], timeout=10.0) as admin:
        brokers = await admin.master_addrs()
        for addr in brokers.values():
            await admin.create_topic(addr, BENCH_TOPIC, read_queues=500, write_queues=500)
            await admin.create_group(addr, BENCH_GROUP)
        gate = asyncio.Semaphore(64)

        async def send(addr: str, q: int) -> None:
            async with gate:
                for _ in range(2):
                    await admin.send_message(addr, BENCH_TOPIC, q, b"bench")

        await asyncio.gather(*(send(a, q) for a in brokers.values() for q in range(500)))
        for addr in brokers.values():
            await indexed(admin, addr, BENCH_TOPIC, dict.fromkeys(range(500), 2))
        report = await OffsetWriter(admin).write(
            OffsetWrite(addr, BENCH_GROUP, BENCH_TOPIC, q, 1)
            for addr in brokers.values()
            for q in range(500)
        )
        if not report.ok:
            raise RuntimeError(f"seeding {BENCH_GROUP}: {report.summary()}")


async def _preview(root: Path, group: str, rows: int) -> float:
    from console.domain.readings import Refreshes
    from console.remote.proxy import remote_sources
    from console.services.read.cluster_session import ClusterSession
    from console.ui.app import make_app
    from console.ui.messages import PlanComputed
    from console.ui.screens.preview import PreviewScreen

    namesrv = os.environ["RMQ_BENCH_NAMESRV"]
    cluster = ClusterConfig("bench", (namesrv,))
    config = Config(
        clusters=(cluster,),
        refresh_interval=3600,
        spark_master=MASTER,
        workspace=str(root / f"preview-ws-{group}"),
    )
    computed = asyncio.Event()

    class TimedPreview(PreviewScreen):
        def on_plan_computed(self, message: PlanComputed) -> None:
            super().on_plan_computed(message)
            computed.set()

    app = make_app(config, remote_sources(config), cluster=cluster)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            session = ClusterSession(cluster, app.connect(cluster), Refreshes(10))
            screen = TimedPreview(session, group)
            await app.push_screen(screen)
            await pilot.pause()
            screen.query_one("#strategy").value = StrategyKind.EARLIEST  # type: ignore[attr-defined]
            times = []
            for _ in range(RUNS + 1):  # the first run starts and warms the shared session
                computed.clear()
                started = time.perf_counter()
                screen.action_preview()
                await computed.wait()
                times.append(time.perf_counter() - started)
                await app.workers.wait_for_complete()
                assert len(screen.flow.rows) == rows, len(screen.flow.rows)
            session.close()
    finally:
        close_shared_runner()
    return sorted(times[1:])[len(times[1:]) // 2]
