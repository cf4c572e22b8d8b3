"""The plan job end to end on a local session: files written, header, hash, and bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.testing import assertDataFrameEqual

from console.domain.job_requests import PlanRequest
from console.domain.plan import PlanHeader, PlanRow, SnapshotInfo, Totals
from console.domain.plan_hash import content_hash
from console.domain.spec import FileOffset, SpecError
from jobs.run import PlanExistsError, read_plan_rows, run_plan
from tests.spark import frames
from tests.spark.frames import T0, FailingSearch, TableSearch

pytestmark = pytest.mark.spark

SNAP = SnapshotInfo("c1", "20231114T221320000Z", frames.TAKEN_AT)


def write(df: DataFrame, path: Path) -> str:
    df.coalesce(1).write.parquet(str(path))
    return "file://" + str(path)


def request(tmp_path: Path, snapshot_uri: str, strategy: Any, **kw: Any) -> PlanRequest:
    scope = kw.pop("scope", {"cluster": "c1", "groups": ["g"]})
    return PlanRequest(
        plan_id="p1",
        spec={"scope": scope, "strategy": strategy},
        snapshot_uri=snapshot_uri,
        snapshot=SNAP,
        out_uri="file://" + str(tmp_path / "plan"),
        created_at_ms=frames.TAKEN_AT + 1000,
        **kw,
    )


@pytest.fixture(scope="module")
def standard_uri(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> str:
    return write(frames.standard(spark), tmp_path_factory.mktemp("snap") / "s.parquet")


def rows_of(tmp_path: Path) -> list[PlanRow]:
    table = pq.read_table(tmp_path / "plan" / "rows.parquet")
    return [PlanRow.from_dict(d) for d in table.to_pylist()]


def test_latest_plan_files_totals_and_hash(
    spark: SparkSession, standard_uri: str, tmp_path: Path
) -> None:
    header = run_plan(spark, request(tmp_path, standard_uri, "latest"))
    on_disk = PlanHeader.from_json((tmp_path / "plan" / "plan.json").read_text())
    assert on_disk == header
    rows = rows_of(tmp_path)
    assert [(r.queue_id, r.target) for r in rows] == [(0, 100), (1, 200), (2, 10)]  # sorted
    # By hand: skip 60 + 140 (q2 has no current); lag before (100-40) + (200-60); q2 warned.
    by_hand = dict(queues=3, changed=3, re_consume=0, skip=200, warned=1, lag_before=200)
    assert header.totals == (
        Totals("g", None, **by_hand, lag_after=0),
        Totals("g", "orders", **by_hand, lag_after=0),
    )
    assert header.rows == 3
    assert header.content_hash == content_hash("c1", rows)
    assert header.timestamp_ms is None


def test_hash_changes_with_any_target(
    spark: SparkSession, standard_uri: str, tmp_path: Path
) -> None:
    a = run_plan(spark, request(tmp_path / "a", standard_uri, {"to-offset": 70}))
    b = run_plan(spark, request(tmp_path / "b", standard_uri, {"to-offset": 71}))
    assert a.content_hash != b.content_hash


def test_to_timestamp_resolves_per_queue_through_the_search(
    spark: SparkSession, tmp_path: Path
) -> None:
    snap = frames.snapshot(
        spark,
        [
            {"queue_id": 0, "min_offset": 10, "max_offset": 14, "committed": 14},
            {"queue_id": 1, "broker": "broker-b", "min_offset": 0, "max_offset": 3, "committed": 0},
        ],
    )
    uri = write(snap, tmp_path / "s.parquet")
    search = TableSearch(
        store_times={
            ("broker-a", "orders", 0): [T0, T0 + 10, T0 + 20, T0 + 20, T0 + 30],
            ("broker-b", "orders", 1): [T0 + 5, T0 + 6, T0 + 7],
        },
        first_offset={("broker-a", "orders", 0): 10, ("broker-b", "orders", 1): 0},
    )
    req = request(tmp_path, uri, {"to-timestamp": T0 + 20}, timestamp_ms=T0 + 20)
    header = run_plan(spark, req, search=search)
    # broker-a: first message at or after T0+20 is offset 12; broker-b: all older -> max 3.
    assert [(r.broker, r.target, r.delta) for r in rows_of(tmp_path)] == [
        ("broker-a", 12, -2),
        ("broker-b", 3, 3),
    ]
    assert header.timestamp_ms == T0 + 20


def test_a_broker_that_cannot_answer_fails_the_plan_and_writes_nothing(
    spark: SparkSession, standard_uri: str, tmp_path: Path
) -> None:
    req = request(tmp_path, standard_uri, {"to-timestamp": T0}, timestamp_ms=T0)
    with pytest.raises((Py4JJavaError, PySparkException), match="did not answer"):
        run_plan(spark, req, search=FailingSearch())
    assert not (tmp_path / "plan" / "plan.json").exists()
    assert not (tmp_path / "plan" / "rows.parquet").exists()


def test_to_snapshot_reads_the_past_snapshot(
    spark: SparkSession, tmp_path: Path, standard_uri: str
) -> None:
    past = frames.snapshot(spark, [{**frames.Q0, "committed": 12}])
    past_uri = write(past, tmp_path / "past.parquet")
    info = SnapshotInfo("c1", "20231114T211320000Z", frames.TAKEN_AT - 3_600_000)
    req = request(
        tmp_path,
        standard_uri,
        {"to-snapshot": info.snapshot_id},
        source_snapshot_uri=past_uri,
        source_snapshot=info,
    )
    header = run_plan(spark, req)
    assert [(r.queue_id, r.target, r.warnings) for r in rows_of(tmp_path)] == [
        (0, 12, ()),
        (1, None, ("no_source",)),
        (2, None, ("no_committed", "no_source")),
    ]
    assert header.source_snapshot == info


def test_from_file_rows(spark: SparkSession, standard_uri: str, tmp_path: Path) -> None:
    rows = (FileOffset(2, "orders", "broker-a", 1, 75), FileOffset(3, "orders", "broker-b", 2, 4))
    req = request(tmp_path, standard_uri, {"from-file": "o.csv"}, file_rows=rows)
    run_plan(spark, req)
    assert [(r.queue_id, r.target) for r in rows_of(tmp_path)] == [(1, 75), (2, 4)]


@pytest.mark.parametrize(
    ("changes", "where", "words"),
    [
        ({"scope": {"cluster": "c1", "groups": ["nope"]}}, "scope.groups[0]", "groups there: g, h"),
        (
            {"scope": {"cluster": "c1", "groups": ["g"], "topics": ["orders", "pay"]}},
            "scope.topics[1]",
            "no topic 'pay'",
        ),
        (
            {"scope": {"cluster": "c1", "groups": ["g"], "brokers": ["broker-z"]}},
            "scope.brokers[0]",
            "brokers: broker-a, broker-b",
        ),
        (
            {"scope": {"cluster": "c1", "groups": ["g"], "queue_ids": [1, 9]}},
            "scope.queue_ids[1]",
            "no queue 9",
        ),
        ({"strategy": {"shift-by": -41}}, "strategy.shift-by", "at most 40"),
        ({"strategy": {"shift-by": 141}}, "strategy.shift-by", "at most 140"),
        ({"strategy": {"to-group": "nobody"}}, "strategy.to-group", "'nobody'"),
        (
            {
                "strategy": {"from-file": "o.csv"},
                "file_rows": (
                    FileOffset(2, "orders", "broker-a", 0, 1),
                    FileOffset(3, "orders", "broker-a", 7, 1),
                ),
            },
            "o.csv:3",
            "orders / broker-a / 7 does not exist",
        ),
        (
            {
                "strategy": {"from-file": "o.csv"},
                "file_rows": (FileOffset(5, "orders", "broker-a", 0, 1, group="h"),),
            },
            "o.csv:5",
            "not in scope.groups",
        ),
        ({"strategy": {"to-snapshot": "old"}}, "strategy.to-snapshot", "no snapshot"),
    ],
)
def test_bad_input_names_the_field_and_writes_nothing(
    spark: SparkSession,
    standard_uri: str,
    tmp_path: Path,
    changes: dict[str, Any],
    where: str,
    words: str,
) -> None:
    strategy = changes.pop("strategy", "latest")
    req = request(tmp_path, standard_uri, strategy, **changes)
    with pytest.raises(SpecError) as info:
        run_plan(spark, req)
    assert info.value.where == where
    assert words in str(info.value)
    assert not (tmp_path / "plan").exists()


def test_an_existing_plan_is_never_overwritten(
    spark: SparkSession, standard_uri: str, tmp_path: Path
) -> None:
    run_plan(spark, request(tmp_path, standard_uri, "latest"))
    before = (tmp_path / "plan" / "plan.json").read_text()
    with pytest.raises(PlanExistsError):
        run_plan(spark, request(tmp_path, standard_uri, "earliest"))
    assert (tmp_path / "plan" / "plan.json").read_text() == before


@pytest.mark.parametrize("strategy", ["latest", {"to-group": "h"}, {"shift-by": -10}])
def test_collected_and_distributed_writes_agree(
    spark: SparkSession, standard_uri: str, tmp_path: Path, strategy: Any
) -> None:
    collected = run_plan(spark, request(tmp_path / "a", standard_uri, strategy))
    distributed = run_plan(spark, request(tmp_path / "b", standard_uri, strategy), small_rows=0)
    assert collected.content_hash == distributed.content_hash
    assert collected.totals == distributed.totals
    assertDataFrameEqual(
        read_plan_rows(spark, f"file://{tmp_path / 'a' / 'plan'}"),
        read_plan_rows(spark, f"file://{tmp_path / 'b' / 'plan'}"),
        checkRowOrder=True,
    )
