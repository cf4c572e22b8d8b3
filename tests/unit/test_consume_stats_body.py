"""GET_CONSUME_STATS bodies read where they stand (console/rocketmq/consume_stats_body.py): the
same consume stats the general fastjson parser makes, or None for a body of another shape."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.rocketmq import consume_stats_body, fastjson
from console.rocketmq.frame import Command

names = st.text(alphabet="abcXYZ019_-%|.", min_size=1, max_size=12)
offsets = st.integers(0, 2**40)
queue_fields = st.fixed_dictionaries(
    {"brokerOffset": offsets, "consumerOffset": offsets, "lastTimestamp": st.integers(0, 2**42)},
    optional={"pullOffset": offsets},  # a 4.x broker writes none
)


def fastjson_body(tps: float, queues: dict[tuple[str, int, str], dict[str, int]]) -> bytes:
    """As a broker writes it: MessageQueue keys as objects, fields in name order."""
    entries = [
        f'{{"brokerName":{json.dumps(b)},"queueId":{q},"topic":{json.dumps(t)}}}:'
        + json.dumps(dict(sorted(fields.items())), separators=(",", ":"))
        for (b, q, t), fields in queues.items()
    ]
    return f'{{"consumeTps":{json.dumps(tps)},"offsetTable":{{{",".join(entries)}}}}}'.encode()


def general(body: bytes) -> object:
    return consume_stats_body.general(fastjson.loads(body))


@given(
    st.floats(0, 1e6, allow_nan=False),
    st.dictionaries(st.tuples(names, st.integers(0, 1023), names), queue_fields, max_size=16),
)
def test_the_usual_shape_reads_as_the_general_parser_reads_it(
    tps: float, queues: dict[tuple[str, int, str], dict[str, int]]
) -> None:
    body = fastjson_body(tps, queues)
    assert consume_stats_body.parse(body) == general(body)
    assert consume_stats_body.read(Command(code=0, body=body)) == general(body)


USUAL = fastjson_body(
    1.5,
    {
        ("broker-b", 3, "T"): {"brokerOffset": 7, "consumerOffset": 7, "lastTimestamp": 1},
        ("broker-a", 0, "T"): {"brokerOffset": 10, "consumerOffset": 4, "lastTimestamp": 0},
    },
)


def test_a_real_looking_body_is_read_in_queue_order() -> None:
    stats = consume_stats_body.parse(USUAL)
    assert stats is not None
    assert [(q.broker_name, q.queue_id) for q in stats.queues] == [("broker-a", 0), ("broker-b", 3)]
    assert stats.consume_tps == 1.5
    assert stats.queues[next(iter(stats.queues))].pull_offset is None


@pytest.mark.parametrize(
    "other",
    [
        # a field this reader does not know, at either level
        USUAL.replace(b'"offsetTable"', b'"inflight":3,"offsetTable"'),
        USUAL.replace(b'"lastTimestamp":0', b'"lastTimestamp":0,"popInflight":2'),
        # a name with an escape, an offset that is not an integer, a string where a number is
        USUAL.replace(b'"topic":"T"', b'"topic":"T\\u0041"', 1),
        USUAL.replace(b'"brokerOffset":10', b'"brokerOffset":10.5'),
        USUAL.replace(b'"brokerOffset":10', b'"brokerOffset":"10"'),
        # two entries without their comma, or with a space after it
        USUAL.replace(b'},{"brokerName"', b'}{"brokerName"'),
        USUAL.replace(b'},{"brokerName"', b'}, {"brokerName"'),
        USUAL[:-2] + b",}}",  # a comma after the last
        # a queue twice, trailing text, an empty table's trailing comma
        USUAL.replace(b"broker-b", b"broker-a").replace(b'"queueId":3', b'"queueId":0'),
        USUAL + b" ",
        b'{"consumeTps":0.0,"offsetTable":{,}}',
    ],
)
def test_another_shape_is_left_to_the_general_parser(other: bytes) -> None:
    assert consume_stats_body.parse(other) is None


def test_the_general_parser_reads_what_this_one_leaves() -> None:
    other = USUAL.replace(b'"offsetTable"', b'"inflight":3,"offsetTable"')
    assert consume_stats_body.read(Command(code=0, body=other)) == consume_stats_body.parse(USUAL)


def test_an_empty_table() -> None:
    stats = consume_stats_body.parse(b'{"consumeTps":0.0,"offsetTable":{}}')
    assert stats is not None
    assert stats.queues == {}
