"""The plan job through spark-submit on a standalone master + worker gives the very plan the
local session gives."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from console.domain.job_requests import PlanRequest
from console.domain.plan import PlanHeader, SnapshotInfo
from jobs.run import read_plan_rows, run_plan
from tests.spark import frames
from tests.spark.standalone import SPARK_HOME, standalone_cluster

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]


def synthetic(spark: SparkSession, path: Path) -> str:
    """Two groups on three topics, two brokers, 40 queues each, offsets spread by formula."""
    rows = []
    for g in ("g", "h"):
        for t in ("a", "b", "c"):
            for b in ("broker-a", "broker-b"):
                for q in range(40):
                    lo, hi = q * 3, 500 + q * 7
                    committed = None if (q + len(t)) % 9 == 0 else lo + (q * 37 + ord(g)) % 600
                    rows.append(
                        {
                            "group": g,
                            "topic": t,
                            "broker": b,
                            "queue_id": q,
                            "min_offset": lo,
                            "max_offset": hi,
                            "committed": committed,
                            "clients": 1 if g == "h" else 0,
                        }
                    )
    frames.snapshot(spark, rows).coalesce(1).write.parquet(str(path))
    return f"file://{path}"


def to_group_request(plan_id: str, snapshot: str, out: Path) -> PlanRequest:
    """A to-group plan of the synthetic snapshot, written to `out`."""
    return PlanRequest(
        plan_id=plan_id,
        spec={
            "scope": {"cluster": "c1", "groups": ["g"], "include_retry": True},
            "strategy": {"to-group": "h"},
        },
        snapshot_uri=snapshot,
        snapshot=SnapshotInfo("c1", "s", frames.TAKEN_AT),
        out_uri=f"file://{out}",
        created_at_ms=frames.TAKEN_AT,
    )


def test_standalone_cluster_gives_the_identical_plan(spark: SparkSession, tmp_path: Path) -> None:
    snapshot = synthetic(spark, tmp_path / "snapshot.parquet")

    def request(out: str) -> PlanRequest:
        return to_group_request("standalone", snapshot, tmp_path / out)

    local = run_plan(spark, request("local"))
    (tmp_path / "request.json").write_text(request("cluster").to_json())
    package = tmp_path / "rmq-jobs.zip"
    subprocess.run(
        [sys.executable, "-m", "jobs", "package", str(package)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )

    with standalone_cluster(tmp_path / "spark") as cluster:
        submitted = subprocess.run(
            [
                str(SPARK_HOME / "bin" / "spark-submit"),
                "--master",
                cluster.master_url,
                "--conf",
                "spark.driver.memory=512m",
                "--conf",
                "spark.executor.memory=512m",
                "--conf",
                "spark.executor.cores=2",
                "--py-files",
                str(package),
                str(ROOT / "jobs" / "__main__.py"),
                "plan",
                str(tmp_path / "request.json"),
            ],
            env=cluster.env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert submitted.returncode == 0, submitted.stderr[-3000:]
    remote = PlanHeader.from_json(submitted.stdout)
    assert "app-" in (tmp_path / "spark" / "master.log").read_text()  # ran on the cluster
    assert remote.rows == local.rows == 240
    assert remote.content_hash == local.content_hash
    assert remote.totals == local.totals
    assertDataFrameEqual(
        read_plan_rows(spark, f"file://{tmp_path / 'cluster'}"),
        read_plan_rows(spark, f"file://{tmp_path / 'local'}"),
        checkRowOrder=True,
    )
