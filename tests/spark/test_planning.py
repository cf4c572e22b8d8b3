"""The planning service end to end on the test session: snapshot, plan files, reset path,
CSV out and back in, to-snapshot by time, impact, and bad input that writes nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from console.domain.plan import PlanRow
from console.domain.plan_hash import content_hash
from console.domain.reset_paths import ResetPathKind
from console.domain.spec import (
    Latest,
    ResetSpec,
    Scope,
    ShiftBy,
    SpecError,
    ToGroup,
    ToOffset,
    ToSnapshot,
)
from console.services.infra.spark_jobs import JobInputError, JobProgress
from console.services.infra.workspace import Workspace
from console.services.plan.planner import Planner
from console.services.plan.tables import scope_cells
from jobs.plan import scope_cells as spark_scope_cells
from jobs.run import read_snapshot
from tests.spark import frames
from tests.spark.fakes import FakeAdmin, FakeReader, group
from tests.spark.runners import InlineRunner

pytestmark = pytest.mark.spark
A, B = "127.0.0.1:10911", "127.0.0.1:10921"


def reader(committed: int = 40, clients: int = 0, tps: float = 0.0) -> FakeReader:
    g = group(
        "g",
        [("orders", "broker-a", 0, 0, 100, committed), ("orders", "broker-b", 1, 10, 50, None)],
        clients=clients,
        tps=tps,
    )
    h = group("h", [("orders", "broker-a", 0, 0, 100, 90)])
    return FakeReader(
        {"g": g, "h": h},
        {"broker-a": A, "broker-b": B},
        admin=FakeAdmin(versions={A: 479, B: 409}, server_side={A: "true"}),
    )


def planner(spark: SparkSession, tmp_path: Path, r: FakeReader) -> Planner:
    return Planner(Workspace(tmp_path / "ws"), InlineRunner(spark), reader=r)  # type: ignore[arg-type]


def spec(strategy: Any, **scope: Any) -> ResetSpec:
    return ResetSpec(Scope("c1", ("g",), **scope), strategy)


def test_plan_in_the_workspace(spark: SparkSession, tmp_path: Path) -> None:
    p = planner(spark, tmp_path, reader(clients=2))
    seen: list[JobProgress] = []
    result = asyncio.run(p.plan(spec(ToOffset(60)), on_progress=seen.append))
    assert result.uri == p.workspace.plan_uri(result.header.plan_id)
    assert p.workspace.plans() == [result.header.plan_id]
    rows = [PlanRow.from_dict(d) for d in p.rows(result.uri).to_pylist()]
    assert [(r.broker, r.current, r.target, r.delta) for r in rows] == [
        ("broker-a", 40, 60, 20),
        ("broker-b", None, 50, None),
    ]
    assert rows[1].warnings == ("above_max", "no_committed", "consumers_online")
    assert result.header.content_hash == content_hash("c1", rows)
    # broker-b runs 4.9.8 and consumers are online: a per-queue target cannot be pushed.
    path = result.header.reset_paths["g"]
    assert path.kind is ResetPathKind.OFFLINE_UPDATE
    assert path.blocker is not None
    assert "broker-b runs V4_9_8" in path.reason
    assert [s.step for s in seen if s.step][:2] == ["reading the snapshot", "computing the plan"]
    snap = p.store.history("c1")
    assert [s.snapshot_id for s in snap] == [result.snapshot.snapshot_id]
    assert sorted(p.store.groups_in(snap[0])) == ["g"]


def test_to_group_snapshots_the_source_too(spark: SparkSession, tmp_path: Path) -> None:
    p = planner(spark, tmp_path, reader())
    result = asyncio.run(p.plan(spec(ToGroup("h"))))
    rows = p.rows(result.uri).to_pylist()
    assert [(r["queue_id"], r["target"]) for r in rows] == [(0, 90), (1, None)]


def test_unknown_group_fails_before_spark(spark: SparkSession, tmp_path: Path) -> None:
    p = planner(spark, tmp_path, reader())
    bad = ResetSpec(Scope("c1", ("g", "ghost")), Latest())
    with pytest.raises(SpecError) as info:
        asyncio.run(p.plan(bad))
    assert info.value.where == "scope.groups[1]"
    with pytest.raises(SpecError, match=r"^strategy.to-group: no consumer group 'ghost'"):
        asyncio.run(p.plan(spec(ToGroup("ghost"))))
    assert p.runner.submitted == []  # type: ignore[attr-defined]
    assert not (tmp_path / "ws" / "plans").exists()
    with pytest.raises(SpecError, match="scope.cluster"):
        asyncio.run(p.plan(ResetSpec(Scope("c2", ("g",)), Latest())))


def test_shift_beyond_every_queue_fails_before_spark(spark: SparkSession, tmp_path: Path) -> None:
    p = planner(spark, tmp_path, reader())
    with pytest.raises(SpecError, match="at most 60"):
        asyncio.run(p.plan(spec(ShiftBy(61))))
    assert p.runner.submitted == []  # type: ignore[attr-defined]


def test_csv_export_and_import(spark: SparkSession, tmp_path: Path) -> None:
    p = planner(spark, tmp_path, reader())
    first = asyncio.run(p.plan(spec(ToOffset(30))))
    csv = p.export_csv(first.uri, tmp_path / "plan.csv")
    lines = csv.read_text().splitlines()
    assert lines[0].startswith("cluster,group,topic,broker,queue_id,min_offset,max_offset,current")
    assert lines[2].startswith("c1,g,orders,broker-b,1,10,50,,30,30,,,no_committed,")
    again = asyncio.run(p.import_csv(csv))
    assert again.header.imported_from == str(csv)
    assert again.header.plan_id != first.header.plan_id
    assert again.header.content_hash == first.header.content_hash  # same queues, same targets

    # An edited line pointing at a queue that does not exist: named, and no plan written.
    edited = tmp_path / "edited.csv"
    edited.write_text(csv.read_text().replace("broker-b,1,", "broker-b,7,"))
    before = p.workspace.plans()
    with pytest.raises(JobInputError, match=r"edited.csv:3: queue orders / broker-b / 7"):
        asyncio.run(p.import_csv(edited))
    assert p.workspace.plans() == before
    missing = tmp_path / "missing.csv"
    missing.write_text("group,topic,broker,queue\ng,orders,broker-a,0\n")
    with pytest.raises(SpecError, match=r"missing.csv:1: missing column\(s\) offset"):
        asyncio.run(p.import_csv(missing))


def test_to_snapshot_at_a_time_restores_the_older_offsets(
    spark: SparkSession, tmp_path: Path
) -> None:
    r = reader(committed=10)
    p = planner(spark, tmp_path, r)
    old_ref, _ = asyncio.run(p.snapshot(spec(Latest())))
    r.offsets["g"] = group(
        "g", [("orders", "broker-a", 0, 0, 100, 70), ("orders", "broker-b", 1, 10, 50, 20)]
    )
    r.now_ms += 3_600_000
    result = asyncio.run(p.plan(spec(ToSnapshot(at_ms=r.now_ms - 60_000))))
    assert result.header.source_snapshot == old_ref.info()
    rows = p.rows(result.uri).to_pylist()
    assert [(x["current"], x["target"]) for x in rows] == [(70, 10), (20, None)]
    with pytest.raises(SpecError, match="strategy.to-snapshot: no snapshot"):
        asyncio.run(p.plan(spec(ToSnapshot(at_ms=old_ref.taken_at_ms - 1))))


def test_impact_from_the_snapshot_history(spark: SparkSession, tmp_path: Path) -> None:
    r = reader(committed=0)
    p = planner(spark, tmp_path, r)
    # Three snapshots a minute apart; queue 0 consumes 30 per minute: 0.5 msg/s.
    for committed in (0, 30):
        r.offsets["g"] = group(
            "g",
            [("orders", "broker-a", 0, 0, 100, committed), ("orders", "broker-b", 1, 10, 50, None)],
        )
        asyncio.run(p.snapshot(spec(Latest())))
        r.now_ms += 60_000
    r.offsets["g"] = group(
        "g", [("orders", "broker-a", 0, 0, 100, 60), ("orders", "broker-b", 1, 10, 50, None)]
    )
    result = asyncio.run(p.plan(spec(ShiftBy(-20))))
    impact = asyncio.run(p.impact(result))
    g = impact[0]
    assert (g.group, g.topic, g.rate_source) == ("g", None, "history")
    assert g.rate == pytest.approx(0.5)
    # After the shift queue 0 sits at 40: lag 60; queue 1 keeps its (unknown) position.
    assert g.lag_after == 60
    assert g.catch_up_s == pytest.approx(120.0)
    assert (tmp_path / "ws" / "plans" / result.header.plan_id / "impact.json").exists()


def test_arrow_and_spark_scope_cells_agree(spark: SparkSession, tmp_path: Path) -> None:
    df = frames.standard(spark)
    path = tmp_path / "s.parquet"
    df.coalesce(1).write.parquet(str(path))
    table = pq.read_table(str(path))
    for s in (spec(Latest()), spec(Latest(), queue_ids=(0, 2)), spec(ShiftBy(1), queue_ids=(1,))):
        from_spark = spark_scope_cells(read_snapshot(spark, f"file://{path}"), s)
        key = lambda c: (c.group, c.topic, c.broker)  # noqa: E731
        assert sorted(scope_cells(table, s), key=key) == sorted(from_spark, key=key)
