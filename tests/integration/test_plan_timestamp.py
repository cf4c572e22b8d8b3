"""Against the real sandbox: a to-timestamp plan's targets are what the official tools find for
the same time on every queue (DefaultMQAdminExt.searchOffset, via OffsetOracle.java), and the
`plan` command writes a plan without touching the cluster."""

from __future__ import annotations

import argparse
import asyncio
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from console.cli import plan as plan_cli
from console.domain.spec import ResetSpec, Scope, ToTimestamp
from console.sandbox.jvm import JDK_OPENS
from console.sandbox.runner import Sandbox
from console.sandbox.scenario import GROUP_OFFLINE, GROUP_RETRY
from console.sandbox.toolchain import find_tools
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import Workspace
from console.services.plan.planner import Planner
from console.services.read.reader import ClusterReader
from console.services.read.snapshots import SnapshotStore
from tests.connect import ConnectServer

ORACLE = Path(__file__).resolve().parents[2] / "console" / "sandbox" / "java" / "OffsetOracle.java"
Queue = tuple[str, str, int]


def oracle(tmp: Path, sandbox: Sandbox, ts_ms: int, queues: Sequence[Queue]) -> dict[Queue, int]:
    """Compile OffsetOracle against the sandbox's jars and ask it about every queue (over TLS
    when the sandbox's servers require it: mqadmin's system properties)."""
    tools = find_tools("javac")
    assert tools.javac is not None
    classpath = sandbox.distribution.classpath
    classes = tmp / "oracle"
    subprocess.run(
        [str(tools.javac), "-nowarn", "-cp", classpath, "-d", str(classes), str(ORACLE)],
        check=True,
        capture_output=True,
    )
    args = [str(x) for q in queues for x in q]
    out = subprocess.run(
        [
            str(tools.java),
            "-Xmx128m",
            *JDK_OPENS,
            f"-Duser.home={tmp}",
            *(f"-D{k}={v}" for k, v in sandbox.mqadmin.system_props.items()),
            "-cp",
            f"{classes}:{classpath}",
            "OffsetOracle",
            sandbox.namesrv_addr,
            str(ts_ms),
            *args,
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    answers: dict[Queue, int] = {}
    for line in out.stdout.splitlines():
        if not line.startswith("OFFSET "):
            continue  # the client's own chatter
        _, topic, broker, queue_id, offset = line.split()
        answers[(topic, broker, int(queue_id))] = int(offset)
    return answers


async def seek_time(sandbox: Sandbox) -> int:
    """A store time inside the seeding of `orders`: some queues land mid-way, not at an end."""
    async with sandbox.admin() as admin:
        firsts = []
        for addr in sandbox.broker_addrs.values():
            spans = await admin.consume_time_span(addr, "orders", GROUP_OFFLINE)
            firsts += [s.min_timestamp for s in spans.values() if s.min_timestamp > 0]
    # The seed sends each queue in six batches a second apart.
    return sorted(firsts)[len(firsts) // 2] + 2_500


async def test_to_timestamp_targets_match_the_tools(
    sandbox: Sandbox, plan_runner: SparkRunner, tmp_path: Path
) -> None:
    ts = await seek_time(sandbox)
    spec = ResetSpec(
        Scope("sandbox", (GROUP_OFFLINE, GROUP_RETRY), include_retry=True), ToTimestamp(ts)
    )
    async with sandbox.admin() as admin:
        reader = ClusterReader(admin, sandbox.cluster_name)
        planner = Planner(Workspace(tmp_path / "ws"), plan_runner, reader=reader, cluster="sandbox")
        result = await planner.plan(spec)
    rows = planner.rows(result.uri).to_pylist()
    ours = {(r["topic"], r["broker"], r["queue_id"]): r["target"] for r in rows}
    assert {t for t, _, _ in ours} >= {"orders", "payments", f"%RETRY%{GROUP_RETRY}"}
    theirs = await asyncio.to_thread(oracle, tmp_path, sandbox, ts, sorted(ours))
    assert ours == theirs
    # The time is inside the data: at least one queue lands strictly between its ends.
    assert any(r["min_offset"] < r["target"] < r["max_offset"] for r in rows)
    assert result.header.timestamp_ms == ts
    assert set(result.header.reset_paths) == {GROUP_OFFLINE, GROUP_RETRY}


def test_plan_command_is_a_dry_run(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, warm_cli: ConnectServer
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(f"workspace: {tmp_path / 'ws'}\n")
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config))
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "scope": {"cluster": "sandbox", "groups": [GROUP_OFFLINE], "topics": ["orders"]},
                "strategy": {"shift-by": -5},
            }
        )
    )
    before = asyncio.run(committed(sandbox))
    parser = argparse.ArgumentParser()
    plan_cli.register(parser.add_subparsers())
    args = parser.parse_args(
        [
            "plan",
            "--namesrv",
            sandbox.namesrv_addr,
            "--spec",
            str(spec),
            "--out",
            str(tmp_path / "plan"),
            "--csv",
            str(tmp_path / "plan.csv"),
        ]
    )
    assert args.handler(args) == 0
    assert (tmp_path / "plan" / "plan.json").exists()
    workspace = Workspace(tmp_path / "ws")
    assert len(workspace.snapshots("sandbox")) == 1  # the plan's own snapshot

    snap = parser.parse_args(
        [
            "snapshot",
            "--namesrv",
            sandbox.namesrv_addr,
            "--name",
            "sandbox",
            "-g",
            GROUP_OFFLINE,
            "-g",
            GROUP_RETRY,
        ]
    )
    assert snap.handler(snap) == 0
    refs = workspace.snapshots("sandbox")
    assert len(refs) == 2
    table = SnapshotStore(workspace).load(refs[1])
    assert set(table.column("group").to_pylist()) == {GROUP_OFFLINE, GROUP_RETRY}
    lines = (tmp_path / "plan.csv").read_text().splitlines()
    assert len(lines) == 1 + 8  # orders: 4 queues on each of two brokers
    assert asyncio.run(committed(sandbox)) == before  # nothing was written


async def committed(sandbox: Sandbox) -> dict[Queue, int | None]:
    async with sandbox.admin() as admin:
        out: dict[Queue, int | None] = {}
        for name, addr in sandbox.broker_addrs.items():
            for q in range(4):
                out[("orders", name, q)] = await admin.query_consumer_offset(
                    addr, GROUP_OFFLINE, "orders", q
                )
        return out
