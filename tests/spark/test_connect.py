"""Spark Connect as an engine: every strategy's plan and the impact job through the session's
Connect server (started by `rmq-console spark up`) equal the local session's, row for row; a
job's progress and cancel work through it; `spark status` and the CLI's choice of engine.

The time strategies ask brokers for offsets from inside the job: by-duration is planned against
a broker whose store times follow a fixed rule (tests/spark/store_times.py), with the time it
goes back to resolved once, when the request is made (as the planner does), so the local session
and the server's workers ask the same questions and get the same answers."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from console.domain.job_requests import ImpactRequest, PlanRequest
from console.domain.plan import SnapshotInfo
from console.domain.spec import FileOffset
from console.services.infra import connect_server
from console.services.infra.connect_server import ServerDied, ServerHome, free_port
from console.services.infra.spark_engine import choose_engine
from console.services.infra.spark_jobs import JobCancelled, JobFailed, JobProgress, JobState
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.warm_host import HostFiles
from console.services.infra.workspace import SnapshotRef, Workspace
from console.services.read.snapshots import Snapshot, SnapshotStore, snapshot_table
from jobs.host import JOBS
from jobs.run import read_plan_rows
from tests.connect import ConnectServer
from tests.spark import frames
from tests.spark.fakes import group
from tests.spark.store_times import StoreTimes, StoreTimesBroker, store_times_broker

pytestmark = pytest.mark.spark

SNAP = SnapshotInfo("c1", "20231114T221320000Z", frames.TAKEN_AT)
PAST = SnapshotInfo("c1", "20231114T211320000Z", frames.TAKEN_AT - 3_600_000)
MIN = 60_000
T = 1_795_338_300_000
CREATED = frames.TAKEN_AT + 1000  # when the test's plans are made
STORED = StoreTimes(base_ms=frames.TAKEN_AT - 120 * MIN)


@pytest.fixture(scope="module")
def runner(
    connect: ConnectServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SparkRunner]:
    with connect.runner(tmp_path_factory.mktemp("host") / "spark-host.log") as r:
        r.wait_ready(300)
        yield r


@pytest.fixture(scope="module")
def store_broker() -> Iterator[StoreTimesBroker]:
    with store_times_broker(STORED) as broker:
        yield broker


@pytest.fixture(scope="module")
def snapshots(
    spark: SparkSession,
    store_broker: StoreTimesBroker,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, str]:
    """The standard snapshot, a past one of the same group, and the standard one again with
    every broker at the store-times broker."""
    tmp = tmp_path_factory.mktemp("snapshots")

    def write(df: Any, name: str) -> str:
        df.coalesce(1).write.parquet(str(tmp / name))
        return f"file://{tmp / name}"

    return {
        "now": write(frames.standard(spark), "now.parquet"),
        "past": write(
            frames.snapshot(
                spark,
                [
                    {**frames.Q0, "committed": 12, "taken_at": PAST.taken_at_ms},
                    {**frames.Q1, "committed": 55, "taken_at": PAST.taken_at_ms},
                ],
            ),
            "past.parquet",
        ),
        "timed": write(
            frames.standard(spark).withColumn("broker_addr", F.lit(store_broker.addr)),
            "timed.parquet",
        ),
    }


STRATEGIES: dict[str, dict[str, Any]] = {
    "earliest": {"strategy": "earliest"},
    "latest": {"strategy": "latest"},
    "to-offset": {"strategy": {"to-offset": 70}},
    "shift-back": {"strategy": {"shift-by": -30}},
    "shift-forward": {"strategy": {"shift-by": 50}, "scope": {"include_retry": True}},
    "no-clamp": {"strategy": {"to-offset": 150}, "clamp": False},
    "queue-ids": {"strategy": "earliest", "scope": {"queue_ids": [0, 2]}},
    "to-group": {"strategy": {"to-group": "h"}, "scope": {"include_retry": True}},
    "to-snapshot": {"strategy": {"to-snapshot": PAST.snapshot_id}, "source": True},
    "from-file": {
        "strategy": {"from-file": "o.csv"},
        "file_rows": (
            FileOffset(2, "orders", "broker-a", 1, 75),
            FileOffset(3, "orders", "broker-b", 2, 4),
        ),
    },
    # Resolved as the planner resolves it: the moment the plan is made, minus the duration.
    "by-duration": {
        "strategy": {"by-duration": "30m"},
        "snapshot": "timed",
        "timestamp_ms": CREATED - 30 * MIN,
        # The store-times broker's first message at or after that time, per queue of g (the
        # one on broker-b is past its max offset, 10, and clamped to it).
        "targets": {0: 91, 1: 81, 2: 10},
    },
}


def plan_request(snapshots: dict[str, str], out: Path, case: dict[str, Any]) -> PlanRequest:
    spec: dict[str, Any] = {
        "scope": {"cluster": "c1", "groups": ["g"], **case.get("scope", {})},
        "strategy": case["strategy"],
    }
    if "clamp" in case:
        spec["clamp"] = case["clamp"]
    return PlanRequest(
        plan_id="p1",
        spec=spec,
        snapshot_uri=snapshots[case.get("snapshot", "now")],
        snapshot=SNAP,
        out_uri=f"file://{out}",
        created_at_ms=CREATED,
        timestamp_ms=case.get("timestamp_ms"),
        file_rows=case.get("file_rows", ()),
        source_snapshot_uri=snapshots["past"] if case.get("source") else None,
        source_snapshot=PAST if case.get("source") else None,
    )


def quiet(_: str) -> None:
    pass


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_every_strategy_plans_the_same_through_connect(
    name: str,
    spark: SparkSession,
    runner: SparkRunner,
    snapshots: dict[str, str],
    tmp_path: Path,
) -> None:
    case = STRATEGIES[name]
    local = JOBS["plan"](spark, plan_request(snapshots, tmp_path / "local", case).to_json(), quiet)
    remote = runner.submit(
        "plan", plan_request(snapshots, tmp_path / "connect", case).to_json()
    ).result(300)
    assert json.loads(remote) == json.loads(local)  # header: totals, hash, warnings, paths
    theirs = read_plan_rows(spark, f"file://{tmp_path / 'connect'}")
    ours = read_plan_rows(spark, f"file://{tmp_path / 'local'}")
    assert theirs.count() == ours.count() > 0
    assertDataFrameEqual(theirs, ours, checkRowOrder=True)
    if "targets" in case:  # the offsets came from the brokers' answers, not a default
        got = theirs.filter("topic = 'orders'").select("queue_id", "target").collect()
        assert {r["queue_id"]: r["target"] for r in got} == case["targets"]


def test_impact_is_the_same_through_connect(
    spark: SparkSession, runner: SparkRunner, snapshots: dict[str, str], tmp_path: Path
) -> None:
    plan = plan_request(snapshots, tmp_path / "plan", STRATEGIES["shift-back"])
    JOBS["plan"](spark, plan.to_json(), quiet)
    history = []
    for i, (c0, c1) in enumerate([(0, 55), (20, 58), (40, 60)]):
        path = tmp_path / f"h{i}.parquet"
        at = frames.TAKEN_AT - (2 - i) * MIN
        frames.snapshot(
            spark,
            [
                {**frames.Q0, "committed": c0, "taken_at": at, "consume_tps": 1.0 + i},
                {**frames.Q1, "committed": c1, "taken_at": at, "consume_tps": 1.0 + i},
            ],
        ).coalesce(1).write.parquet(str(path))
        history.append(f"file://{path}")
    request = ImpactRequest(plan.out_uri, (*history, snapshots["now"])).to_json()
    local = json.loads(JOBS["impact"](spark, request, quiet))
    remote = json.loads(runner.submit("impact", request).result(300))
    assert remote == local
    assert any(i["catch_up_s"] is not None for i in remote)  # rates were found


def broker_snapshot(tmp_path: Path, addr: str) -> SnapshotRef:
    """Three queues of group g on broker-a, which lives at `addr`."""
    g = group("g", [("orders", "broker-a", q, 0, 100, 10) for q in range(3)])
    return SnapshotStore(Workspace(tmp_path)).save(
        Snapshot("c1", T, snapshot_table("c1", [g], {"broker-a": addr}))
    )


def broker_request(snap: SnapshotRef, out: Path, strategy: Any, **kw: Any) -> str:
    return PlanRequest(
        plan_id="p",
        spec={"scope": {"cluster": "c1", "groups": ["g"]}, "strategy": strategy},
        snapshot_uri=snap.uri,
        snapshot=SnapshotInfo("c1", snap.snapshot_id, T),
        out_uri=f"file://{out}",
        created_at_ms=T,
        **kw,
    ).to_json()


def test_progress_and_cancel_through_connect(runner: SparkRunner, tmp_path: Path) -> None:
    # A "broker" that accepts connections and never answers: the timestamp search (the real
    # wire client, run by the server's Python workers) blocks until the job is cancelled.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    snap = broker_snapshot(tmp_path, f"127.0.0.1:{silent.getsockname()[1]}")
    seen: list[JobProgress] = []
    computing = threading.Event()

    def progress(p: JobProgress) -> None:
        seen.append(p)
        if p.step == "computing the plan" and p.active > 0:
            computing.set()

    req = broker_request(
        snap, tmp_path / "p", {"to-timestamp": T}, timestamp_ms=T, search_timeout_s=600.0
    )
    handle = runner.submit("plan", req, progress)
    assert computing.wait(300), seen
    running = [p for p in seen if p.state is JobState.RUNNING]
    assert any(p.total > 0 for p in running)
    assert all(p.done <= p.total for p in running)
    handle.cancel()
    with pytest.raises(JobCancelled):
        handle.result(300)
    assert seen[-1].state is JobState.CANCELLED
    assert not (tmp_path / "p" / "plan.json").exists()
    silent.close()
    # The session is still good for the next job, and its progress adds up to done.
    after: list[JobProgress] = []
    again = runner.submit("plan", broker_request(snap, tmp_path / "q", "earliest"), after.append)
    assert json.loads(again.result(300))["rows"] == 3
    assert after[-1].state is JobState.SUCCEEDED
    # A job this small can finish between two of the server's progress reports (they come on
    # its report interval); what was reported must add up, and end complete.
    counted = [p for p in after if p.state is JobState.RUNNING and p.total]
    assert all(p.done <= p.total for p in counted)
    if counted:
        assert counted[-1].done == counted[-1].total


def test_a_broker_that_cannot_answer_is_named_through_connect(
    runner: SparkRunner, tmp_path: Path
) -> None:
    snap = broker_snapshot(tmp_path, f"127.0.0.1:{free_port()}")  # nothing listens there
    req = broker_request(
        snap, tmp_path / "p", {"to-timestamp": T}, timestamp_ms=T, search_timeout_s=5.0
    )
    with pytest.raises(JobFailed, match=r"broker-a \(127\.0\.0\.1:\d+\) could not find the offset"):
        runner.submit("plan", req).result(300)
    assert not (tmp_path / "p" / "plan.json").exists()


def test_status_says_it_answers_and_on_what_master(connect: ConnectServer) -> None:
    done = connect.cli("spark", "status", "--json")
    assert done.returncode == 0, done.stderr
    [entry] = json.loads(done.stdout)["servers"]
    assert entry["answers"] is True
    assert entry["master"] == "local[2]"
    assert entry["spark_version"] == "4.3.0"
    assert entry["url"] == connect.url
    assert entry["pid"] == connect.record.pid
    host = HostFiles(ServerHome(connect.cache / "spark-connect")).read()
    assert host is not None
    assert entry["warm_host_pid"] == host.pid
    assert connect.record.token not in done.stdout + done.stderr
    again = connect.cli("spark", "up", "--port", "0")
    assert again.returncode == 0
    assert f"already running: {connect.url}" in again.stdout
    assert "warm job host" not in again.stdout + again.stderr  # running: not started again
    text = connect.cli("spark", "status")
    assert f"warm job host: pid {host.pid}" in text.stdout


def test_the_cli_picks_the_running_server(connect: ConnectServer) -> None:
    home = ServerHome(connect.cache / "spark-connect")
    engine = choose_engine(None, "local[*]", home=home)
    assert (engine.master, engine.source) == (connect.url, "spark up")
    assert engine.env == connect.record.client_env
    # Named by the address it binds, it is still ours: the token goes with it.
    named = choose_engine(f"sc://127.0.0.1:{connect.record.port}", "local[*]", home=home)
    assert (named.master, named.env) == (connect.url, connect.record.client_env)


def test_a_server_that_dies_at_start_shows_the_end_of_its_log(tmp_path: Path) -> None:
    home = ServerHome(tmp_path / "spark-connect")
    with pytest.raises(ServerDied, match="exited during start") as died:
        connect_server.start(home, master="nonsense://nowhere", port=0)
    assert "Master must either be yarn or start with spark, k8s, or local" in str(died.value)
    assert str(home.log_path) in str(died.value)
    assert home.read() is None  # nothing left to stop
