"""Resetting a POP group (fixture `proxy_cluster`: `click-counter` pops `clicks` through the
brokers' remoting port and holds everything it is handed; a test starts a POP consumer that acks
what it pops, to see it handed the messages again). Only the brokers' own reset moves a
POP group whose consumers are online: it is applied server-side, verified by reading back, and
the consumer is handed the messages from the target again. On brokers without server-side reset
the apply is refused at once, before anything is written (a client push does not reach POP
consumers, and their next pop would write over a direct write)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import yaml

from console.domain.journal import QueueState
from console.domain.plan import ResetPathKind
from console.domain.spec import ResetSpec, Scope, ShiftBy
from console.sandbox.pop import GROUP_POP, TOPIC_CLICKS, set_pop_mode
from console.sandbox.runner import Sandbox
from console.services.apply_check import ApplyCheck
from console.services.apply_session import ApplyPlan, ApplySession, Confirmation, WriteCheck
from console.services.cluster import ClusterReader
from console.services.plan_load import load_plan
from console.services.planning import Planner
from console.services.spark_runner import SparkRunner
from console.services.workspace import Workspace
from tests.integration.consumer_log import redelivered_from
from tests.support.brokers import without_server_side_reset
from tests.support.writes import write_access

CLUSTER = "pops"
BACK = 3  # messages replayed on every queue


async def committed(sb: Sandbox) -> dict[tuple[str, int], int | None]:
    async with sb.admin(timeout=10) as admin:
        out: dict[tuple[str, int], int | None] = {}
        for broker, addr in sorted(sb.broker_addrs.items()):
            for mq in await admin.topic_stats(addr, TOPIC_CLICKS):
                out[(broker, mq.queue_id)] = await admin.query_consumer_offset(
                    addr, GROUP_POP, TOPIC_CLICKS, mq.queue_id
                )
        return out


async def plan_back(sb: Sandbox, runner: SparkRunner, ws: Path, group: str = GROUP_POP) -> str:
    async with sb.admin(timeout=10) as admin:
        reader = ClusterReader(admin, sb.cluster_name)
        planner = Planner(Workspace(ws), runner, reader=reader, cluster=CLUSTER)
        spec = ResetSpec(Scope(CLUSTER, (group,), topics=(TOPIC_CLICKS,)), ShiftBy(-BACK))
        return (await planner.plan(spec)).uri


async def popped_everything(sb: Sandbox, group: str, timeout: float = 90.0) -> None:
    """Until the group's committed offsets reach every queue's max: POP moves them when the
    messages are popped."""
    deadline = time.monotonic() + timeout
    async with sb.admin(timeout=10) as admin:
        while True:
            short = []
            for broker, addr in sorted(sb.broker_addrs.items()):
                for mq, stats in (await admin.topic_stats(addr, TOPIC_CLICKS)).items():
                    at = await admin.query_consumer_offset(addr, group, TOPIC_CLICKS, mq.queue_id)
                    if at != stats.max_offset:
                        short.append(f"{broker}:{mq.queue_id} at {at} of {stats.max_offset}")
            if not short:
                return
            assert time.monotonic() < deadline, f"{group} did not pop everything: {short}"
            await asyncio.sleep(1)


async def test_a_pop_group_online_is_reset_by_its_brokers_and_handed_the_target_again(
    proxy_cluster: Sandbox, plan_runner: SparkRunner, tmp_path: Path
) -> None:
    sb = proxy_cluster
    ws = tmp_path / "ws"
    group = f"pop-acker-{uuid.uuid4().hex[:6]}"
    async with sb.admin(timeout=10) as admin:
        for addr in sb.broker_addrs.values():
            await admin.create_group(addr, group)
            await set_pop_mode(admin, addr, TOPIC_CLICKS, group)
    # A POP consumer that acks what it pops (the scenario's own holds everything it is handed).
    consumer = await sb.start_pop_consumer(group, TOPIC_CLICKS)
    try:
        await popped_everything(sb, group)
        uri = await plan_back(sb, plan_runner, ws, group)
        plan = load_plan(Workspace(ws), uri, cluster=CLUSTER, now_ms=int(time.time() * 1000))
        seen_from = consumer.log.stat().st_size
        checks: list[WriteCheck] = []

        async def confirm(check: WriteCheck) -> Confirmation:
            checks.append(check)
            return Confirmation(check.names)

        async with sb.admin(timeout=10) as admin:
            reader = ClusterReader(admin, sb.cluster_name)
            proxies = (sb.proxy_addr,) if sb.proxy_addr else ()
            access = write_access(reader, ws, CLUSTER, proxies=proxies)
            result = await ApplySession(access, ApplyPlan(plan)).run(confirm)

        (check,) = checks
        assert isinstance(check, ApplyCheck)
        (writes,) = check.groups
        assert writes.pop
        assert writes.consumers_online == 1
        assert writes.path.kind is ResetPathKind.SERVER_SIDE
        assert "popped and not acked still come back" in writes.path.reason
        journal = result.journal
        assert journal is not None, result.refused
        assert {q.state for q in journal.queues} == {QueueState.VERIFIED}
        # The consumer is handed each queue's messages from the target again.
        targets = {(q.broker, q.queue_id): q.target for q in journal.queues}
        again = await redelivered_from(consumer.log, seen_from, targets, TOPIC_CLICKS)
        assert again == targets
    finally:
        await consumer.stop()


def test_a_pop_group_online_without_server_side_reset_is_refused_at_once(
    proxy_cluster: Sandbox, plan_runner: SparkRunner, tmp_path: Path
) -> None:
    sb = proxy_cluster
    ws = tmp_path / "ws"
    uri = asyncio.run(plan_back(sb, plan_runner, ws))
    config = tmp_path / "config.yaml"
    entry = {**sb.config_entry(CLUSTER), "proxies": [sb.proxy_addr]}
    config.write_text(yaml.safe_dump({"clusters": [entry], "workspace": str(ws)}))
    before = asyncio.run(committed(sb))

    async def refused() -> tuple[subprocess.CompletedProcess[str], float]:
        async with without_server_side_reset(sb):
            started = time.monotonic()
            done = await asyncio.to_thread(
                subprocess.run,
                [
                    str(Path(sys.executable).with_name("rmq-console")),
                    *("apply", uri, "--cluster", CLUSTER, "--confirm", GROUP_POP),
                ],
                capture_output=True,
                text=True,
                timeout=120,
                env={"PATH": os.environ.get("PATH", ""), "RMQ_CONSOLE_CONFIG": str(config)},
                check=False,
            )
            return done, time.monotonic() - started

    done, took = asyncio.run(refused())
    assert done.returncode == 2, done.stdout + done.stderr
    assert took < 20  # the check says so: no push is tried, nothing waited for
    assert "pop" in done.stderr
    assert "useServerSideResetOffset=true" in done.stderr
    assert "nothing was written" in done.stderr
    assert asyncio.run(committed(sb)) == before
    assert not (ws / "journal").exists()
