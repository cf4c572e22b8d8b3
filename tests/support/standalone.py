"""A synthetic snapshot and a to-group plan request over it: what the standalone-cluster tests plan
on a local session and on a cluster, to compare."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from console.domain.job_requests import PlanRequest
from console.domain.plan import SnapshotInfo
from tests.spark import frames


def synthetic(spark: SparkSession, path: Path) -> str:
    """Two groups on three topics, two brokers, 40 queues each, offsets spread by formula."""
    rows = []
    for g in ("g", "h"):
        for t in ("a", "b", "c"):
            for b in ("broker-a", "broker-b"):
                for q in range(40):
                    lo, hi = q * 3, 500 + q * 7
                    committed = None if (q + len(t)) % 9 == 0 else lo + (q * 37 + ord(g)) % 600
                    rows.append(
                        {
                            "group": g,
                            "topic": t,
                            "broker": b,
                            "queue_id": q,
                            "min_offset": lo,
                            "max_offset": hi,
                            "committed": committed,
                            "clients": 1 if g == "h" else 0,
                        }
                    )
    frames.snapshot(spark, rows).coalesce(1).write.parquet(str(path))
    return f"file://{path}"


def to_group_request(plan_id: str, snapshot: str, out: Path) -> PlanRequest:
    """A to-group plan of the synthetic snapshot, written to `out`."""
    return PlanRequest(
        plan_id=plan_id,
        spec={
            "scope": {"cluster": "c1", "groups": ["g"], "include_retry": True},
            "strategy": {"to-group": "h"},
        },
        snapshot_uri=snapshot,
        snapshot=SnapshotInfo("c1", "s", frames.TAKEN_AT),
        out_uri=f"file://{out}",
        created_at_ms=frames.TAKEN_AT,
    )
