"""Consume rates from the snapshot history and the catch-up estimate, answers by hand."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from jobs.impact import broker_tps, consume_rates, topic_impact
from tests.spark import frames

pytestmark = pytest.mark.spark
MIN = 60_000


def history(spark: SparkSession):  # type: ignore[no-untyped-def]
    t0 = frames.TAKEN_AT
    rows = []
    # orders q0: 0 -> 60 -> 120 over two minutes; q1: 10 -> 70, then reset back to 5 (not
    # consumption) -> the step 70 -> 5 is ignored. pay: nothing committed.
    for i, (c0, c1) in enumerate([(0, 10), (60, 70), (120, 5)]):
        rows += [
            {"queue_id": 0, "committed": c0, "taken_at": t0 + i * MIN, "consume_tps": 1.0 + i},
            {"queue_id": 1, "committed": c1, "taken_at": t0 + i * MIN, "consume_tps": 1.0 + i},
            {"topic": "pay", "committed": None, "taken_at": t0 + i * MIN, "consume_tps": 1.0 + i},
        ]
    return frames.snapshot(spark, rows)


def test_rates_skip_resets_and_unknowns(spark: SparkSession) -> None:
    # consumed: q0 60 + 60, q1 60 (the reset step dropped) = 180 over 2 minutes = 1.5/s.
    assertDataFrameEqual(
        consume_rates(history(spark)),
        spark.createDataFrame(
            [("g", "orders", 180, frames.TAKEN_AT, frames.TAKEN_AT + 2 * MIN, 1.5)],
            "group string, topic string, consumed bigint, since bigint, until bigint, rate double",
        ),
    )
    assert broker_tps(history(spark)).collect()[0]["tps"] == 3.0  # the newest snapshot's


def test_catch_up_time(spark: SparkSession) -> None:
    plan = spark.createDataFrame(
        [
            ("g", "orders", 100, 40, 10, -30),  # re-consume 0, lag after 90
            ("g", "orders", 100, 40, 70, 30),  # re-consume 30, lag after 30
            ("g", "orders", 100, 50, None, None),  # left alone: lag stays 50
            ("g", "pay", 10, None, None, None),  # unknown position: counts nothing
        ],
        "group string, topic string, max_offset bigint, current bigint, target bigint, "
        "delta bigint",
    )
    rates = spark.createDataFrame([("g", "orders", 2.0)], "group string, topic string, rate double")
    assertDataFrameEqual(
        topic_impact(plan, rates),
        spark.createDataFrame(
            [("g", "orders", 30, 170, 2.0, 85.0), ("g", "pay", 0, 0, None, None)],
            "group string, topic string, re_consume bigint, lag_after bigint, rate double, "
            "catch_up_s double",
        ),
    )
