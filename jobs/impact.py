"""The impact job's transforms: how long would the group take to catch up after the reset?

The consume rate comes from the snapshot history (committed offsets moving between snapshots);
a queue whose offset went backwards between two snapshots was reset, not consumed, and that step
is left out. Without history the brokers' own consume TPS from the newest snapshot stands in.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

QUEUE = ["cluster", "group", "topic", "broker", "queue_id"]


def consume_rates(history: DataFrame) -> DataFrame:
    """Per (group, topic): consumed messages, the window they span, and the rate (msg/s)."""
    w = Window.partitionBy(*QUEUE).orderBy("taken_at")
    steps = history.select(
        "group",
        "topic",
        "taken_at",
        "committed",
        F.lag("committed").over(w).alias("prev"),
        F.lag("taken_at").over(w).alias("prev_at"),
    ).filter(
        F.col("prev").isNotNull()
        & F.col("committed").isNotNull()
        & (F.col("committed") >= F.col("prev"))
    )
    per_topic = steps.groupBy("group", "topic").agg(
        F.sum(F.col("committed") - F.col("prev")).alias("consumed"),
        F.min("prev_at").alias("since"),
        F.max("taken_at").alias("until"),
    )
    return per_topic.filter(F.col("until") > F.col("since")).select(
        "group",
        "topic",
        "consumed",
        "since",
        "until",
        (F.col("consumed") * F.lit(1000.0) / (F.col("until") - F.col("since"))).alias("rate"),
    )


def broker_tps(history: DataFrame) -> DataFrame:
    """Per group: the consume TPS the brokers reported in the newest snapshot."""
    return history.groupBy("group").agg(F.max_by("consume_tps", "taken_at").alias("tps"))


def topic_impact(plan: DataFrame, rates: DataFrame) -> DataFrame:
    """Per (group, topic): messages to re-consume, lag after the reset, rate and catch-up time."""
    delta = F.col("delta")
    position = F.coalesce(F.col("target"), F.col("current"))
    per_topic = plan.groupBy("group", "topic").agg(
        F.coalesce(F.sum(F.when(delta < 0, -delta)), F.lit(0).cast("bigint")).alias("re_consume"),
        F.coalesce(F.sum(F.col("max_offset") - position), F.lit(0).cast("bigint")).alias(
            "lag_after"
        ),
    )
    joined = per_topic.join(rates.select("group", "topic", "rate"), ["group", "topic"], "left")
    return joined.select(
        "group",
        "topic",
        "re_consume",
        "lag_after",
        "rate",
        F.when(F.col("rate") > 0, F.col("lag_after") / F.col("rate")).alias("catch_up_s"),
    )
