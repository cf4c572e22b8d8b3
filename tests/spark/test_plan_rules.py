"""Clamping, warnings and the time span, each on rows built to trigger exactly one rule."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from console.domain.spec import Earliest, ResetSpec, Scope, ShiftBy, Strategy, ToOffset, ToTimestamp
from jobs.plan import plan_rows
from tests.spark import frames
from tests.spark.frames import Q0, T0

pytestmark = pytest.mark.spark


def spec(strategy: Strategy, *, clamp: bool = True) -> ResetSpec:
    return ResetSpec(Scope(cluster="c1", groups=("g",)), strategy, clamp=clamp)


CLAMP_COLUMNS = (
    "queue_id int, requested bigint, target bigint, clamp string, warnings array<string>"
)


def test_clamp_to_min_and_max_with_reasons(spark: SparkSession) -> None:
    snap = frames.snapshot(
        spark,
        [
            {"queue_id": 0, "min_offset": 100, "max_offset": 300, "committed": 150},
            {"queue_id": 1, "min_offset": 0, "max_offset": 120, "committed": 50},
            {"queue_id": 2, "min_offset": 0, "max_offset": 300, "committed": 50},
        ],
    )
    out = plan_rows(snap, spec(ToOffset(130)))
    assertDataFrameEqual(
        out.select("queue_id", "requested", "target", "clamp", "warnings"),
        spark.createDataFrame(
            [
                (0, 130, 130, None, []),
                (1, 130, 120, "above_max", ["above_max"]),
                (2, 130, 130, None, []),
            ],
            CLAMP_COLUMNS,
        ),
    )
    below = plan_rows(snap, spec(ShiftBy(-60)))
    assertDataFrameEqual(
        below.select("queue_id", "requested", "target", "clamp", "warnings"),
        spark.createDataFrame(
            [
                (0, 90, 100, "below_min", ["below_min"]),
                (1, -10, 0, "below_min", ["below_min"]),
                (2, -10, 0, "below_min", ["below_min"]),
            ],
            CLAMP_COLUMNS,
        ),
    )


def test_without_clamp_targets_stay_and_are_flagged(spark: SparkSession) -> None:
    snap = frames.snapshot(
        spark, [{"queue_id": 0, "min_offset": 100, "max_offset": 300, "committed": 150}]
    )
    out = plan_rows(snap, spec(ToOffset(20), clamp=False))
    assertDataFrameEqual(
        out.select("queue_id", "requested", "target", "clamp", "warnings"),
        spark.createDataFrame([(0, 20, 20, None, ["below_min"])], CLAMP_COLUMNS),
    )
    assert out.first()["delta"] == -130


def test_target_equal_to_the_bounds_is_not_clamped(spark: SparkSession) -> None:
    snap = frames.snapshot(spark, [{"min_offset": 7, "max_offset": 9, "committed": 8}])
    lo = plan_rows(snap, spec(ShiftBy(-1))).first()
    hi = plan_rows(snap, spec(ShiftBy(1))).first()
    assert (lo["target"], lo["clamp"], lo["warnings"]) == (7, None, [])
    assert (hi["target"], hi["clamp"], hi["warnings"]) == (9, None, [])


@pytest.mark.parametrize(
    ("row", "warnings"),
    [
        ({"committed": None}, ["no_committed"]),
        ({"clients": 2}, ["consumers_online"]),
        ({"clients": None}, []),
        ({"message_model": "BROADCASTING"}, ["broadcasting"]),
        (
            {"clients": 1, "message_model": "BROADCASTING", "committed": None},
            ["no_committed", "consumers_online", "broadcasting"],
        ),
    ],
)
def test_group_and_queue_warnings(
    spark: SparkSession, row: dict[str, Any], warnings: list[str]
) -> None:
    out = plan_rows(frames.snapshot(spark, [row]), spec(Earliest())).first()
    assert out["warnings"] == warnings


@pytest.mark.parametrize(
    "strategy",
    [Earliest(), ShiftBy(5), ToOffset(150), ToTimestamp(T0)],
    ids=["earliest", "shift-by", "to-offset", "to-timestamp"],
)
def test_a_current_offset_below_min_is_warned_whatever_the_strategy(
    spark: SparkSession, strategy: Strategy
) -> None:
    # Committed 40 while the commit log now starts at 100: 60 messages are already deleted,
    # even when the target itself (min, or a time before min) asks for nothing below min.
    gone = {"min_offset": 100, "max_offset": 300, "committed": 40}
    kept = {"queue_id": 1, "min_offset": 100, "max_offset": 300, "committed": 120}
    resolved = spark.createDataFrame(
        [("broker-a", "orders", 0, 100), ("broker-a", "orders", 1, 100)],
        "broker string, topic string, queue_id int, ts_offset bigint",
    )
    time_ms = T0 if isinstance(strategy, ToTimestamp) else None
    rows = {
        r["queue_id"]: r
        for r in plan_rows(
            frames.snapshot(spark, [gone, kept]),
            spec(strategy),
            timestamp_ms=time_ms,
            resolved=resolved,
        ).collect()
    }
    assert "current_below_min" in rows[0]["warnings"]
    assert "current_below_min" not in rows[1]["warnings"]


def test_an_unknown_min_offset_is_warned_and_clamps_nothing(spark: SparkSession) -> None:
    unknown = {"min_offset": None, "max_offset": 300, "committed": 120}
    out = plan_rows(frames.snapshot(spark, [unknown]), spec(ShiftBy(-20))).first()
    assert out["warnings"] == ["min_unknown"]
    assert (out["requested"], out["target"], out["clamp"]) == (100, 100, None)
    # Still never below 0.
    out = plan_rows(frames.snapshot(spark, [unknown]), spec(ShiftBy(-200))).first()
    assert out["warnings"] == ["below_min", "min_unknown"]
    assert (out["requested"], out["target"], out["clamp"]) == (-80, 0, "below_min")


def test_a_time_after_the_newest_message_is_warned(spark: SparkSession) -> None:
    # q0's newest message was stored at T0 + 990; an empty queue has nothing to skip.
    empty = {"queue_id": 1, "min_offset": 10, "max_offset": 10, "committed": 10}
    no_times = {"queue_id": 2, "max_timestamp": None}  # the snapshot's instant bounds it
    resolved = spark.createDataFrame(
        [("broker-a", "orders", q, m) for q, m in ((0, 100), (1, 10), (2, 100))],
        "broker string, topic string, queue_id int, ts_offset bigint",
    )

    def warned(at_ms: int) -> dict[int, list[str]]:
        out = plan_rows(
            frames.snapshot(spark, [Q0, empty, no_times]),
            spec(ToTimestamp(at_ms)),
            timestamp_ms=at_ms,
            resolved=resolved,
        )
        return {r["queue_id"]: list(r["warnings"]) for r in out.collect()}

    future = warned(frames.TAKEN_AT + 3_600_000)
    assert future == {0: ["after_newest"], 1: [], 2: ["after_newest"]}
    between = warned(T0 + 995)  # after q0's newest, before the snapshot was taken
    assert between == {0: ["after_newest"], 1: [], 2: []}
    assert warned(T0 + 500)[0] == []


def test_time_span_of_a_timestamp_target(spark: SparkSession) -> None:
    # q0: message n stored at T0 + 10 n; committed 40 -> current time T0 + 390 (message 39).
    resolved = spark.createDataFrame(
        [("broker-a", "orders", 0, 25)],
        "broker string, topic string, queue_id int, ts_offset bigint",
    )
    out = plan_rows(
        frames.snapshot(spark, [Q0]),
        spec(ToTimestamp(T0 + 245)),
        timestamp_ms=T0 + 245,
        resolved=resolved,
    ).first()
    assert (out["current_time"], out["target_time"], out["span_ms"]) == (
        T0 + 390,
        T0 + 245,
        145,
    )


@pytest.mark.parametrize(
    ("strategy", "target_time"),
    [
        (ShiftBy(-40), T0),  # to min: the first message's time
        (ToOffset(100), T0 + 990),  # to max: the last message's time (a skip)
        (ToOffset(50), T0 + 495),  # between: on the line (0, T0)..(100, T0 + 990)
    ],
)
def test_time_span_estimates(spark: SparkSession, strategy: Strategy, target_time: int) -> None:
    out = plan_rows(frames.snapshot(spark, [Q0]), spec(strategy)).first()
    assert out["target_time"] == target_time
    assert out["span_ms"] == (T0 + 390) - target_time


def test_unknown_times_give_no_span(spark: SparkSession) -> None:
    out = plan_rows(frames.snapshot(spark, [{"committed": 10}]), spec(ToOffset(20))).first()
    assert (out["current_time"], out["target_time"], out["span_ms"]) == (None, None, None)
