"""Hand-made snapshots for the Spark tests: every value is chosen so answers work out by hand."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from jobs.schema import SNAPSHOT_NAMES, SNAPSHOT_SCHEMA

TAKEN_AT = 1_700_000_000_000
DEFAULTS: dict[str, Any] = {
    "cluster": "c1",
    "broker": "broker-a",
    "broker_addr": "127.0.0.1:10911",
    "topic": "orders",
    "queue_id": 0,
    "group": "g",
    "min_offset": 0,
    "max_offset": 100,
    "committed": 40,
    "last_timestamp": None,
    "min_timestamp": None,
    "max_timestamp": None,
    "clients": 0,
    "message_model": "CLUSTERING",
    "consume_tps": 0.0,
    "taken_at": TAKEN_AT,
}


def row(**values: Any) -> tuple[Any, ...]:
    unknown = set(values) - set(DEFAULTS)
    assert not unknown, unknown
    merged = {**DEFAULTS, **values}
    return tuple(merged[name] for name in SNAPSHOT_NAMES)


def snapshot(spark: SparkSession, rows: Iterable[Mapping[str, Any]]) -> DataFrame:
    return spark.createDataFrame([row(**r) for r in rows], SNAPSHOT_SCHEMA)


# The standard snapshot: group g on orders (3 queues, two brokers) and its retry topic; group h
# (a copy source) on the same queues. Store times: message n of q0 was stored at T0 + 10 n.
T0 = 1_699_990_000_000
Q0 = {
    "queue_id": 0,
    "min_offset": 0,
    "max_offset": 100,
    "committed": 40,
    "last_timestamp": T0 + 390,
    "min_timestamp": T0,
    "max_timestamp": T0 + 990,
}
Q1 = {"queue_id": 1, "min_offset": 50, "max_offset": 200, "committed": 60}
Q2 = {
    "queue_id": 2,
    "broker": "broker-b",
    "broker_addr": "127.0.0.2:10911",
    "min_offset": 0,
    "max_offset": 10,
    "committed": None,
}
RETRY = {"topic": "%RETRY%g", "queue_id": 0, "min_offset": 0, "max_offset": 5, "committed": 5}


def standard(spark: SparkSession, extra: Sequence[Mapping[str, Any]] = ()) -> DataFrame:
    rows: list[Mapping[str, Any]] = [Q0, Q1, Q2, RETRY]
    rows += [
        {**Q0, "group": "h", "committed": 80, "last_timestamp": T0 + 790},
        {**Q1, "group": "h", "committed": None},
        {**Q2, "group": "h", "committed": 5},
        {**RETRY, "group": "h", "topic": "%RETRY%h", "committed": 2},
    ]
    return snapshot(spark, [*rows, *extra])


@dataclass(frozen=True)
class TableSearch:
    """A fake broker: LOWER search over known store times, per (broker, topic, queue)."""

    store_times: Mapping[tuple[str, str, int], Sequence[int]]  # offsets min.. in order
    first_offset: Mapping[tuple[str, str, int], int]

    def search(
        self, broker: str, addr: str, queries: Sequence[tuple[str, int]], ts_ms: int
    ) -> list[int]:
        out = []
        for topic, queue_id in queries:
            times = self.store_times[(broker, topic, queue_id)]
            start = self.first_offset[(broker, topic, queue_id)]
            hit = next((i for i, t in enumerate(times) if t >= ts_ms), len(times))
            out.append(start + hit)
        return out


@dataclass(frozen=True)
class FailingSearch:
    def search(
        self, broker: str, addr: str, queries: Sequence[tuple[str, int]], ts_ms: int
    ) -> list[int]:
        from jobs.timestamps import BrokerLookupError

        raise BrokerLookupError(f"{broker} ({addr}) did not answer")
