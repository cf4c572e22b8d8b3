"""Entry points shared by the console's warm session and spark-submit: read, transform, write.

Bad input (a SpecError naming the field or line) is found before anything is written; a failure
while writing removes what was written, so a plan directory holds a plan.json only when the plan
is complete.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from console.domain.checks import check_scope, check_source_groups
from console.domain.job_requests import ImpactRequest, PlanRequest
from console.domain.plan import PLAN_KEY, Impact, PlanHeader, PlanRow, Totals
from console.domain.plan_hash import root_digest
from console.domain.plan_hash import topic_totals as python_topic_totals
from console.domain.reset_paths import ResetPath
from console.domain.spec import (
    TIME_STRATEGIES,
    FromFile,
    ResetSpec,
    SpecError,
    ToGroup,
    ToSnapshot,
    parse_spec,
)
from console.services.infra import files
from console.services.plan.spec_files import load_offsets_file
from jobs.impact import broker_tps, consume_rates, topic_impact
from jobs.plan import FILE_SCHEMA, in_scope, missing_file_rows, plan_rows, scope_cells, topic_totals
from jobs.schema import PLAN_SCHEMA, SNAPSHOT_SCHEMA
from jobs.timestamps import BrokerSearch, OffsetSearch, resolve_offsets

Step = Callable[[str], None]
PLAN_JSON = "plan.json"
SMALL_PLAN_ROWS = 50_000
ROWS = "rows.parquet"
IMPACT_JSON = "impact.json"


class PlanExistsError(ValueError):
    pass


def _quiet(_: str) -> None:
    pass


def read_snapshot(spark: SparkSession, *uris: str) -> DataFrame:
    # An explicit schema spares Spark a job to infer it; columns a file lacks read as null.
    return spark.read.schema(SNAPSHOT_SCHEMA).parquet(*uris)


def read_plan_rows(spark: SparkSession, plan_uri: str) -> DataFrame:
    return spark.read.schema(PLAN_SCHEMA).parquet(files.join(plan_uri, ROWS))


def run_plan(
    spark: SparkSession,
    req: PlanRequest,
    step: Step = _quiet,
    *,
    search: OffsetSearch | None = None,
    small_rows: int = SMALL_PLAN_ROWS,
) -> PlanHeader:
    """Plan, write rows.parquet then plan.json. A snapshot of at most `small_rows` rows is
    planned by Spark but collected, added up and written by this process: one Spark job
    instead of three, which is most of a small plan's time on a warm session."""
    spec = parse_spec(req.spec, offsets=req.file_rows or None, load_offsets=load_offsets_file)
    step("reading the snapshot")
    snapshot = read_snapshot(spark, req.snapshot_uri)
    if not req.prechecked:
        step("checking the spec against the snapshot")
        check_scope(spec, scope_cells(snapshot, spec), req.snapshot.snapshot_id)
    inputs = _inputs(spark, spec, req, snapshot, search)
    rows = plan_rows(snapshot, spec, timestamp_ms=req.timestamp_ms, **inputs)

    plan_json = files.join(req.out_uri, PLAN_JSON)
    rows_uri = files.join(req.out_uri, ROWS)
    if files.exists(plan_json):
        raise PlanExistsError(f"{req.out_uri} already holds a plan; choose another directory")
    try:
        step("computing the plan")
        if files.parquet_rows(req.snapshot_uri) <= small_rows:
            cells = _write_collected(rows, rows_uri)
        else:
            # One sorted file: plans are read whole and in order (diff, CSV, apply). Coalesce,
            # not repartition: a snapshot is one file (one scan partition), nothing is lost.
            rows.coalesce(1).sortWithinPartitions(*PLAN_KEY).write.mode("overwrite").parquet(
                rows_uri
            )
            step("adding up the totals")
            # From the file as written, so they describe exactly what is there.
            cells = [r.asDict() for r in topic_totals(read_plan_rows(spark, req.out_uri)).collect()]
        header = _header(spec, req, cells)
        files.write_text(plan_json, header.to_json())
    except BaseException:
        files.delete(plan_json)
        files.delete(rows_uri)
        raise
    return header


def _write_collected(rows: DataFrame, rows_uri: str) -> list[dict[str, Any]]:
    """The small-plan path: the same rows, file layout and sums as the distributed path."""
    table = rows.toArrow().sort_by([(k, "ascending") for k in PLAN_KEY])
    files.write_parquet(files.join(rows_uri, "part-00000.parquet"), table)
    planned = [PlanRow.from_dict(d) for d in table.to_pylist()]
    return [
        {**_totals_dict(t), "digest": digest} for t, digest in python_topic_totals(planned).values()
    ]


def _totals_dict(t: Totals) -> dict[str, Any]:
    return {name: getattr(t, name) for name in Totals.__dataclass_fields__}


def _inputs(
    spark: SparkSession,
    spec: ResetSpec,
    req: PlanRequest,
    snapshot: DataFrame,
    search: OffsetSearch | None,
) -> dict[str, DataFrame]:
    s = spec.strategy
    if isinstance(s, ToGroup):
        return {"source": snapshot.filter(F.col("group") == s.group)}
    if isinstance(s, ToSnapshot):
        if not req.source_snapshot_uri or req.source_snapshot is None:
            raise SpecError("strategy.to-snapshot", "no snapshot to restore was found")
        past = read_snapshot(spark, req.source_snapshot_uri)
        present = [r["group"] for r in past.select("group").distinct().collect()]
        check_source_groups(spec.scope.groups, present, req.source_snapshot.snapshot_id)
        return {"source": past.filter(F.col("group").isin(list(spec.scope.groups)))}
    if isinstance(s, FromFile):
        return {"file_offsets": _file_offsets(spark, spec, s, snapshot, req.snapshot.snapshot_id)}
    if s.kind in TIME_STRATEGIES:
        if req.timestamp_ms is None:
            raise SpecError(f"strategy.{s.kind}", "the time was not resolved")
        searcher = search or BrokerSearch.for_request(req)
        queues = in_scope(snapshot, spec.scope)
        return {"resolved": resolve_offsets(queues, req.timestamp_ms, searcher)}
    return {}


def _file_offsets(
    spark: SparkSession, spec: ResetSpec, s: FromFile, snapshot: DataFrame, snapshot_id: str
) -> DataFrame:
    if not s.rows:
        raise SpecError(f"strategy.{s.kind}", f"{s.path} holds no offsets")
    by_line = {r.line: r for r in s.rows}
    for r in s.rows:
        if r.group is not None and r.group not in spec.scope.groups:
            raise SpecError(f"{s.path}:{r.line}", f"group {r.group!r} is not in scope.groups")
    df = spark.createDataFrame(
        [(r.line, r.group, r.topic, r.broker, r.queue_id, r.offset) for r in s.rows], FILE_SCHEMA
    )
    missing = missing_file_rows(df, snapshot)
    if missing:
        r = by_line[missing[0]]
        whose = f" for group {r.group!r}" if r.group else ""
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise SpecError(
            f"{s.path}:{r.line}",
            f"queue {r.topic} / {r.broker} / {r.queue_id} does not exist in snapshot "
            f"{snapshot_id}{whose}{more}",
        )
    return df


def _header(spec: ResetSpec, req: PlanRequest, cells: list[dict[str, Any]]) -> PlanHeader:
    per_topic = sorted(
        (
            Totals(
                group=c["group"],
                topic=c["topic"],
                queues=int(c["queues"]),
                changed=int(c["changed"]),
                re_consume=int(c["re_consume"]),
                skip=int(c["skip"]),
                warned=int(c["warned"]),
                lag_before=int(c["lag_before"]),
                lag_after=int(c["lag_after"]),
            )
            for c in cells
        ),
        key=lambda t: (t.group, t.topic or ""),
    )
    groups = sorted({t.group for t in per_topic})
    per_group = [Totals.combine(g, (t for t in per_topic if t.group == g)) for g in groups]
    digests = {(c["group"], c["topic"]): c["digest"] for c in cells}
    return PlanHeader(
        plan_id=req.plan_id,
        spec=spec.as_recorded(),
        snapshot=req.snapshot,
        created_at_ms=req.created_at_ms,
        content_hash=root_digest(req.snapshot.cluster, digests),
        rows=sum(t.queues for t in per_topic),
        totals=tuple(per_group + per_topic),
        timestamp_ms=req.timestamp_ms if spec.strategy.kind in TIME_STRATEGIES else None,
        reset_paths={g: ResetPath.from_dict(p) for g, p in req.reset_paths.items()},
        source_snapshot=req.source_snapshot,
        imported_from=req.imported_from,
    )


def run_impact(spark: SparkSession, req: ImpactRequest, step: Step = _quiet) -> list[Impact]:
    """Catch-up estimates per group (topic None) and per topic; written to impact.json if asked."""
    step("reading the plan and the snapshot history")
    plan = read_plan_rows(spark, req.plan_uri)
    history = read_snapshot(spark, *req.history_uris)
    groups = sorted(r["group"] for r in plan.select("group").distinct().collect())
    history = history.filter(F.col("group").isin(groups))
    step("estimating the catch-up time")
    topics = [
        Impact(
            group=r["group"],
            topic=r["topic"],
            re_consume=int(r["re_consume"]),
            lag_after=int(r["lag_after"]),
            rate=r["rate"],
            rate_source="history" if r["rate"] is not None else None,
            catch_up_s=r["catch_up_s"],
        )
        for r in topic_impact(plan, consume_rates(history)).orderBy("group", "topic").collect()
    ]
    tps = {r["group"]: r["tps"] for r in broker_tps(history).collect()}
    out: list[Impact] = []
    for group in groups:
        mine = [t for t in topics if t.group == group]
        out.append(_group_impact(group, mine, tps.get(group)))
        out.extend(mine)
    if req.out_uri:
        text = json.dumps([i.to_dict() for i in out], indent=2) + "\n"
        files.write_text(files.join(req.out_uri, IMPACT_JSON), text)
    return out


def _group_impact(group: str, topics: list[Impact], tps: float | None) -> Impact:
    rates = [t.rate for t in topics if t.rate is not None]
    rate: float | None
    if rates:
        rate, source = sum(rates), "history"
    else:
        rate, source = tps, "broker tps"
    lag_after = sum(t.lag_after for t in topics)
    known = rate is not None and rate > 0
    return Impact(
        group=group,
        topic=None,
        re_consume=sum(t.re_consume for t in topics),
        lag_after=lag_after,
        rate=rate if known else None,
        rate_source=source if known else None,
        catch_up_s=lag_after / rate if rate is not None and known else None,
    )
