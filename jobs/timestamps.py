"""Store time → offset on every queue, asked of the brokers from inside the job.

Queues are grouped by broker and each broker's list is handed to one task, which opens one admin
client and asks SEARCH_OFFSET_BY_TIMESTAMP (LOWER: the first message stored at or after the time)
for all of that broker's queues concurrently. This module is imported by executors: it must stay
free of anything but pyspark, the wire client and the standard library.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, IntegerType, LongType, StringType, StructField, StructType

from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import RocketMQError
from console.rocketmq.models import BoundaryType

Query = tuple[str, int]  # topic, queue id

_RESULT = ArrayType(
    StructType(
        [
            StructField("topic", StringType()),
            StructField("queue_id", IntegerType()),
            StructField("ts_offset", LongType()),
        ]
    )
)


class BrokerLookupError(RuntimeError):
    """A broker could not answer a timestamp search; the plan cannot be trusted without it."""


class OffsetSearch(Protocol):
    """Finds, on one broker, the offset of the first message stored at or after a time."""

    def search(self, broker: str, addr: str, queries: Sequence[Query], ts_ms: int) -> list[int]: ...


@dataclass(frozen=True, slots=True)
class BrokerSearch:
    """The real thing: the wire client, pickled to the executors and opened there."""

    namesrv: tuple[str, ...]
    timeout_s: float = 5.0
    concurrency: int = 32  # in-flight requests per broker: enough to hide latency, not a flood

    def search(self, broker: str, addr: str, queries: Sequence[Query], ts_ms: int) -> list[int]:
        return asyncio.run(self._search(broker, addr, queries, ts_ms))

    async def _search(
        self, broker: str, addr: str, queries: Sequence[Query], ts_ms: int
    ) -> list[int]:
        gate = asyncio.Semaphore(self.concurrency)
        # The client wants a name server list even though every call here goes to `addr`.
        async with AdminClient(self.namesrv or (addr,), timeout=self.timeout_s) as admin:

            async def one(topic: str, queue_id: int) -> int:
                async with gate:
                    try:
                        return await admin.search_offset(
                            addr, topic, queue_id, ts_ms, BoundaryType.LOWER
                        )
                    except RocketMQError as exc:
                        raise BrokerLookupError(
                            f"{broker} ({addr}) could not find the offset at {ts_ms} on "
                            f"{topic}:{queue_id}: {exc}"
                        ) from None

            return list(await asyncio.gather(*(one(t, q) for t, q in queries)))


def resolve_offsets(queues: DataFrame, ts_ms: int, search: OffsetSearch) -> DataFrame:
    """(broker, broker_addr, topic, queue_id) → (broker, topic, queue_id, ts_offset)."""
    per_broker = (
        queues.select("broker", "broker_addr", "topic", "queue_id")
        .distinct()
        .groupBy("broker", "broker_addr")
        .agg(F.collect_list(F.struct("topic", "queue_id")).alias("queues"))
        .repartition(F.col("broker"))
    )
    # Non-deterministic so the optimizer never evaluates it twice: every call is network I/O.
    lookup = F.udf(partial(_lookup, search, ts_ms), _RESULT, useArrow=False).asNondeterministic()
    found = per_broker.select(
        "broker", F.explode(lookup("broker", "broker_addr", "queues")).alias("r")
    )
    return found.select("broker", "r.topic", "r.queue_id", "r.ts_offset")


def _lookup(
    search: OffsetSearch, ts_ms: int, broker: str, addr: str | None, queues: list[Any]
) -> list[tuple[str, int, int]]:
    if not addr:
        raise BrokerLookupError(f"the snapshot has no address for broker {broker}")
    queries = [(str(q["topic"]), int(q["queue_id"])) for q in queues]
    offsets = search.search(broker, addr, queries, ts_ms)
    return [(t, q, int(o)) for (t, q), o in zip(queries, offsets, strict=True)]
