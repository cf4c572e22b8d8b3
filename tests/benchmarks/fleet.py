"""The fleet scan: `rmq-console groups --json` over 2,000 groups, against mqadmin.

- `fleet_2000_groups_s`: the whole `groups --json` process (start to exit) on 2,000 groups of
  16 queues each (8 on each of the two brokers), median of 5 (target < 3).
- `fleet_2000_groups_timeout1_s`: the same with `--timeout 1`.
- `mqadmin_fleet_2000_groups_s`: the whole `mqadmin consumerProgress` (no `-g`: every group it
  finds through a %RETRY% topic), median of 5.
- `fleet_2000_seed_s`: creating the 2,000 groups (with their %RETRY% topics, which is how
  mqadmin finds them) and committing their 32,000 offsets, once per run.
- `fleet_load_avg_1m`: the machine's 1-minute load average when the timed runs started.
- `fleet_2000_partial_rows_max`, `..._timeout1_max`: the most rows one run marked partial
  (honest, not wrong: a request that timed out under load).

Every timed `groups` run is checked, not only timed: each of the 2,000 rows must be complete
and carry the lag the seed committed, or be marked partial. A run with a wrong row fails the
benchmark.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from console.rocketmq.admin import AdminClient
from console.rocketmq.models import QueueStats
from console.sandbox.cache import Distribution, cache_root
from console.sandbox.jvm import jvm_env
from console.sandbox.mqadmin import Mqadmin, parse_group_list
from console.sandbox.toolchain import find_tools
from console.services.apply.offset_writer import OffsetWrite, OffsetWriter
from tests.benchmarks.stats import RUNS, median_of

GROUPS = 2000
PREFIX = "bench-fleet-"
TOPIC = "bench-fleet"
QUEUES_PER_BROKER = 8
MESSAGES_PER_QUEUE = 40
IN_FLIGHT = 64
CREATE_TOPIC_LIST = 18  # UPDATE_AND_CREATE_TOPIC_LIST (5.x)
CREATE_GROUP_LIST = 225  # UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (5.x)


def run() -> dict[str, float]:
    namesrv = os.environ["RMQ_BENCH_NAMESRV"]
    work = Path(os.environ["RMQ_BENCH_RUN_DIR"]) / "bench-fleet"
    groups = [f"{PREFIX}{i:04d}" for i in range(GROUPS)]
    started = time.perf_counter()
    expected = asyncio.run(_seed(namesrv, groups))
    seeded = time.perf_counter() - started

    console = str(Path(sys.executable).with_name("rmq-console"))
    argv = [console, "groups", "--json", "--namesrv", namesrv]
    load = os.getloadavg()[0]  # the machine the times below were taken on
    partial: dict[str, int] = {"default": 0, "timeout1": 0}
    fleet = median_of(RUNS, lambda: _timed_scan(argv, expected, partial, "default"))
    t1 = [*argv, "--timeout", "1"]
    fleet_t1 = median_of(RUNS, lambda: _timed_scan(t1, expected, partial, "timeout1"))

    tool = Mqadmin(find_tools().java, Distribution.in_cache(cache_root()), namesrv, work)
    (work / "home").mkdir(parents=True, exist_ok=True)
    mq_argv = tool.argv("consumerProgress")
    env = jvm_env(work / "home")
    mqadmin = median_of(RUNS, lambda: _timed_mqadmin(mq_argv, env, set(groups)))
    return {
        "fleet_2000_seed_s": seeded,
        "fleet_load_avg_1m": load,
        "fleet_2000_groups_s": fleet,
        "fleet_2000_groups_timeout1_s": fleet_t1,
        "fleet_2000_partial_rows_max": partial["default"],
        "fleet_2000_partial_rows_timeout1_max": partial["timeout1"],
        "mqadmin_fleet_2000_groups_s": mqadmin,
    }


# ---- the timed runs ----------------------------------------------------------------------------


def _timed_scan(
    argv: Sequence[str], expected: dict[str, int], partial: dict[str, int], mode: str
) -> float:
    """One whole `groups --json` process; fails on any row that is wrong and not marked, and
    keeps the most rows marked partial in one run of `mode` (rows that are honest, not wrong)."""
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise RuntimeError(f"groups exited {done.returncode}: {done.stderr.strip()}")
    document = json.loads(done.stdout)
    wrong = wrong_rows(document, expected)
    if wrong:
        raise RuntimeError(f"{len(wrong)} rows wrong and not marked partial, e.g. {wrong[:3]}")
    marked = sum(1 for r in document["groups"] if r["group"] in expected and r["partial"])
    partial[mode] = max(partial[mode], marked)
    return elapsed


def wrong_rows(document: dict[str, object], expected: dict[str, int]) -> list[str]:
    """Groups of `expected` whose row is missing, or claims a lag other than expected without
    saying it is partial."""
    rows = document["groups"]
    assert isinstance(rows, list)
    by_name = {r["group"]: r for r in rows}
    wrong = []
    for group, lag in expected.items():
        row = by_name.get(group)
        if row is None:
            if not document["partial"]:
                wrong.append(f"{group}: no row")
            continue
        if row["partial"]:
            continue
        if row["total_lag"] != lag or row["unknown_queues"] != 0:
            wrong.append(f"{group}: lag {row['total_lag']}, expected {lag}")
    return wrong


def _timed_mqadmin(argv: Sequence[str], env: dict[str, str], groups: set[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
    elapsed = time.perf_counter() - started
    listed = {g.group for g in parse_group_list(done.stdout)}
    if not groups <= listed:
        raise RuntimeError(f"mqadmin listed {len(groups & listed)} of the {len(groups)} groups")
    return elapsed


# ---- the seed ----------------------------------------------------------------------------------


async def _seed(namesrv: str, groups: Sequence[str]) -> dict[str, int]:
    """The topic (8 queues on each broker, MESSAGES_PER_QUEUE messages each), every group on
    both brokers with its %RETRY% topic, each group committed at its own offset on all 16
    queues. Returns each group's total lag.

    Groups and topics go in one request per broker each (the list forms of the create
    requests): a broker persists its whole table after every create, so 2,000 single creates
    cost it 2,000 rewrites of a growing file."""
    async with AdminClient(namesrv, timeout=60) as admin:
        brokers = await admin.master_addrs()
        gate = asyncio.Semaphore(IN_FLIGHT)

        async def send(addr: str, queue_id: int) -> None:
            async with gate:
                await admin.send_message(addr, TOPIC, queue_id, b"fleet")

        for addr in brokers.values():
            await admin.create_topic(
                addr, TOPIC, read_queues=QUEUES_PER_BROKER, write_queues=QUEUES_PER_BROKER
            )
        await asyncio.gather(
            *(
                send(addr, q)
                for addr in brokers.values()
                for q in range(QUEUES_PER_BROKER)
                for _ in range(MESSAGES_PER_QUEUE)
            )
        )
        for addr in brokers.values():
            await admin.call(addr, CREATE_GROUP_LIST, body=_group_list(groups))
            await admin.call(addr, CREATE_TOPIC_LIST, body=_retry_topic_list(groups))
        committed = {g: 1 + i % (MESSAGES_PER_QUEUE - 1) for i, g in enumerate(groups)}
        report = await OffsetWriter(admin, in_flight=IN_FLIGHT).write(
            OffsetWrite(addr, g, TOPIC, q, committed[g])
            for addr in brokers.values()
            for q in range(QUEUES_PER_BROKER)
            for g in groups
        )
        if not report.ok:
            raise RuntimeError(f"committing the {len(groups)} groups: {report.summary()}")
        # From the queues' max offsets as they are, not as planned: a send retried by the
        # client may have stored a message twice.
        maxes = [s.max_offset for a in brokers.values() for s in (await _stats(admin, a))]
        return {g: sum(m - c for m in maxes) for g, c in committed.items()}


async def _stats(admin: AdminClient, addr: str) -> list[QueueStats]:
    return list((await admin.topic_stats(addr, TOPIC)).values())


def _group_list(groups: Sequence[str]) -> bytes:
    """Body of UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (SubscriptionGroupList)."""
    configs = [
        {
            "groupName": g,
            "consumeEnable": True,
            "consumeFromMinEnable": True,
            "consumeBroadcastEnable": True,
            "retryQueueNums": 1,
            "retryMaxTimes": 16,
        }
        for g in groups
    ]
    return json.dumps({"groupConfigList": configs}).encode()


def _retry_topic_list(groups: Sequence[str]) -> bytes:
    """Body of UPDATE_AND_CREATE_TOPIC_LIST (CreateTopicListRequestBody): the %RETRY% topic
    mqadmin finds each group by."""
    topics = [
        {
            "topicName": f"%RETRY%{g}",
            "readQueueNums": 1,
            "writeQueueNums": 1,
            "perm": 6,
            "topicFilterType": "SINGLE_TAG",
            "topicSysFlag": 0,
            "order": False,
            "attributes": {},
        }
        for g in groups
    ]
    return json.dumps({"topicConfigList": topics}).encode()
