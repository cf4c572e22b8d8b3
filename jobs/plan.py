"""The plan job's transforms: snapshot + spec → one row per queue, current → target.

Pure DataFrame functions: nothing here reads, writes or talks to a broker. Timestamp strategies
take the offsets already resolved per queue (`jobs.timestamps.resolve_offsets`), copies take
the source rows, from-file takes the file's rows, so every strategy is testable on hand-made
frames.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from console.domain.checks import ScopeCell
from console.domain.plan import Clamp, PlanWarning
from console.domain.spec import (
    Earliest,
    FromFile,
    Latest,
    ResetSpec,
    Scope,
    ShiftBy,
    ToGroup,
    ToOffset,
    ToSnapshot,
)
from console.rocketmq.topics import DLQ_PREFIX, RETRY_PREFIX
from jobs.schema import PLAN_NAMES

KEY = ["topic", "broker", "queue_id"]
FILE_SCHEMA = "line int, group string, topic string, broker string, queue_id int, offset bigint"


# ---- scope ----------------------------------------------------------------------------------


def in_scope(snapshot: DataFrame, scope: Scope) -> DataFrame:
    """The snapshot rows a spec's scope selects (the rules of checks.topic_in_scope)."""
    topic = F.col("topic")
    own_retry = topic.startswith(F.concat(F.lit(RETRY_PREFIX), F.col("group")))
    if scope.topics:
        wanted = topic.isin(list(scope.topics))
    else:
        wanted = ~(topic.startswith(RETRY_PREFIX) | topic.startswith(DLQ_PREFIX))
    if scope.include_retry:
        wanted = wanted | own_retry
    df = snapshot.filter(F.col("group").isin(list(scope.groups)) & wanted)
    if scope.brokers:
        df = df.filter(F.col("broker").isin(list(scope.brokers)))
    if scope.queue_ids:
        df = df.filter(F.col("queue_id").isin(list(scope.queue_ids)))
    return df


def scope_cells(snapshot: DataFrame, spec: ResetSpec) -> list[ScopeCell]:
    """One small action: what the snapshot holds per (group, topic, broker), with the queue
    ids and the room to shift counted over the spec's queue ids only."""
    ids = list(spec.scope.queue_ids)
    selected = F.col("queue_id").isin(ids) if ids else F.lit(True)
    up = F.col("max_offset") - F.col("committed")
    down = F.col("committed") - F.col("min_offset")
    # Every group, not only those in scope: an error about a missing group lists the others.
    rows = (
        snapshot.groupBy("group", "topic", "broker")
        .agg(
            F.collect_set(F.when(selected & F.lit(bool(ids)), F.col("queue_id"))).alias("ids"),
            F.max(F.when(selected, up)).alias("room_up"),
            F.max(F.when(selected, down)).alias("room_down"),
        )
        .collect()
    )
    return [
        ScopeCell(
            group=r["group"],
            topic=r["topic"],
            broker=r["broker"],
            queue_ids=tuple(sorted(r["ids"])),
            room_up=r["room_up"],
            room_down=r["room_down"],
        )
        for r in rows
    ]


# ---- requested offsets per strategy --------------------------------------------------------


def requested(
    scoped: DataFrame,
    spec: ResetSpec,
    *,
    resolved: DataFrame | None = None,
    source: DataFrame | None = None,
    file_offsets: DataFrame | None = None,
) -> DataFrame:
    """Adds `requested` (the strategy's offset, before clamping), `source_time` (store time of
    the message before it, when a source knows it) and `sourced` (false: no source offset).

    resolved: (broker, topic, queue_id, ts_offset) for to-timestamp and by-duration.
    source: the source group's rows (to-group) or the past snapshot's rows (to-snapshot).
    file_offsets: FILE_SCHEMA rows (from-file); queues the file does not name drop out.
    """
    s = spec.strategy
    no_time = F.lit(None).cast("bigint")
    if isinstance(s, Earliest):
        return _with(scoped, F.col("min_offset"), no_time)
    if isinstance(s, Latest):
        return _with(scoped, F.col("max_offset"), no_time)
    if isinstance(s, ToOffset):
        return _with(scoped, F.lit(s.offset).cast("bigint"), no_time)
    if isinstance(s, ShiftBy):
        return _with(scoped, F.col("committed") + F.lit(s.delta), no_time)
    if isinstance(s, ToGroup):
        return _copied(scoped, _required(source, "source"), by_group=False)
    if isinstance(s, ToSnapshot):
        return _copied(scoped, _required(source, "source"), by_group=True)
    if isinstance(s, FromFile):
        return _from_file(scoped, _required(file_offsets, "file_offsets"))
    found = _required(resolved, "resolved")
    joined = scoped.join(found.select(*KEY, "ts_offset"), on=KEY, how="left")
    return _with(joined, F.col("ts_offset"), no_time).drop("ts_offset")


def _with(df: DataFrame, offset: Column, time: Column, sourced: Column | None = None) -> DataFrame:
    return df.select(
        "*",
        offset.cast("bigint").alias("requested"),
        time.cast("bigint").alias("source_time"),
        (sourced if sourced is not None else F.lit(True)).alias("sourced"),
    )


def _retry_key(topic: Column, group: Column) -> Column:
    """A group's own retry topic matches the other group's own retry topic."""
    return F.when(topic == F.concat(F.lit(RETRY_PREFIX), group), F.lit(RETRY_PREFIX)).otherwise(
        topic
    )


def _copied(scoped: DataFrame, source: DataFrame, *, by_group: bool) -> DataFrame:
    keys = ["src_topic", "broker", "queue_id"] + (["group"] if by_group else [])
    src = source.select(
        _retry_key(F.col("topic"), F.col("group")).alias("src_topic"),
        "broker",
        "queue_id",
        *(["group"] if by_group else []),
        F.col("committed").alias("src_committed"),
        F.col("last_timestamp").alias("src_time"),
    )
    left = scoped.withColumn("src_topic", _retry_key(F.col("topic"), F.col("group")))
    joined = left.join(src, on=keys, how="left")
    sourced = F.col("src_committed").isNotNull()
    out = _with(joined, F.col("src_committed"), F.col("src_time"), sourced)
    return out.drop("src_topic", "src_committed", "src_time")


def _from_file(scoped: DataFrame, file_offsets: DataFrame) -> DataFrame:
    f = file_offsets.select(
        F.col("group").alias("f_group"),
        F.col("topic").alias("f_topic"),
        F.col("broker").alias("f_broker"),
        F.col("queue_id").alias("f_queue_id"),
        F.col("offset").alias("f_offset"),
    )
    cond = (
        (F.col("topic") == F.col("f_topic"))
        & (F.col("broker") == F.col("f_broker"))
        & (F.col("queue_id") == F.col("f_queue_id"))
        & (F.col("f_group").isNull() | (F.col("f_group") == F.col("group")))
    )
    joined = scoped.join(f, on=cond, how="inner")
    out = _with(joined, F.col("f_offset"), F.lit(None))
    return out.drop("f_group", "f_topic", "f_broker", "f_queue_id", "f_offset")


def missing_file_rows(file_offsets: DataFrame, snapshot: DataFrame, limit: int = 5) -> list[int]:
    """Lines of an offsets file whose queue the snapshot does not hold (for that group)."""
    snap = snapshot.select(
        F.col("group").alias("s_group"),
        F.col("topic").alias("s_topic"),
        F.col("broker").alias("s_broker"),
        F.col("queue_id").alias("s_queue_id"),
    )
    cond = (
        (F.col("topic") == F.col("s_topic"))
        & (F.col("broker") == F.col("s_broker"))
        & (F.col("queue_id") == F.col("s_queue_id"))
        & (F.col("group").isNull() | (F.col("group") == F.col("s_group")))
    )
    missing = file_offsets.join(snap, on=cond, how="left_anti").select("line").orderBy("line")
    return [r["line"] for r in missing.limit(limit).collect()]


# ---- clamp, delta, warnings, time span -----------------------------------------------------


def finish(df: DataFrame, spec: ResetSpec, *, timestamp_ms: int | None = None) -> DataFrame:
    """From `requested` to the plan row: target (clamped to [min, max] unless the spec says
    not to), delta, the clamp reason, warnings and the time span, in PLAN_COLUMNS order.

    Written as SQL expressions: each is one call into the JVM, where building the same
    expressions from Column objects costs a round trip per operator (a third of a small plan's
    time on a warm session)."""
    # An unknown min (a partial snapshot) still bounds targets at 0: no offset is negative.
    low = "coalesce(min_offset, 0)"
    below, above = f"requested < {low}", "requested > max_offset"
    if spec.clamp:
        target = f"CASE WHEN {below} THEN {low} WHEN {above} THEN max_offset ELSE requested END"
        clamp = (
            f"CASE WHEN {below} THEN '{Clamp.BELOW_MIN}' WHEN {above} THEN '{Clamp.ABOVE_MAX}' END"
        )
    else:
        target, clamp = "requested", "CAST(NULL AS STRING)"
    flags = [
        (below, PlanWarning.BELOW_MIN),
        (above, PlanWarning.ABOVE_MAX),
        ("committed IS NULL", PlanWarning.NO_COMMITTED),
        ("NOT sourced", PlanWarning.NO_SOURCE),
        ("coalesce(clients, 0) > 0", PlanWarning.CONSUMERS_ONLINE),
        ("message_model = 'BROADCASTING'", PlanWarning.BROADCASTING),
        # Whatever the target, the messages below the min are gone: say so even when the
        # strategy (earliest, a time before min) clamps without asking for anything below it.
        ("committed < min_offset", PlanWarning.CURRENT_BELOW_MIN),
        # A partial snapshot: the broker did not say, so nothing was clamped to it.
        ("min_offset IS NULL", PlanWarning.MIN_UNKNOWN),
    ]
    if timestamp_ms is not None:
        # The snapshot's instant bounds the newest store time when the queue's is unknown.
        newest = "coalesce(max_timestamp, taken_at)"
        after = f"max_offset > min_offset AND {int(timestamp_ms)}L > {newest}"
        flags.append((after, PlanWarning.AFTER_NEWEST))
    warnings = ", ".join(f"IF({cond}, '{w}', NULL)" for cond, w in flags)
    staged = df.selectExpr(
        "*",
        "committed AS current",
        f"{target} AS target",
        f"{clamp} AS clamp",
        f"array_compact(array({warnings})) AS warnings",
        "last_timestamp AS current_time",
    )
    done = staged.selectExpr(
        "*",
        "target - current AS delta",
        f"{_target_time(timestamp_ms)} AS target_time",
    ).selectExpr("*", "current_time - target_time AS span_ms")
    return done.select(*PLAN_NAMES)


def _target_time(timestamp_ms: int | None) -> str:
    """Store time at the target, best known first: the current position's own time, a source's
    time, the sought timestamp, the ends of the queue, else a straight line between them (in
    double: time span x offsets can overflow a long)."""
    sought = (
        f"greatest(least({int(timestamp_ms)}L, max_timestamp), min_timestamp)"
        if timestamp_ms is not None
        else "CAST(NULL AS BIGINT)"
    )
    line = (
        "min_timestamp + CAST(CAST(max_timestamp - min_timestamp AS DOUBLE)"
        " * (target - min_offset) / (max_offset - min_offset) AS BIGINT)"
    )
    return (
        "CAST(CASE WHEN target IS NULL THEN NULL"
        " WHEN target = current THEN current_time"
        " WHEN clamp IS NULL AND source_time IS NOT NULL THEN source_time"
        f" WHEN clamp IS NULL AND {sought} IS NOT NULL AND target < max_offset THEN {sought}"
        " WHEN target <= min_offset THEN min_timestamp"
        " WHEN target >= max_offset THEN max_timestamp"
        f" ELSE {line} END AS BIGINT)"
    )


def plan_rows(
    snapshot: DataFrame,
    spec: ResetSpec,
    *,
    timestamp_ms: int | None = None,
    resolved: DataFrame | None = None,
    source: DataFrame | None = None,
    file_offsets: DataFrame | None = None,
) -> DataFrame:
    """The whole transform: scope, strategy, clamp and warnings."""
    scoped = in_scope(snapshot, spec.scope)
    asked = requested(scoped, spec, resolved=resolved, source=source, file_offsets=file_offsets)
    return finish(asked, spec, timestamp_ms=timestamp_ms)


# ---- totals and the content hash -----------------------------------------------------------


def topic_totals(plan: DataFrame) -> DataFrame:
    """Per (group, topic): the sums in console.domain.plan.Totals plus the topic's digest."""
    leaf = (
        "sha2(concat_ws('\\u001f', `group`, topic, broker, CAST(queue_id AS STRING),"
        " coalesce(CAST(current AS STRING), ''), coalesce(CAST(target AS STRING), '')), 256)"
    )
    ordered = f"array_sort(collect_list(struct(broker, queue_id, {leaf} AS leaf)))"
    changed = "target IS NOT NULL AND (current IS NULL OR target != current)"
    return plan.groupBy("group", "topic").agg(
        F.expr("count(1) AS queues"),
        F.expr(f"CAST(sum(IF({changed}, 1, 0)) AS BIGINT) AS changed"),
        # Back (delta < 0) delivers messages again; forward (delta > 0) skips them.
        F.expr("coalesce(sum(IF(delta < 0, -delta, NULL)), 0L) AS re_consume"),
        F.expr("coalesce(sum(IF(delta > 0, delta, NULL)), 0L) AS skip"),
        F.expr("CAST(sum(IF(size(warnings) > 0, 1, 0)) AS BIGINT) AS warned"),
        F.expr("coalesce(sum(max_offset - current), 0L) AS lag_before"),
        F.expr("coalesce(sum(max_offset - target), 0L) AS lag_after"),
        F.expr(f"sha2(array_join(transform({ordered}, x -> x.leaf), ''), 256) AS digest"),
    )


def _required(df: DataFrame | None, name: str) -> DataFrame:
    if df is None:
        raise ValueError(f"this strategy needs the {name} frame")
    return df
