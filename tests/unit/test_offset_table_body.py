"""GET_ALL_CONSUMER_OFFSET bodies read where they stand (console/rocketmq/offset_table_body.py):
the table the general fastjson parser makes, or None for a body of another shape."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.rocketmq import fastjson, offset_table_body
from console.rocketmq.frame import Command

names = st.text(alphabet="abcXYZ019_-%|.", min_size=1, max_size=12)
tables = st.dictionaries(
    st.tuples(names, names),
    st.dictionaries(st.integers(0, 1023), st.integers(-1, 2**40), max_size=8),
    max_size=12,
)


def broker_body(table: dict[tuple[str, str], dict[int, int]], *, before: str = "") -> bytes:
    """As a broker writes it: queue ids as bare integer keys, `before` the fields ahead."""
    entries = [
        f"{json.dumps(f'{t}@{g}')}:{{{','.join(f'{q}:{o}' for q, o in queues.items())}}}"
        for (t, g), queues in table.items()
    ]
    return f'{{{before}"offsetTable":{{{",".join(entries)}}}}}'.encode()


def general(body: bytes) -> object:
    return offset_table_body.general(fastjson.loads(body))


@given(tables, st.sampled_from(["", '"dataVersion":{"counter":3,"timestamp":1},']))
def test_the_usual_shape_reads_as_the_general_parser_reads_it(
    table: dict[tuple[str, str], dict[int, int]], before: str
) -> None:
    body = broker_body(table, before=before)
    assert offset_table_body.parse(body) == general(body) == table
    assert offset_table_body.read(Command(code=0, body=body)) == table


USUAL = broker_body({("T", "g1"): {0: 12, 1: 9}, ("%RETRY%g1", "g1"): {0: 0}})


def test_a_table_followed_by_another_field() -> None:
    body = USUAL[:-1] + b',"groupTopicMap":{"g1":["T"]}}'
    assert offset_table_body.parse(body) == {
        ("T", "g1"): {0: 12, 1: 9},
        ("%RETRY%g1", "g1"): {0: 0},
    }


@pytest.mark.parametrize(
    "other",
    [
        USUAL.replace(b'"T@g1"', b'"T\\u0040g1"'),  # an escape in a name
        USUAL.replace(b"0:12", b"0:12.5"),  # an offset that is not an integer
        USUAL.replace(b"0:12", b'0:"12"'),
        USUAL.replace(b'"offsetTable"', b'"offsetTable":{},"offsetTable"'),  # named twice
        USUAL.replace(b'"%RETRY%g1@g1"', b'"T@g1"'),  # a key twice
        USUAL + b"x",  # trailing text
        b'{"offsetTable":{,}}',
        b'{"other":1}',
    ],
)
def test_another_shape_is_left_to_the_general_parser(other: bytes) -> None:
    assert offset_table_body.parse(other) is None
