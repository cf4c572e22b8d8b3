"""Applying a 10,000-queue plan, against mqadmin's per-queue reset.

- `apply_10k_s`: one group over 40 topics of 128 queues on each of the two brokers (10,240
  queues), a shift-by -2 plan applied on the offline path (both brokers with
  useServerSideResetOffset=false for the run, no consumer online): loading the plan and checking
  its hash, the drift check (every queue read again), the journal, the writes (256 in flight)
  and the read-back of every queue, median of RUNS. Goal < 5 s.
- `apply_10k_server_side_s`: the same on the server-side reset path (the brokers' default).
- `mqadmin_reset_one_queue_s`: one `mqadmin resetOffsetByTime -b -q -o` (mqadmin's per-queue
  update: a JVM per queue), median of RUNS; `mqadmin_reset_1k_s` is 1,000 of them at that
  median (running 1,000 JVMs would take over an hour of the run).

Every timed apply must end with every queue verified; one that does not fails the benchmark.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import tempfile
import time
from pathlib import Path

from console.domain.journal import ApplyStatus, QueueState
from console.domain.reset_paths import ResetPathKind
from console.domain.spec import ResetSpec, Scope, ShiftBy
from console.rocketmq.admin import AdminClient
from console.sandbox.cache import Distribution, cache_root
from console.sandbox.jvm import jvm_env
from console.sandbox.mqadmin_oracle import Mqadmin
from console.sandbox.toolchain import find_tools
from console.services.apply.check import check_apply
from console.services.apply.offset_writer import OffsetWrite, OffsetWriter
from console.services.apply.writer import Applier
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import Workspace
from console.services.plan.load import load_plan
from console.services.plan.planner import Planner
from console.services.read.reader import ClusterReader
from tests.benchmarks.stats import RUNS, median_of
from tests.support.sends import indexed
from tests.support.writes import write_access

TOPICS = 40
QUEUES_PER_BROKER = 128
MESSAGES_PER_QUEUE = 3
GROUP = "bench-apply-10k"  # a new group per timed run: bench-apply-10k-0, -1, ...
SHIFT = -2
IN_FLIGHT = 256
UPDATE_BROKER_CONFIG = 25
DELETE_SUBSCRIPTIONGROUP = 207


def run() -> dict[str, float]:
    namesrv = os.environ["RMQ_BENCH_NAMESRV"]
    work = Path(os.environ["RMQ_BENCH_RUN_DIR"]) / "bench-apply"
    with tempfile.TemporaryDirectory(prefix="rmq-bench-apply-") as tmp:
        root = Path(tmp)
        topics = [f"bench-apply-{i:02d}" for i in range(TOPICS)]
        asyncio.run(_seed(namesrv, topics))
        groups = (f"{GROUP}-{n}" for n in range(2 * RUNS))

        def timed(offline: bool) -> float:
            return asyncio.run(_timed(namesrv, runner, root, topics, next(groups), offline=offline))

        with SparkRunner("local[2]", log_path=root / "spark.log") as runner:
            out = {
                "apply_10k_s": median_of(RUNS, lambda: timed(True)),
                "apply_10k_server_side_s": median_of(RUNS, lambda: timed(False)),
            }
    one = median_of(RUNS, lambda: _mqadmin_one_queue(namesrv, work, topics[0], f"{GROUP}-0"))
    out["mqadmin_reset_one_queue_s"] = one
    out["mqadmin_reset_1k_s"] = one * 1000
    # The groups go, with their 10,240 offsets each: the benchmarks after this one (the fleet
    # scan) measure the cluster they describe, not this one's leftovers.
    asyncio.run(_delete_groups(namesrv, [f"{GROUP}-{n}" for n in range(2 * RUNS)]))
    return out


async def _delete_groups(namesrv: str, groups: list[str]) -> None:
    async with AdminClient(namesrv, timeout=60) as admin:
        for addr in (await admin.master_addrs()).values():
            for group in groups:
                fields = {"groupName": group, "cleanOffset": "true"}
                await admin.call(addr, DELETE_SUBSCRIPTIONGROUP, fields)


async def _seed(namesrv: str, topics: list[str]) -> None:
    """The topics on both brokers with MESSAGES_PER_QUEUE messages in every queue."""
    async with AdminClient(namesrv, timeout=60) as admin:
        brokers = await admin.master_addrs()
        gate = asyncio.Semaphore(IN_FLIGHT)

        async def send(addr: str, topic: str, queue_id: int) -> None:
            async with gate:
                await admin.send_message(addr, topic, queue_id, b"apply")

        for addr in brokers.values():
            for topic in topics:
                await admin.create_topic(
                    addr, topic, read_queues=QUEUES_PER_BROKER, write_queues=QUEUES_PER_BROKER
                )
        await asyncio.gather(
            *(
                send(addr, t, q)
                for addr in brokers.values()
                for t in topics
                for q in range(QUEUES_PER_BROKER)
                for _ in range(MESSAGES_PER_QUEUE)
            )
        )
        for addr in brokers.values():
            for topic in topics:
                await indexed(
                    admin, addr, topic, dict.fromkeys(range(QUEUES_PER_BROKER), MESSAGES_PER_QUEUE)
                )


async def _commit(admin: AdminClient, group: str, topics: list[str]) -> None:
    """A new group committed at the end of every queue."""
    brokers = await admin.master_addrs()
    for addr in brokers.values():
        await admin.create_group(addr, group)
    report = await OffsetWriter(admin, in_flight=IN_FLIGHT).write(
        OffsetWrite(addr, group, t, q, MESSAGES_PER_QUEUE)
        for addr in brokers.values()
        for t in topics
        for q in range(QUEUES_PER_BROKER)
    )
    if not report.ok:
        raise RuntimeError(f"committing {group}: {report.summary()}")


async def _server_side(admin: AdminClient, on: bool) -> None:
    for addr in (await admin.master_addrs()).values():
        body = f"useServerSideResetOffset={'true' if on else 'false'}\n".encode()
        await admin.call(addr, UPDATE_BROKER_CONFIG, body=body)


async def _timed(
    namesrv: str, runner: SparkRunner, root: Path, topics: list[str], group: str, *, offline: bool
) -> float:
    """A new group committed and planned shift-by -2 (not timed), then load + check + apply +
    verify, timed."""
    ws = Workspace(root / "ws")
    async with AdminClient(namesrv, timeout=30) as admin:
        reader = ClusterReader(admin, None)
        await _commit(admin, group, topics)
        await _server_side(admin, on=not offline)
        try:
            planner = Planner(ws, runner, reader=reader, cluster="bench")
            spec = ResetSpec(Scope("bench", (group,), topics=tuple(topics)), ShiftBy(SHIFT))
            made = await planner.plan(spec)

            started = time.perf_counter()
            plan = load_plan(ws, made.uri, cluster="bench", now_ms=int(time.time() * 1000))
            check = await check_apply(reader, plan)
            journal = await Applier(write_access(reader, root / "ws", "bench")).apply(check)
            elapsed = time.perf_counter() - started
        finally:
            await _server_side(admin, on=True)
        kind = check.groups[0].path.kind
        wanted = ResetPathKind.OFFLINE_UPDATE if offline else ResetPathKind.SERVER_SIDE
        if kind is not wanted:
            raise RuntimeError(f"the apply took the {kind} path, not {wanted}")
        verified = journal.count(QueueState.VERIFIED)
        if journal.status is not ApplyStatus.FINISHED or verified != len(journal.queues):
            raise RuntimeError(
                f"apply {journal.apply_id}: {verified}/{len(journal.queues)} verified"
            )
        if len(journal.queues) != TOPICS * QUEUES_PER_BROKER * 2:
            raise RuntimeError(f"the plan changed {len(journal.queues)} queues")
    return elapsed


def _mqadmin_one_queue(namesrv: str, work: Path, topic: str, group: str) -> float:
    """One whole mqadmin process moving one queue of the group."""
    tool = Mqadmin(find_tools().java, Distribution.in_cache(cache_root()), namesrv, work)
    (work / "home").mkdir(parents=True, exist_ok=True)
    addr = asyncio.run(_first_master(namesrv))
    argv = tool.argv(
        "resetOffsetByTime", "-g", group, "-t", topic, "-s", "now", "-b", addr, "-q", "0", "-o", "1"
    )
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=jvm_env(work / "home"))
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"mqadmin resetOffsetByTime: {done.stdout} {done.stderr}".strip())
    return elapsed


async def _first_master(namesrv: str) -> str:
    async with AdminClient(namesrv, timeout=10) as admin:
        brokers = await admin.master_addrs()
        return brokers[sorted(brokers)[0]]
