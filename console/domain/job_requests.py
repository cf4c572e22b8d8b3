"""What the console asks a job to do: plain JSON-able values, the same for the warm session
host and for `spark-submit jobs/__main__.py plan request.json`."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from console.domain.plan import SnapshotInfo
from console.domain.spec import FileOffset


@dataclass(frozen=True, slots=True)
class PlanRequest:
    plan_id: str
    spec: dict[str, Any]  # console.domain.spec.spec_to_dict
    snapshot_uri: str
    snapshot: SnapshotInfo
    out_uri: str  # the plan directory: plan.json and rows.parquet go in it
    created_at_ms: int
    timestamp_ms: int | None = None  # to-timestamp / by-duration, resolved by the caller
    namesrv: tuple[str, ...] = ()
    file_rows: tuple[FileOffset, ...] = ()  # from-file: the rows, already parsed and checked
    source_snapshot_uri: str | None = None  # to-snapshot
    source_snapshot: SnapshotInfo | None = None
    reset_paths: dict[str, dict[str, Any]] = field(default_factory=dict)
    imported_from: str | None = None
    search_timeout_s: float = 5.0
    # The caller already ran console.domain.checks.check_scope on this snapshot (the console
    # does, from the Arrow table it just wrote): the job skips that Spark action.
    prechecked: bool = False

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> PlanRequest:
        d = json.loads(text)
        d["snapshot"] = SnapshotInfo(**d["snapshot"])
        if d.get("source_snapshot"):
            d["source_snapshot"] = SnapshotInfo(**d["source_snapshot"])
        d["namesrv"] = tuple(d.get("namesrv") or ())
        d["file_rows"] = tuple(FileOffset(**r) for r in d.get("file_rows") or ())
        return cls(**d)


@dataclass(frozen=True, slots=True)
class ImpactRequest:
    plan_uri: str  # the plan directory
    history_uris: tuple[str, ...]  # snapshot files, any order, the plan's own snapshot included
    out_uri: str | None = None  # where impact.json goes; None: only returned

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ImpactRequest:
        d = json.loads(text)
        d["history_uris"] = tuple(d["history_uris"])
        return cls(**d)
