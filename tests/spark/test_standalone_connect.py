"""The road to a real cluster: a Spark Connect server (as `rmq-console spark up` starts it) on a
standalone master with one worker, both from the pyspark install, plans exactly what the local
session plans, and the work runs on the cluster's executor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from console.domain.job_requests import PlanRequest
from console.domain.plan import PlanHeader
from console.services.infra import connect_server
from console.services.infra.connect_server import ServerHome
from console.services.infra.spark_runner import SparkRunner
from jobs.run import read_plan_rows, run_plan
from tests.connect import QUICK_EXECUTORS
from tests.spark.standalone import standalone_cluster
from tests.support.standalone import synthetic, to_group_request

pytestmark = pytest.mark.spark


def test_a_plan_through_connect_on_a_standalone_cluster(
    spark: SparkSession, tmp_path: Path
) -> None:
    snapshot = synthetic(spark, tmp_path / "snapshot.parquet")

    def request(out: str) -> PlanRequest:
        return to_group_request("standalone-connect", snapshot, tmp_path / out)

    local = run_plan(spark, request("local"))
    home = ServerHome(tmp_path / "spark-connect")
    with standalone_cluster(tmp_path / "spark") as cluster:
        record = connect_server.start(
            home,
            master=cluster.master_url,
            port=0,
            conf={
                "spark.driver.memory": "512m",
                "spark.executor.memory": "512m",
                "spark.executor.cores": "2",
                **QUICK_EXECUTORS,
            },
            env=cluster.env,
        )
        try:
            env = {**cluster.env, **record.client_env}
            with SparkRunner(
                record.url, log_path=tmp_path / "host.log", warm_up=False, env=env
            ) as runner:
                remote = PlanHeader.from_json(
                    runner.submit("plan", request("cluster").to_json()).result(600)
                )
        finally:
            connect_server.stop(home)
    # The server ran as an application of the cluster, and its worker ran an executor for it.
    assert "Granted executor ID app-" in home.log_path.read_text()
    assert list((tmp_path / "spark" / "work").glob("app-*/0"))
    assert json.loads(remote.to_json()) == json.loads(local.to_json())
    assert remote.rows == 240
    assertDataFrameEqual(
        read_plan_rows(spark, f"file://{tmp_path / 'cluster'}"),
        read_plan_rows(spark, f"file://{tmp_path / 'local'}"),
        checkRowOrder=True,
    )
