"""The command-line tables and JSON: aligned columns, unknown shown as `-`, and output on
whatever stdout is at the time of the call (a caller redirecting stdout after import gets it)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

from console.cli.render import dump_json, table


def test_table_aligns_numbers_right_and_text_left() -> None:
    out = io.StringIO()
    table(["GROUP", "LAG"], [["billing", 7], ["ops", 1200], ["idle", None]], out)
    assert out.getvalue().splitlines() == [
        "GROUP     LAG",
        "billing     7",
        "ops      1200",
        "idle        -",  # unknown is shown as unknown, never as blank or 0
    ]


def test_output_follows_stdout_redirected_after_import() -> None:
    captured = io.StringIO()
    with redirect_stdout(captured):
        table(["A"], [["x"]])
        dump_json({"lag": None})
    lines = captured.getvalue().splitlines()
    assert lines[:2] == ["A", "x"]
    assert json.loads("\n".join(lines[2:])) == {"lag": None}
