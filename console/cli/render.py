"""Plain-text tables and JSON for the non-interactive commands."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

from console.cli.indented_json import indented
from console.domain.gaps import Gap, distinct


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], out: TextIO | None = None) -> None:
    # The stream is looked up at each call: whoever redirected stdout since import gets it.
    out = sys.stdout if out is None else out
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    numeric = [
        all(_is_number(row[i]) for row in rows if row[i] is not None) and bool(rows)
        for i in range(len(headers))
    ]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    out.write(line(list(headers)) + "\n")
    for row in cells:
        out.write(line(row) + "\n")


def dump_json(value: Any, out: TextIO | None = None) -> None:
    out = sys.stdout if out is None else out
    # One write: json.dump writes every token on its own, which costs seconds on 2,000 rows.
    out.write(indented(value) + "\n")


def timestamp(ms: int) -> str | None:
    """Epoch ms as ISO 8601 UTC; None for 0 (the broker's "unknown")."""
    if ms <= 0:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


#: Lines on stderr about missing pieces before the rest is summed up in one.
MISSING_LINES = 20


def missing(gaps: Iterable[Gap]) -> list[dict[str, str]]:
    """`missing: [...]` of a JSON answer: each missing piece once."""
    return [g.to_dict() for g in distinct(gaps)]


def report_missing(gaps: Iterable[Gap], *, what: str = "", err: TextIO | None = None) -> None:
    """One line on stderr per missing piece (each once, however many reads lacked it: the
    count follows when more than one did), e.g.
    `rmq-console: broker broker-a authentication refused: broker-a refused the signature for
    access key AK: check the secret (the server said: check signature failed.)`."""
    err = sys.stderr if err is None else err
    all_gaps = list(gaps)
    counts = Counter((g.part, g.name, g.why) for g in all_gaps)
    unique = distinct(all_gaps)
    for g in unique[:MISSING_LINES]:
        n = counts[(g.part, g.name, g.why)]
        times = f" (in {n} {what})" if what and n > 1 else ""
        print(f"rmq-console: {g.part} {g.name} {g.why}: {g.detail}{times}", file=err)
    if len(unique) > MISSING_LINES:
        rest = len(unique) - MISSING_LINES
        print(f"rmq-console: and {rest} more missing pieces (--json lists them)", file=err)
