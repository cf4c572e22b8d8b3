"""A CSV of offsets, the from-file strategy's rows: a header naming topic, broker, queue_id and
offset (or target), optionally group; every error names the file and line (a `SpecError`)."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from console.domain.spec import MAX_OFFSET, FileOffset, SpecError, int_value

_COLUMN_ALIASES = {
    "topic": "topic",
    "broker": "broker",
    "broker_name": "broker",
    "brokername": "broker",
    "queue_id": "queue_id",
    "queueid": "queue_id",
    "queue": "queue_id",
    "offset": "offset",
    "target": "offset",
    "group": "group",
}
OFFSETS_COLUMNS = ("topic", "broker", "queue_id", "offset")


def parse_offsets_csv(
    text: str, name: str, *, skip_blank_offsets: bool = False
) -> tuple[FileOffset, ...]:
    """CSV with a header naming topic, broker, queue_id and offset (or target), optionally group.

    Extra columns are ignored, so an exported plan reads back as an offsets file; its rows with
    no target (queues the plan leaves alone) are skipped when `skip_blank_offsets`.
    """
    reader = csv.reader(io.StringIO(text))
    try:
        return _offsets_csv(reader, name, skip_blank_offsets)
    except csv.Error as exc:
        raise SpecError(f"{name}:{max(reader.line_num, 1)}", f"not CSV: {exc}") from None


def _offsets_csv(reader: Any, name: str, skip_blank_offsets: bool) -> tuple[FileOffset, ...]:
    header = next(reader, None)
    if not header or not any(h.strip() for h in header):
        raise SpecError(f"{name}:1", "empty file; expected a header: " + ",".join(OFFSETS_COLUMNS))
    index: dict[str, int] = {}
    for i, raw in enumerate(header):
        key = _COLUMN_ALIASES.get(re.sub(r"[\s-]+", "_", raw.strip().lower()))
        if key is not None and key not in index:
            index[key] = i
    missing = [c for c in OFFSETS_COLUMNS if c not in index]
    if missing:
        raise SpecError(
            f"{name}:1",
            f"missing column(s) {', '.join(missing)} (header has: {', '.join(header)})",
        )
    rows: list[FileOffset] = []
    seen: dict[tuple[str | None, str, str, int], int] = {}
    for line_no, record in enumerate(reader, start=2):
        if not record or all(not c.strip() for c in record):
            continue
        if skip_blank_offsets and not _cell(record, index["offset"]):
            continue
        rows.append(_offset_row(record, index, f"{name}:{line_no}", line_no))
        row = rows[-1]
        queue = (row.group, row.topic, row.broker, row.queue_id)
        if queue in seen:
            raise SpecError(
                f"{name}:{line_no}", f"queue listed twice (first on line {seen[queue]})"
            )
        seen[queue] = line_no
    if not rows:
        raise SpecError(f"{name}:2", "no offsets after the header")
    return tuple(rows)


def _offset_row(record: list[str], index: dict[str, int], where: str, line: int) -> FileOffset:
    def cell(col: str) -> str:
        value = _cell(record, index[col])
        if not value:
            raise SpecError(where, f"{col} is empty")
        return value

    group = None
    if "group" in index:
        group = cell("group")

    def number(col: str, maximum: int | None) -> int:
        try:
            return int_value(cell(col), where, minimum=0, maximum=maximum, bare=True)
        except SpecError as exc:
            raise SpecError(where, f"{col}: {exc.problem}") from None

    return FileOffset(
        line=line,
        topic=cell("topic"),
        broker=cell("broker"),
        queue_id=number("queue_id", None),
        offset=number("offset", MAX_OFFSET),
        group=group,
    )


def _cell(record: list[str], i: int) -> str:
    return record[i].strip() if i < len(record) else ""
