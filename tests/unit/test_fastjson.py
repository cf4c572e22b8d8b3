"""The tolerant fastjson parser, on bodies shaped like the ones brokers send."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.rocketmq import fastjson
from console.rocketmq.errors import ProtocolError

CLUSTER_INFO = (
    b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},'
    b'"brokerName":"broker-a","cluster":"C","enableActingMaster":false}},'
    b'"clusterAddrTable":{"C":["broker-a"]}}'
)
CONSUME_STATS = (
    b'{"consumeTps":1.5,"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:'
    b'{"brokerOffset":10,"consumerOffset":4,"lastTimestamp":0,"pullOffset":6},'
    b'{"brokerName":"broker-b","queueId":3,"topic":"T"}:{"brokerOffset":7,"consumerOffset":7,'
    b'"lastTimestamp":1700000000000,"pullOffset":7}}}'
)
PRETTY_OFFSETS = b"""{
\t"offsetTable":{
\t\t"TopicA@GroupX":{0:120,1:118
\t\t},
\t\t"%RETRY%GroupX@GroupX":{0:0}
\t}
}"""


def test_long_keys_become_ints() -> None:
    body = fastjson.loads(CLUSTER_INFO)
    assert body["brokerAddrTable"]["broker-a"]["brokerAddrs"] == {
        0: "127.0.0.1:10911",
        1: "127.0.0.1:10921",
    }
    assert body["brokerAddrTable"]["broker-a"]["enableActingMaster"] is False


def test_object_keys_become_hashable_field_tuples() -> None:
    table = fastjson.loads(CONSUME_STATS)["offsetTable"]
    keys = sorted(fastjson.object_key_fields(k)["queueId"] for k in table)
    assert keys == [0, 3]
    first = next(k for k in table if fastjson.object_key_fields(k)["brokerName"] == "broker-a")
    assert fastjson.object_key_fields(first) == {
        "brokerName": "broker-a",
        "queueId": 0,
        "topic": "T",
    }
    assert table[first]["pullOffset"] == 6


def test_pretty_printed_integer_keys() -> None:
    table = fastjson.loads(PRETTY_OFFSETS)["offsetTable"]
    assert table["TopicA@GroupX"] == {0: 120, 1: 118}
    assert table["%RETRY%GroupX@GroupX"] == {0: 0}


def test_floats_negatives_unicode_and_escapes() -> None:
    value = fastjson.loads(b'{-1:{"a":-2.5e3,"s":"\\u00e9\\n\\"q\\""},2:[true,null]}')
    assert value == {-1: {"a": -2500.0, "s": 'é\n"q"'}, 2: [True, None]}


def test_standard_json_takes_the_fast_path_and_agrees() -> None:
    doc = {"topicList": ["a", "b"], "n": {"x": [1, 2.5, None]}}
    assert fastjson.loads(json.dumps(doc).encode()) == doc


@pytest.mark.parametrize(
    "bad",
    [
        b"",
        b"{",
        b'{"a":1',
        b"{0:}",
        b"{0 1}",
        b'{"a":1}}',
        b"[1,2",
        b'{{"a":1}:2',
        b"nul",
        b'"unterminated',
        b"\xff\xfe",
        b"{" * 100 + b"}" * 100,
        b"{0:1,}",
    ],
)
def test_garbage_is_a_protocol_error(bad: bytes) -> None:
    with pytest.raises(ProtocolError):
        fastjson.loads(bad)


def _fastjson_dump(value: object) -> str:
    """Write a value the way fastjson's MapSerializer does: non-string keys unquoted."""
    if isinstance(value, dict):
        parts = []
        for k, v in value.items():
            key = json.dumps(k) if isinstance(k, str) else _fastjson_dump(k)
            parts.append(f"{key}:{_fastjson_dump(v)}")
        return "{" + ",".join(parts) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_fastjson_dump(v) for v in value) + "]"
    return json.dumps(value)


scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.text(max_size=8))
keys = st.one_of(st.text(max_size=6), st.integers(-(10**6), 10**6))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
    max_leaves=20,
)


@given(st.dictionaries(keys, values, max_size=5))
def test_round_trips_what_fastjson_writes(doc: dict[object, object]) -> None:
    assert fastjson.loads(_fastjson_dump(doc).encode()) == doc


@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_crash(data: bytes) -> None:
    try:
        fastjson.loads(data)
    except ProtocolError:
        pass


@given(st.text(alphabet='{}[]:,"0123456789-.eEtrufalsn \\', max_size=60))
def test_json_shaped_noise_parses_or_fails_cleanly(text: str) -> None:
    try:
        fastjson.loads(text)
    except ProtocolError:
        pass
