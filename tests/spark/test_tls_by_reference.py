"""A cluster's TLS reaches the plan job as file paths, and the executors read the files."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pyspark import cloudpickle
from pyspark.sql import SparkSession

from console.config import TlsRef
from console.domain.spec import ResetSpec, Scope, ToTimestamp
from console.services.infra.spark_jobs import JobFailed
from console.services.infra.workspace import Workspace
from console.services.plan.planner import Planner
from jobs.timestamps import BrokerSearch
from tests.spark.fakes import FakeReader, group
from tests.spark.runners import InlineRunner

pytestmark = pytest.mark.spark
A = "127.0.0.1:10911"
TS = 1_700_000_000_000


def planner(spark: SparkSession, tmp_path: Path, tls: TlsRef) -> Planner:
    g = group("g", [("orders", "broker-a", 0, 0, 100, 40)])
    reader = FakeReader({"g": g}, {"broker-a": A})
    return Planner(
        Workspace(tmp_path / "ws"),
        InlineRunner(spark),
        reader=reader,  # type: ignore[arg-type]
        tls=tls,
    )


def test_the_request_and_the_task_hold_the_paths_and_no_key(
    spark: SparkSession, tmp_path: Path
) -> None:
    key = tmp_path / "client.key"
    key.write_text("-----BEGIN PRIVATE KEY-----\nnot-a-real-key\n-----END PRIVATE KEY-----\n")
    tls = TlsRef(ca="/etc/rmq/ca.pem", cert="/etc/rmq/client.pem", key=str(key))
    req = asyncio.run(
        planner(spark, tmp_path, tls).prepare(ResetSpec(Scope("c1", ("g",)), ToTimestamp(TS)))
    )
    assert req.tls == tls.to_dict()
    assert "not-a-real-key" not in req.to_json()
    search = BrokerSearch.for_request(req)
    assert search.tls == tls
    task = cloudpickle.dumps(search)  # what Spark ships to the executors
    assert str(key).encode() in task
    assert b"not-a-real-key" not in task


def test_a_tls_file_missing_on_the_executor_fails_the_lookup_by_name(
    spark: SparkSession, tmp_path: Path
) -> None:
    absent = tmp_path / "nowhere" / "ca.pem"
    p = planner(spark, tmp_path, TlsRef(ca=str(absent)))
    with pytest.raises(JobFailed) as info:
        asyncio.run(p.plan(ResetSpec(Scope("c1", ("g",)), ToTimestamp(TS))))
    assert f"broker-a ({A}): tls.ca: cannot read {absent}: no such file" in str(info.value)
