"""The workspace: where snapshots and plans live, a local directory or any URI pyarrow opens
(file://, hdfs://, s3://, s3a://, gs://), laid out as

    snapshots/<cluster>/<taken-at>.parquet        one file per snapshot, all groups in it
    plans/<plan-id>/plan.json                     the header; present only when the plan is whole
    plans/<plan-id>/rows.parquet                  the rows (a Spark output directory)
    plans/<plan-id>/impact.json                   catch-up estimates, when computed
    logs/spark-host.log                           the Spark host's output (local workspaces)
    lag/<cluster>/<group>.jsonl                   the lag history (services/lag_history.py)
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from console.domain.plan import PlanHeader, SnapshotInfo, parse_stamp
from console.errors import BadInput
from console.locations import log_dir
from console.services.infra import files

SNAPSHOTS = "snapshots"
PLANS = "plans"
PLAN_JSON = "plan.json"
ROWS = "rows.parquet"
IMPACT_JSON = "impact.json"
_UNSAFE = re.compile(r"[/\\]|^\.|^$")


@dataclass(frozen=True, slots=True)
class SnapshotRef:
    cluster: str
    snapshot_id: str  # the taken-at stamp, e.g. 20261122T030101123Z
    taken_at_ms: int
    uri: str

    def info(self) -> SnapshotInfo:
        return SnapshotInfo(self.cluster, self.snapshot_id, self.taken_at_ms)


class Workspace:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.uri = files.to_uri(root)

    def __repr__(self) -> str:
        return f"Workspace({self.uri!r})"

    @property
    def local_root(self) -> Path | None:
        """The directory, when the workspace is on this machine."""
        parsed = urlparse(self.uri)
        return Path(parsed.path) if parsed.scheme == "file" else None

    # ---- snapshots -----------------------------------------------------------------------

    def clusters(self) -> list[str]:
        return files.listdir(files.join(self.uri, SNAPSHOTS))

    def snapshot_uri(self, cluster: str, snapshot_id: str) -> str:
        return files.join(self.uri, SNAPSHOTS, _safe(cluster, "cluster"), f"{snapshot_id}.parquet")

    def snapshots(self, cluster: str) -> list[SnapshotRef]:
        """Snapshots of a cluster, oldest first; other files in the directory are ignored."""
        base = files.join(self.uri, SNAPSHOTS, _safe(cluster, "cluster"))
        refs = []
        for name in files.listdir(base):
            sid = name.removesuffix(".parquet")
            taken = parse_stamp(sid)
            if name.endswith(".parquet") and taken is not None:
                refs.append(SnapshotRef(cluster, sid, taken, files.join(base, name)))
        return sorted(refs, key=lambda r: r.taken_at_ms)

    # ---- plans ---------------------------------------------------------------------------

    def plan_uri(self, plan_id: str) -> str:
        return files.join(self.uri, PLANS, _safe(plan_id, "plan id"))

    def plans(self) -> list[str]:
        """Ids of complete plans (a plan.json present), oldest first (ids start with a stamp)."""
        base = files.join(self.uri, PLANS)
        return [p for p in files.listdir(base) if files.exists(files.join(base, p, PLAN_JSON))]

    def read_header(self, plan_uri: str) -> PlanHeader:
        uri = files.join(plan_uri, PLAN_JSON)
        return PlanHeader.from_json(files.read_text(uri), uri)

    # ---- logs ----------------------------------------------------------------------------

    def log_path(self, name: str = "spark-host.log") -> Path:
        """A helper process's log: under logs/ here when the workspace is on this machine, else
        in the cache directory (a process cannot append to a remote file)."""
        return log_dir(self.local_root) / name


def _safe(name: str, what: str) -> str:
    if _UNSAFE.search(name):
        raise BadInput(f"{what} {name!r} cannot be used as a file name")
    return name
