"""Against the real sandbox, through the session's Spark Connect server: to-timestamp lookups run
the wire client in the server's Python workers and find what the official tools find; the `plan`
command sends its job to the warm host of `spark up`, and plans exactly what a local session
plans, and what a host of its own plans when the warm one is gone; a configured server that does
not answer is an error, or a local fallback when asked."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import pyarrow.parquet as pq
import yaml

from console.domain.plan import PlanHeader
from console.domain.spec import ResetSpec, Scope, ToTimestamp
from console.sandbox.runner import Sandbox
from console.sandbox.scenario import GROUP_OFFLINE, GROUP_RETRY
from console.services.infra import warm_host
from console.services.infra.connect_server import ServerHome, free_port
from console.services.infra.warm_host import HostFiles
from console.services.infra.workspace import Workspace
from console.services.plan.planner import Planner
from tests.connect import ConnectServer
from tests.support.timestamps import oracle, seek_time


async def test_to_timestamp_through_connect_matches_the_tools(
    sandbox: Sandbox, connect: ConnectServer, tmp_path: Path
) -> None:
    ts = await seek_time(sandbox)
    spec = ResetSpec(
        Scope("sandbox", (GROUP_OFFLINE, GROUP_RETRY), include_retry=True), ToTimestamp(ts)
    )
    with connect.runner(tmp_path / "spark.log") as runner:
        async with sandbox.admin() as admin:
            reader = sandbox.reader(admin)
            planner = Planner(Workspace(tmp_path / "ws"), runner, reader=reader, cluster="sandbox")
            result = await planner.plan(spec)
    rows = planner.rows(result.uri).to_pylist()
    ours = {(r["topic"], r["broker"], r["queue_id"]): r["target"] for r in rows}
    assert {t for t, _, _ in ours} >= {"orders", "payments", f"%RETRY%{GROUP_RETRY}"}
    theirs = await asyncio.to_thread(oracle, tmp_path, sandbox, ts, sorted(ours))
    assert ours == theirs
    assert any(r["min_offset"] < r["target"] < r["max_offset"] for r in rows)
    assert "Spark host on sc://localhost:" in (tmp_path / "spark.log").read_text()


def test_plan_command_uses_the_warm_server_and_plans_as_a_local_session(
    sandbox: Sandbox, connect: ConnectServer, tmp_path: Path
) -> None:
    ts = asyncio.run(seek_time(sandbox))
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "scope": {"cluster": "sandbox", "groups": [GROUP_OFFLINE], "include_retry": True},
                "strategy": {"to-timestamp": ts},
            }
        )
    )
    ws = tmp_path / "ws"
    warm_config = tmp_path / "warm.yaml"
    warm_config.write_text(f"workspace: {ws}\n")  # spark_master stays local[*]: the server wins
    target = ["--namesrv", sandbox.namesrv_addr, "--spec", str(spec), "--json"]

    warm = connect.cli("plan", *target, "--out", str(tmp_path / "warm"), config=warm_config)
    assert warm.returncode == 0, warm.stderr
    header = PlanHeader.from_json((tmp_path / "warm" / "plan.json").read_text())
    assert json.loads(warm.stdout)["plan"]["content_hash"] == header.content_hash
    # The warm host of `spark up` ran it: the command started no host of its own.
    assert not Workspace(ws).log_path().exists()
    host_log = HostFiles(ServerHome(connect.cache / "spark-connect")).log_path.read_text()
    assert f"warm Spark host on {connect.url}" in host_log

    # A configured server that does not answer: an error that says what to do ...
    dead = f"sc://127.0.0.1:{free_port()}"
    dead_config = tmp_path / "dead.yaml"
    dead_config.write_text(f"workspace: {ws}\nspark_master: {dead}\n")
    refused = connect.cli("plan", *target, "--out", str(tmp_path / "no"), config=dead_config)
    assert refused.returncode == 1
    assert f"the Spark Connect server {dead} (spark_master) does not answer" in refused.stderr
    assert "--local-fallback" in refused.stderr
    assert not (tmp_path / "no").exists()

    # ... and, when asked, a local session: the same snapshot gives the very same plan.
    local = connect.cli(
        "plan",
        *target,
        "--out",
        str(tmp_path / "local"),
        "--snapshot",
        header.snapshot.snapshot_id,
        "--local-fallback",
        config=dead_config,
    )
    assert local.returncode == 0, local.stderr
    assert "planning on a local Spark session instead" in local.stderr
    local_header = PlanHeader.from_json((tmp_path / "local" / "plan.json").read_text())
    assert local_header.content_hash == header.content_hash
    assert local_header.totals == header.totals
    assert local_header.timestamp_ms == header.timestamp_ms == ts
    assert pq.read_table(tmp_path / "local" / "rows.parquet").equals(
        pq.read_table(tmp_path / "warm" / "rows.parquet")
    )


def test_a_plan_through_the_warm_host_is_the_plan_without_it(
    sandbox: Sandbox, connect: ConnectServer, tmp_path: Path
) -> None:
    """The 8-queue group of the sandbox planned through the warm host, then, the host killed
    (its record left behind, as after a crash), by a host the command starts itself: no word of
    the dead host, the very same plan. `spark up` brings the host back for the session's other
    tests."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "scope": {"cluster": "sandbox", "groups": ["billing-service"]},
                "strategy": {"shift-by": -5},
            }
        )
    )
    ws = tmp_path / "ws"
    config = tmp_path / "config.yaml"
    config.write_text(f"workspace: {ws}\n")
    target = ["--namesrv", sandbox.namesrv_addr, "--spec", str(spec), "--json"]
    home = ServerHome(connect.cache / "spark-connect")
    files = HostFiles(home)

    warm = connect.cli("plan", *target, "--out", str(tmp_path / "warm"), config=config)
    assert warm.returncode == 0, warm.stderr
    assert not Workspace(ws).log_path().exists()  # no host of its own
    header = PlanHeader.from_json((tmp_path / "warm" / "plan.json").read_text())
    assert header.rows == 8

    host = files.read()
    assert host is not None
    os.kill(host.pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while warm_host.is_our_host(host.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        cold = connect.cli(
            "plan",
            *target,
            "--out",
            str(tmp_path / "cold"),
            "--snapshot",
            header.snapshot.snapshot_id,
            config=config,
        )
        assert cold.returncode == 0, cold.stderr
        assert "host" not in cold.stderr  # the dead host is nothing the operator must hear of
        assert f"Spark host on {connect.url}" in Workspace(ws).log_path().read_text()
        assert files.read() is None  # the stale record is gone
        cold_header = PlanHeader.from_json((tmp_path / "cold" / "plan.json").read_text())
        assert cold_header.content_hash == header.content_hash
        assert cold_header.totals == header.totals
        assert pq.read_table(tmp_path / "cold" / "rows.parquet").equals(
            pq.read_table(tmp_path / "warm" / "rows.parquet")
        )
    finally:
        again = connect.cli("spark", "up")
        assert again.returncode == 0, again.stderr
    assert "warm job host: pid" in again.stdout
    back = files.read()
    assert back is not None
    assert back.pid != host.pid
