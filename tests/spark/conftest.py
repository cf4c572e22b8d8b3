"""One SparkSession for the whole Spark suite: local[2], few shuffle partitions, UTC."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from jobs.spark_session import build_session

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    with pytest.MonkeyPatch.context() as env:
        # Python workers are started by the JVM from this environment: let them import the
        # test helpers (fake broker searches) that tasks unpickle.
        paths = (str(ROOT), os.environ.get("PYTHONPATH", ""))
        env.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
        session = build_session(
            "local[2]",
            app_name="rmq-console-tests",
            conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"},
        )
        session.sparkContext.setLogLevel("ERROR")
        yield session
        session.stop()
