"""Plans as CSV: the rows written out for a ticket or an edit, and a CSV (exported, maybe
edited) read back as the spec of a new plan over the same queues."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING

from console.domain.offsets_csv import parse_offsets_csv
from console.domain.plan import PLAN_COLUMNS
from console.domain.spec import FromFile, ResetSpec, Scope, SpecError
from console.errors import BadFile, read_text

if TYPE_CHECKING:
    import pyarrow as pa


def export_csv(table: pa.Table, dest: Path) -> Path:
    """A plan's rows as CSV (warnings joined with ';', unknown values empty); imports back."""
    names = [name for name, _ in PLAN_COLUMNS]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(names)
    for row in table.select(names).to_pylist():
        writer.writerow(
            [
                ";".join(v) if isinstance(v, list) else ("" if v is None else v)
                for v in (row[n] for n in names)
            ]
        )
    dest.write_text(out.getvalue(), encoding="utf-8")
    return dest


def import_spec(path: Path, cluster: str | None = None) -> ResetSpec:
    """The spec a plan CSV asks for: its rows as a from-file strategy over its groups, on the
    cluster its `cluster` column names (else `cluster`)."""
    text = _read_plan_csv(path)
    rows = parse_offsets_csv(text, str(path), skip_blank_offsets=True)
    if any(r.group is None for r in rows):
        raise SpecError(f"{path}:1", "missing column group (a plan names each row's group)")
    cluster = _csv_cluster(text, str(path)) or cluster
    if cluster is None:
        raise SpecError(f"{path}:1", "missing column cluster")
    groups = tuple(sorted({r.group for r in rows if r.group is not None}))
    return ResetSpec(
        Scope(cluster=cluster, groups=groups, include_retry=True), FromFile(str(path), rows)
    )


def csv_cluster(path: Path) -> str | None:
    """The cluster a plan CSV names in its `cluster` column (None when it names none); raises
    SpecError when it names several or cannot be read."""
    return _csv_cluster(_read_plan_csv(path), str(path))


def _read_plan_csv(path: Path) -> str:
    try:
        return read_text(path, encoding="utf-8-sig")
    except BadFile as exc:
        where = exc.path if exc.line is None else f"{exc.path}:{exc.line}"
        raise SpecError(where, f"cannot read the plan: {exc.problem}") from None


def _csv_cluster(text: str, name: str) -> str | None:
    reader = csv.DictReader(io.StringIO(text))
    try:
        clusters = {(str(row.get("cluster") or "")).strip() for row in reader} - {""}
    except csv.Error as exc:
        raise SpecError(f"{name}:{reader.line_num}", f"not CSV: {exc}") from None
    if len(clusters) > 1:
        raise SpecError(f"{name}:1", f"rows of several clusters: {', '.join(sorted(clusters))}")
    return next(iter(clusters), None)
