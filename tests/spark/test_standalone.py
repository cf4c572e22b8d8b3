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
from console.domain.plan import PlanHeader
from jobs.run import read_plan_rows, run_plan
from tests.connect import QUICK_EXECUTORS
from tests.spark.standalone import SPARK_HOME, standalone_cluster
from tests.support.standalone import synthetic, to_group_request

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]


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
                *(
                    arg
                    for key, value in QUICK_EXECUTORS.items()
                    for arg in ("--conf", f"{key}={value}")
                ),
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
