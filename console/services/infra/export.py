"""A table as CSV: a header line, then one line per row, unknown values as empty cells.

Values keep their raw form (full offsets, epoch milliseconds), not the abbreviations the
console shows, so a saved table can be loaded into anything.
"""

from __future__ import annotations

import csv
import io
import os
import re
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path


def cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def to_csv(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(headers)
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"row has {len(row)} values for {len(headers)} columns")
        writer.writerow([cell(v) for v in row])
    return out.getvalue()


def write_csv(path: Path, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> int:
    """Write the table to `path` in one step (a reader never sees half a file); the row count."""
    text = to_csv(headers, rows)
    path = path.expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return len(rows)


def default_name(view: str, now_s: float) -> str:
    """`<view>-<UTC yyyymmdd-hhmmss>.csv`, the view name reduced to file-name-safe characters."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", view).strip("-") or "table"
    return f"{slug}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime(now_s))}.csv"
