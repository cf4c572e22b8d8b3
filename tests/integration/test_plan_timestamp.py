"""Against the real sandbox: a to-timestamp plan's targets are what the official tools find for
the same time on every queue (DefaultMQAdminExt.searchOffset, via OffsetOracle.java), and the
`plan` command writes a plan without touching the cluster."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import pytest
import yaml

from console.cli import plan as plan_cli
from console.domain.spec import ResetSpec, Scope, ToTimestamp
from console.sandbox.runner import Sandbox
from console.sandbox.scenario import GROUP_OFFLINE, GROUP_RETRY
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import Workspace
from console.services.plan.planner import Planner
from console.services.read.snapshots import SnapshotStore
from tests.connect import ConnectServer
from tests.support.timestamps import Queue, oracle, seek_time


async def test_to_timestamp_targets_match_the_tools(
    sandbox: Sandbox, plan_runner: SparkRunner, tmp_path: Path
) -> None:
    ts = await seek_time(sandbox)
    spec = ResetSpec(
        Scope("sandbox", (GROUP_OFFLINE, GROUP_RETRY), include_retry=True), ToTimestamp(ts)
    )
    async with sandbox.admin() as admin:
        reader = sandbox.reader(admin)
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
