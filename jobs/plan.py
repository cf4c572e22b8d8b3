"""The plan job's transforms: snapshot + spec → one row per queue, current → target.

Pure DataFrame functions: nothing here reads, writes or talks to a broker. Timestamp strategies
take the offsets already resolved per queue (`jobs.timestamps.resolve_offsets`), copies take
the source rows, from-file takes the file's rows, so every strategy is testable on hand-made
frames.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from console.domain.offsets import DLQ_PREFIX, RETRY_PREFIX
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
from jobs.checks import ScopeCell
from jobs.schema import PLAN_NAMES

KEY = ["topic", "broker", "queue_id"]
FILE_SCHEMA = "line int, group string, topic string, broker string, queue_id int, offset bigint"


# ---- scope ----------------------------------------------------------------------------------


def in_scope(snapshot: DataFrame, scope: Scope) -> DataFrame:
    """The snapshot rows a spec's scope selects (same rules as jobs.checks.topic_in_scope)."""
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
    not to), delta, the clamp reason, warnings and the time span, in PLAN_COLUMNS order."""
    req, lo, hi = F.col("requested"), F.col("min_offset"), F.col("max_offset")
    current = F.col("committed")
    below, above = req < lo, req > hi
    if spec.clamp:
        target = F.when(below, lo).when(above, hi).otherwise(req)
        clamp = F.when(below, F.lit(str(Clamp.BELOW_MIN))).when(above, F.lit(str(Clamp.ABOVE_MAX)))
    else:
        target, clamp = req, F.lit(None).cast("string")
    flags = [
        (below, PlanWarning.BELOW_MIN),
        (above, PlanWarning.ABOVE_MAX),
        (current.isNull(), PlanWarning.NO_COMMITTED),
        (~F.col("sourced"), PlanWarning.NO_SOURCE),
        (F.coalesce(F.col("clients"), F.lit(0)) > 0, PlanWarning.CONSUMERS_ONLINE),
        (F.col("message_model") == "BROADCASTING", PlanWarning.BROADCASTING),
    ]
    warnings = F.array_compact(F.array(*(F.when(c, F.lit(str(w))) for c, w in flags)))
    staged = df.select(
        "*",
        current.alias("current"),
        target.alias("target"),
        clamp.alias("clamp"),
        warnings.alias("warnings"),
        F.col("last_timestamp").alias("current_time"),
    )
    staged = staged.withColumn("delta", F.col("target") - F.col("current"))
    staged = staged.withColumn("target_time", _target_time(timestamp_ms))
    staged = staged.withColumn("span_ms", F.col("current_time") - F.col("target_time"))
    return staged.select(*PLAN_NAMES)


def _target_time(timestamp_ms: int | None) -> Column:
    """Store time at the target, best known first: the current position's own time, a source's
    time, the sought timestamp, the ends of the queue, else a straight line between them."""
    t, lo, hi = F.col("target"), F.col("min_offset"), F.col("max_offset")
    t_lo, t_hi = F.col("min_timestamp"), F.col("max_timestamp")
    sought = (
        F.greatest(F.least(F.lit(timestamp_ms), t_hi), t_lo)
        if timestamp_ms is not None
        else F.lit(None)
    )
    unclamped = F.col("clamp").isNull()
    between = t_lo + ((t_hi - t_lo) * (t - lo) / (hi - lo)).cast("bigint")
    return (
        F.when(t.isNull(), F.lit(None))
        .when(t == F.col("current"), F.col("current_time"))
        .when(unclamped & F.col("source_time").isNotNull(), F.col("source_time"))
        .when(unclamped & sought.isNotNull() & (t < hi), sought)
        .when(t <= lo, t_lo)
        .when(t >= hi, t_hi)
        .otherwise(between)
        .cast("bigint")
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
    delta = F.col("delta")
    leaf = F.sha2(
        F.concat_ws(
            "\x1f",
            "group",
            "topic",
            "broker",
            F.col("queue_id").cast("string"),
            F.coalesce(F.col("current").cast("string"), F.lit("")),
            F.coalesce(F.col("target").cast("string"), F.lit("")),
        ),
        256,
    )
    ordered = F.array_sort(F.collect_list(F.struct("broker", "queue_id", leaf.alias("leaf"))))
    changed = F.col("target").isNotNull() & (
        F.col("current").isNull() | (F.col("target") != F.col("current"))
    )
    zero = F.lit(0).cast("bigint")
    return plan.groupBy("group", "topic").agg(
        F.count(F.lit(1)).alias("queues"),
        F.sum(F.when(changed, 1).otherwise(0)).alias("changed"),
        F.coalesce(F.sum(F.when(delta > 0, delta)), zero).alias("re_consume"),
        F.coalesce(F.sum(F.when(delta < 0, delta)), zero).alias("skip"),
        F.sum(F.when(F.size("warnings") > 0, 1).otherwise(0)).alias("warned"),
        F.coalesce(F.sum(F.col("max_offset") - F.col("current")), zero).alias("lag_before"),
        F.coalesce(F.sum(F.col("max_offset") - F.col("target")), zero).alias("lag_after"),
        F.sha2(F.array_join(F.transform(ordered, lambda x: x["leaf"]), ""), 256).alias("digest"),
    )


def _required(df: DataFrame | None, name: str) -> DataFrame:
    if df is None:
        raise ValueError(f"this strategy needs the {name} frame")
    return df
