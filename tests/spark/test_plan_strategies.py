"""Every strategy on the standard hand-made snapshot (tests/spark/frames.py), answers by hand."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.testing import assertDataFrameEqual

from console.domain.spec import (
    ByDuration,
    Earliest,
    FileOffset,
    FromFile,
    Latest,
    ResetSpec,
    Scope,
    ShiftBy,
    Strategy,
    ToGroup,
    ToOffset,
    ToSnapshot,
    ToTimestamp,
)
from jobs.plan import FILE_SCHEMA, plan_rows
from tests.spark import frames
from tests.spark.frames import Q0, Q1, Q2, T0

pytestmark = pytest.mark.spark

COLUMNS = "topic string, broker string, queue_id int, current bigint, target bigint, delta bigint"
A, B = "broker-a", "broker-b"


def spec(strategy: Strategy, **scope: Any) -> ResetSpec:
    clamp = scope.pop("clamp", True)
    return ResetSpec(Scope(cluster="c1", groups=("g",), **scope), strategy, clamp=clamp)


def targets(df: DataFrame) -> DataFrame:
    return df.select("topic", "broker", "queue_id", "current", "target", "delta")


def expect(spark: SparkSession, rows: list[tuple[Any, ...]]) -> DataFrame:
    return spark.createDataFrame(rows, COLUMNS)


def test_earliest(spark: SparkSession) -> None:
    out = plan_rows(frames.standard(spark), spec(Earliest()))
    assertDataFrameEqual(
        targets(out),
        expect(
            spark,
            [
                ("orders", A, 0, 40, 0, -40),
                ("orders", A, 1, 60, 50, -10),
                ("orders", B, 2, None, 0, None),
            ],
        ),
    )


def test_latest(spark: SparkSession) -> None:
    out = plan_rows(frames.standard(spark), spec(Latest()))
    assertDataFrameEqual(
        targets(out),
        expect(
            spark,
            [
                ("orders", A, 0, 40, 100, 60),
                ("orders", A, 1, 60, 200, 140),
                ("orders", B, 2, None, 10, None),
            ],
        ),
    )


def test_to_offset_clamps_above_max(spark: SparkSession) -> None:
    out = plan_rows(frames.standard(spark), spec(ToOffset(70)))
    assertDataFrameEqual(
        targets(out),
        expect(
            spark,
            [
                ("orders", A, 0, 40, 70, 30),
                ("orders", A, 1, 60, 70, 10),
                ("orders", B, 2, None, 10, None),
            ],
        ),
    )


def test_shift_back_clamps_at_min(spark: SparkSession) -> None:
    out = plan_rows(frames.standard(spark), spec(ShiftBy(-45)))
    assertDataFrameEqual(
        targets(out),
        expect(
            spark,
            [
                ("orders", A, 0, 40, 0, -40),
                ("orders", A, 1, 60, 50, -10),
                ("orders", B, 2, None, None, None),
            ],
        ),
    )


def test_shift_forward(spark: SparkSession) -> None:
    out = plan_rows(frames.standard(spark), spec(ShiftBy(50)))
    assertDataFrameEqual(
        targets(out),
        expect(
            spark,
            [
                ("orders", A, 0, 40, 90, 50),
                ("orders", A, 1, 60, 110, 50),
                ("orders", B, 2, None, None, None),
            ],
        ),
    )


def resolved(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame(
        [(A, "orders", 0, 25), (A, "orders", 1, 200), (B, "orders", 2, 3)],
        "broker string, topic string, queue_id int, ts_offset bigint",
    )


@pytest.mark.parametrize("strategy", [ToTimestamp(T0 + 250), ByDuration(60_000)])
def test_time_strategies_take_the_resolved_offsets(spark: SparkSession, strategy: Strategy) -> None:
    out = plan_rows(
        frames.standard(spark), spec(strategy), timestamp_ms=T0 + 250, resolved=resolved(spark)
    )
    assertDataFrameEqual(
        targets(out),
        expect(
            spark,
            [
                ("orders", A, 0, 40, 25, -15),
                ("orders", A, 1, 60, 200, 140),
                ("orders", B, 2, None, 3, None),
            ],
        ),
    )


def test_to_group_copies_and_flags_missing_source(spark: SparkSession) -> None:
    snap = frames.standard(spark)
    out = plan_rows(
        snap,
        spec(ToGroup("h"), include_retry=True),
        source=snap.filter("group = 'h'"),
    )
    # h committed 80 / nothing / 5 on the three queues and 2 on its own retry topic.
    assertDataFrameEqual(
        out.select("topic", "broker", "queue_id", "current", "target", "delta", "warnings"),
        spark.createDataFrame(
            [
                ("orders", A, 0, 40, 80, 40, []),
                ("orders", A, 1, 60, None, None, ["no_source"]),
                ("orders", B, 2, None, 5, None, ["no_committed"]),
                ("%RETRY%g", A, 0, 5, 2, -3, []),
            ],
            COLUMNS + ", warnings array<string>",
        ),
    )


def test_to_snapshot_restores_the_past_offsets(spark: SparkSession) -> None:
    past = frames.snapshot(
        spark,
        [
            {**Q0, "committed": 10, "taken_at": frames.TAKEN_AT - 3_600_000},
            {**Q1, "committed": 55, "taken_at": frames.TAKEN_AT - 3_600_000},
        ],
    )
    out = plan_rows(frames.standard(spark), spec(ToSnapshot(snapshot_id="x")), source=past)
    assertDataFrameEqual(
        targets(out),
        expect(
            spark,
            [
                ("orders", A, 0, 40, 10, -30),
                ("orders", A, 1, 60, 55, -5),
                ("orders", B, 2, None, None, None),
            ],
        ),
    )


def test_from_file_keeps_only_the_listed_queues(spark: SparkSession) -> None:
    rows = (
        FileOffset(2, "orders", A, 0, 30),
        FileOffset(3, "orders", B, 2, 7, group="g"),
        FileOffset(4, "orders", A, 1, 70, group="h"),  # another group's line: not g's queue
    )
    file_df = spark.createDataFrame(
        [(r.line, r.group, r.topic, r.broker, r.queue_id, r.offset) for r in rows], FILE_SCHEMA
    )
    out = plan_rows(
        frames.standard(spark), spec(FromFile("offsets.csv", rows)), file_offsets=file_df
    )
    assertDataFrameEqual(
        targets(out),
        expect(spark, [("orders", A, 0, 40, 30, -10), ("orders", B, 2, None, 7, None)]),
    )


def test_scope_filters_brokers_queues_and_retry(spark: SparkSession) -> None:
    snap = frames.standard(spark)
    only_a = plan_rows(snap, spec(Latest(), brokers=("broker-a",), queue_ids=(1,)))
    assertDataFrameEqual(targets(only_a), expect(spark, [("orders", A, 1, 60, 200, 140)]))
    retry = plan_rows(snap, spec(Earliest(), topics=("orders",), include_retry=True))
    assert sorted(r["topic"] for r in retry.collect()) == ["%RETRY%g", "orders", "orders", "orders"]
    no_retry = plan_rows(snap, spec(Earliest()))
    assert {r["topic"] for r in no_retry.collect()} == {"orders"}


def test_second_group_in_scope(spark: SparkSession) -> None:
    two = ResetSpec(Scope("c1", ("g", "h"), topics=("orders",), queue_ids=(0,)), Latest())
    out = plan_rows(frames.standard(spark), two)
    assertDataFrameEqual(
        out.select("group", "current", "target", "delta"),
        spark.createDataFrame(
            [("g", 40, 100, 60), ("h", 80, 100, 20)],
            "group string, current bigint, target bigint, delta bigint",
        ),
    )


def test_columns_are_the_plan_columns(spark: SparkSession) -> None:
    from jobs.schema import PLAN_SCHEMA

    out = plan_rows(frames.standard(spark), spec(Earliest()))
    assert [(f.name, f.dataType) for f in out.schema] == [(f.name, f.dataType) for f in PLAN_SCHEMA]
    assert out.filter("queue_id = 1").first()["cluster"] == "c1"
    assert Q2["committed"] is None  # the fixture the no_committed cases rely on
