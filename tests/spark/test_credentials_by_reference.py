"""Credentials reach the plan job by reference and are resolved in the executors."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path

import pytest
from pyspark import cloudpickle
from pyspark.sql import SparkSession

from console.config import CredentialsRef
from console.domain.spec import ResetSpec, Scope, ToTimestamp
from console.redact import MASK, hide, redact_text
from console.services.infra.spark_jobs import JobFailed
from console.services.infra.workspace import Workspace
from console.services.plan.planner import Planner
from jobs.host import describe
from jobs.timestamps import BrokerSearch
from tests.spark.fakes import FakeReader, group
from tests.spark.runners import InlineRunner

pytestmark = pytest.mark.spark
A = "127.0.0.1:10911"
TS = 1_700_000_000_000


def planner(spark: SparkSession, tmp_path: Path, refs: CredentialsRef) -> Planner:
    g = group("g", [("orders", "broker-a", 0, 0, 100, 40)])
    reader = FakeReader({"g": g}, {"broker-a": A})
    return Planner(
        Workspace(tmp_path / "ws"),
        InlineRunner(spark),
        reader=reader,  # type: ignore[arg-type]
        credentials=refs,
    )


def test_the_request_and_the_task_hold_references_only(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = secrets.token_urlsafe(12)
    monkeypatch.setenv("RMQ_TEST_REF_AK", "ops-key")
    monkeypatch.setenv("RMQ_TEST_REF_SK", value)
    refs = CredentialsRef("env:RMQ_TEST_REF_AK", "env:RMQ_TEST_REF_SK")
    p = planner(spark, tmp_path, refs)
    req = asyncio.run(p.prepare(ResetSpec(Scope("c1", ("g",)), ToTimestamp(TS))))
    assert req.credentials == {
        "access_key": "env:RMQ_TEST_REF_AK",
        "secret_key": "env:RMQ_TEST_REF_SK",
    }
    assert value not in req.to_json()
    search = BrokerSearch.for_request(req)
    task = cloudpickle.dumps(search)  # what Spark ships to the executors
    assert b"env:RMQ_TEST_REF_SK" in task
    assert value.encode() not in task
    # The driver resolved the reference only to mask it in what it reports.
    assert redact_text(f"echo {value}") == f"echo {MASK}"


def test_the_reference_is_resolved_in_the_executor(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A variable set in this (driver) process after the executors started is not in their
    environment: the lookup fails there, naming the variable, and never reaches a broker."""
    monkeypatch.setenv("RMQ_TEST_DRIVER_ONLY_SK", secrets.token_urlsafe(12))
    refs = CredentialsRef("env:RMQ_TEST_DRIVER_ONLY_AK", "env:RMQ_TEST_DRIVER_ONLY_SK")
    monkeypatch.setenv("RMQ_TEST_DRIVER_ONLY_AK", "ops-key")
    p = planner(spark, tmp_path, refs)
    with pytest.raises(JobFailed) as info:
        asyncio.run(p.plan(ResetSpec(Scope("c1", ("g",)), ToTimestamp(TS))))
    text = str(info.value)
    assert f"broker-a ({A}): credentials: environment variable RMQ_TEST_DRIVER_ONLY_" in text
    assert "is not set" in text
    assert describe(info.value.__cause__ or info.value).startswith(f"broker-a ({A}): credentials")


def test_the_hosts_failure_line_is_redacted() -> None:
    value = secrets.token_urlsafe(12)
    hide(value)
    wrapped = RuntimeError(
        "An error occurred while calling o12.parquet.\n"
        f": org.apache.spark.SparkException: Job aborted: {value}\n\tat somewhere"
    )
    assert describe(wrapped) == f"Job aborted: {MASK}"
