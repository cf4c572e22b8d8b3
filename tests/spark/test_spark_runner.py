"""The warm Spark session in its own process: jobs, progress, input errors, cancel, and a
terminal left alone (the JVM's output goes to the log file)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from console.domain.job_requests import PlanRequest
from console.domain.plan import SnapshotInfo
from console.services.infra.spark_jobs import JobCancelled, JobInputError, JobProgress, JobState
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import SnapshotRef, Workspace
from console.services.read.snapshots import Snapshot, SnapshotStore, snapshot_table
from tests.spark.fakes import group
from tests.support.processes import Process, processes

pytestmark = pytest.mark.spark
T = 1_795_338_300_000


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkRunner]:
    log = tmp_path_factory.mktemp("host") / "spark-host.log"
    with SparkRunner("local[2]", log_path=log, conf={"spark.sql.shuffle.partitions": "2"}) as r:
        r.wait_ready(300)
        yield r


@pytest.fixture
def snapshot(tmp_path: Path) -> SnapshotRef:
    g = group("g", [("orders", "broker-a", q, 0, 100, 10 * q) for q in range(6)])
    table = snapshot_table("c1", [g], {"broker-a": "127.0.0.1:1"})
    return SnapshotStore(Workspace(tmp_path)).save(Snapshot("c1", T, table))


def request(snap: SnapshotRef, out: Path, strategy: object, **kw: object) -> str:
    scope = kw.pop("scope", {"cluster": "c1", "groups": ["g"]})
    return PlanRequest(
        plan_id="p",
        spec={"scope": scope, "strategy": strategy},
        snapshot_uri=snap.uri,
        snapshot=SnapshotInfo("c1", snap.snapshot_id, T),
        out_uri=f"file://{out}",
        created_at_ms=T,
        **kw,  # type: ignore[arg-type]
    ).to_json()


def test_plan_with_progress(
    runner: SparkRunner, snapshot: SnapshotRef, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    seen: list[JobProgress] = []
    handle = runner.submit("plan", request(snapshot, tmp_path / "p", "latest"), seen.append)
    header = json.loads(handle.result(300))
    assert header["rows"] == 6
    assert header["totals"][0]["skip"] == sum(100 - 10 * q for q in range(6))  # latest skips
    rows = pq.read_table(tmp_path / "p" / "rows.parquet").to_pylist()
    assert [r["target"] for r in rows] == [100] * 6
    assert seen[0].state is JobState.QUEUED
    assert seen[-1].state is JobState.SUCCEEDED
    running = [p for p in seen if p.state is JobState.RUNNING]
    assert {"reading the snapshot", "computing the plan"} <= {p.step for p in running}
    assert any(p.total > 0 for p in running)
    assert all(p.done <= p.total for p in running)
    out, err = capfd.readouterr()
    assert "log4j" not in out + err
    assert "WARN" not in out + err
    assert "Using Spark's default log4j profile" in runner.log_path.read_text()


def test_input_error_names_the_field(
    runner: SparkRunner, snapshot: SnapshotRef, tmp_path: Path
) -> None:
    bad = request(snapshot, tmp_path / "p", "latest", scope={"cluster": "c1", "groups": ["x"]})
    with pytest.raises(JobInputError, match=r"^scope.groups\[0\]: group 'x'"):
        runner.submit("plan", bad).result(300)
    assert not (tmp_path / "p").exists()


def test_cancel_interrupts_a_running_job(runner: SparkRunner, tmp_path: Path) -> None:
    # A "broker" that accepts connections and never answers: the timestamp search blocks.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    addr = f"127.0.0.1:{silent.getsockname()[1]}"
    g = group("g", [("orders", "broker-a", q, 0, 100, 10) for q in range(3)])
    snap = SnapshotStore(Workspace(tmp_path)).save(
        Snapshot("c1", T, snapshot_table("c1", [g], {"broker-a": addr}))
    )
    computing = threading.Event()

    def progress(p: JobProgress) -> None:
        if p.step == "computing the plan" and p.active > 0:
            computing.set()

    req = request(snap, tmp_path / "p", {"to-timestamp": T}, timestamp_ms=T, search_timeout_s=600.0)
    handle = runner.submit("plan", req, progress)
    assert computing.wait(300)
    handle.cancel()
    with pytest.raises(JobCancelled):
        handle.result(300)
    assert not (tmp_path / "p" / "plan.json").exists()
    silent.close()
    # The session is still good for the next job.
    again = runner.submit("plan", request(snap, tmp_path / "q", "earliest"))
    assert json.loads(again.result(300))["rows"] == 3


def test_await_from_asyncio(runner: SparkRunner, snapshot: SnapshotRef, tmp_path: Path) -> None:
    async def go() -> str:
        return await runner.submit("plan", request(snapshot, tmp_path / "p", "earliest")).wait()

    totals = json.loads(asyncio.run(go()))["totals"][0]  # earliest re-consumes everything
    assert totals["re_consume"] == sum(10 * q for q in range(6))


def _running() -> list[Process]:
    """Not the zombies: a JVM orphaned by its host is reaped by pid 1, which in some containers
    never does."""
    return [p for p in processes() if p.state != "Z"]


def test_a_host_closed_while_its_session_starts_stops_now_with_its_jvm(tmp_path: Path) -> None:
    """A command that fails before its first job (a spec error, a cluster that does not answer)
    closes a host whose JVM is still starting: the host and its JVM are stopped then, not
    after the session is up, and nothing of theirs is left running."""
    me = os.getpid()
    before = {p.pid for p in _running()}  # the module's warm runner has a host of its own
    runner = SparkRunner("local[1]", log_path=tmp_path / "host.log", warm_up=False)
    runner.start()
    # A child just forked shows this process's command line until it has exec'd the host's.
    deadline = time.monotonic() + 60
    while not (
        hosts := [
            p.pid
            for p in _running()
            if p.ppid == me and "jobs.host" in p.command_line and p.pid not in before
        ]
    ):
        assert time.monotonic() < deadline, "the runner started no host"
        time.sleep(0.05)
    (host,) = hosts
    deadline = time.monotonic() + 120
    while not any(p.ppid == host and "java" in p.command_line for p in _running()):
        assert time.monotonic() < deadline, "the host never launched its JVM"
        time.sleep(0.05)
    assert not runner.ready
    runner.close()
    # Had close waited for the host, the session would have come up first and `ready` held.
    assert not runner.ready
    deadline = time.monotonic() + 60
    while left := [p.command_line for p in _running() if p.pgid == host]:
        assert time.monotonic() < deadline, f"still running a minute after close: {left}"
        time.sleep(0.1)
