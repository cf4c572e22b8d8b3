"""Store time → offset on every queue, asked of the brokers from inside the job.

Queues are grouped by broker and each broker's list is handed to one task, which opens one admin
client and asks SEARCH_OFFSET_BY_TIMESTAMP (LOWER: the first message stored at or after the time)
for all of that broker's queues concurrently. This module is imported by executors: it must stay
free of anything but pyspark, the console's admin-client factory (with its config and wire
client) and the standard library.

The client is opened through `console.services.infra.access.open_admin`, like every other client of
a configured cluster. What reaches the executor is the cluster's credentials *by reference*
(`env:VAR` / `file:/path`, pickled with the task); the reference is resolved there, so the secret is
never in the request, the task or an argv, and must be reachable on every executor (see README,
"Credentials"). TLS travels the same way: the paths of the CA, certificate and key files, which each
executor reads when it connects; and so do the address map and the SOCKS proxy, so an executor
connects where the console does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, IntegerType, LongType, StringType, StructField, StructType

from console.config import ClusterConfig, ConfigError, CredentialsRef, TlsRef
from console.domain.job_requests import PlanRequest
from console.redact import redact_text
from console.rocketmq.errors import RocketMQError
from console.rocketmq.models import BoundaryType
from console.services.infra.access import open_admin
from console.services.infra.fanout import gather_limited

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
    """The real thing: the cluster's addresses and credential references, pickled to the
    executors; the client is opened (and the credentials resolved) there."""

    namesrv: tuple[str, ...]
    timeout_s: float = 5.0
    concurrency: int = 32  # in-flight requests per broker: enough to hide latency, not a flood
    credentials: CredentialsRef | None = None
    cluster: str = "the plan's cluster"  # for messages
    tls: TlsRef | None = None
    #: Where a registered address is connected to, and through which SOCKS5 proxy.
    address_map: tuple[tuple[str, str], ...] = ()
    socks: str | None = None

    @classmethod
    def for_request(cls, req: PlanRequest) -> BrokerSearch:
        refs = CredentialsRef.from_dict(req.credentials) if req.credentials else None
        if refs is not None:
            _mask_here(refs)
        return cls(
            req.namesrv,
            req.search_timeout_s,
            credentials=refs,
            cluster=req.snapshot.cluster,
            tls=TlsRef.from_dict(req.tls) if req.tls else None,
            address_map=req.address_map,
            socks=req.socks,
        )

    def search(self, broker: str, addr: str, queries: Sequence[Query], ts_ms: int) -> list[int]:
        return asyncio.run(self._search(broker, addr, queries, ts_ms))

    def _config(self, addr: str) -> ClusterConfig:
        # The client wants a name server list even though every call here goes to `addr`.
        return ClusterConfig(
            name=self.cluster,
            namesrv=self.namesrv or (addr,),
            credentials=self.credentials,
            tls=self.tls,
            address_map=self.address_map,
            socks=self.socks,
        )

    async def _search(
        self, broker: str, addr: str, queries: Sequence[Query], ts_ms: int
    ) -> list[int]:
        try:
            admin = open_admin(self._config(addr), timeout=self.timeout_s)
        except ConfigError as exc:  # a reference or TLS file does not resolve on this executor
            raise BrokerLookupError(f"{broker} ({addr}): {redact_text(str(exc))}") from None
        async with admin:

            async def one(query: Query) -> int:
                topic, queue_id = query
                try:
                    return await admin.search_offset(
                        addr, topic, queue_id, ts_ms, BoundaryType.LOWER
                    )
                except RocketMQError as exc:
                    raise BrokerLookupError(
                        redact_text(
                            f"{broker} ({addr}) could not find the offset at {ts_ms} on "
                            f"{topic}:{queue_id}: {exc}"
                        )
                    ) from None

            return await gather_limited(one, queries, limit=self.concurrency)


def _mask_here(refs: CredentialsRef) -> None:
    """Resolve the references in this process (the driver) only to hide the secret from what
    it reports, when they resolve here at all: on a remote master they may name a file or a
    variable that only the workers have."""
    with contextlib.suppress(ConfigError):
        refs.resolve()


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
