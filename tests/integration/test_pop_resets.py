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
from pathlib import Path

import pytest
import yaml

from console.sandbox.pop import GROUP_POP, TOPIC_CLICKS
from console.sandbox.runner import Sandbox
from console.services.infra.spark_runner import SparkRunner
from tests.support.brokers import without_server_side_reset
from tests.support.pop import CLUSTER, plan_back, reset_a_popping_group


async def committed(sb: Sandbox) -> dict[tuple[str, int], int | None]:
    async with sb.admin(timeout=10) as admin:
        out: dict[tuple[str, int], int | None] = {}
        for broker, addr in sorted(sb.broker_addrs.items()):
            for mq in await admin.topic_stats(addr, TOPIC_CLICKS):
                out[(broker, mq.queue_id)] = await admin.query_consumer_offset(
                    addr, GROUP_POP, TOPIC_CLICKS, mq.queue_id
                )
        return out


@pytest.mark.parametrize("orderly", [False, True], ids=["concurrent", "fifo"])
async def test_a_pop_group_online_is_reset_by_its_brokers_and_handed_the_target_again(
    proxy_cluster: Sandbox, plan_runner: SparkRunner, tmp_path: Path, orderly: bool
) -> None:
    """Concurrent and ordered (FIFO) POP consumers alike (apache/rocketmq 10229 reports a
    server-side reset a FIFO POP consumer does not take: not so on 5.3.3 with nothing held)."""
    await reset_a_popping_group(proxy_cluster, plan_runner, tmp_path / "ws", orderly=orderly)


def test_a_pop_group_online_without_server_side_reset_is_refused_at_once(
    proxy_cluster: Sandbox, plan_runner: SparkRunner, tmp_path: Path
) -> None:
    sb = proxy_cluster
    ws = tmp_path / "ws"
    uri = asyncio.run(plan_back(sb, plan_runner, ws, GROUP_POP, TOPIC_CLICKS))
    config = tmp_path / "config.yaml"
    entry = sb.config_entry(CLUSTER)
    config.write_text(yaml.safe_dump({"clusters": [entry], "workspace": str(ws)}))
    before = asyncio.run(committed(sb))

    async def refused() -> subprocess.CompletedProcess[str]:
        async with without_server_side_reset(sb):
            return await asyncio.to_thread(
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

    done = asyncio.run(refused())
    # Refused by the check, before any write or client push: no journal, nothing moved.
    assert done.returncode == 2, done.stdout + done.stderr
    assert "pop" in done.stderr
    assert "useServerSideResetOffset=true" in done.stderr
    assert "nothing was written" in done.stderr
    assert asyncio.run(committed(sb)) == before
    assert not (ws / "journal").exists()
