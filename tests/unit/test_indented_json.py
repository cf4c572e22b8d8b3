"""`indented` (console/cli/indented_json.py) writes what `json.dumps(value, indent=2)` writes."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from console.cli.indented_json import indented

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=6) | st.integers(), inner, max_size=4)
    ),
    max_leaves=30,
)


@given(values)
def test_the_same_text_as_the_standard_library(value: Any) -> None:
    assert indented(value) == json.dumps(value, indent=2)


def test_a_listing_of_rows() -> None:
    rows = {
        "partial": True,
        "missing": [{"part": "broker", "name": "broker-b", "why": "timeout"}],
        "groups": [
            {"group": "g1", "total_lag": 12, "from_slave": [], "missing": []},
            {"group": "g2", "total_lag": None, "from_slave": ["broker-a"], "missing": [{}]},
        ],
    }
    assert indented(rows) == json.dumps(rows, indent=2)
    assert indented(rows).splitlines()[11] == '      "group": "g1",'
