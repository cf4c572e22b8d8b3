"""The tolerant fastjson parser, on bodies shaped like the ones brokers send."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
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


names = st.text(alphabet="abcXYZ019_-%|", min_size=1, max_size=12)
queue_stats = st.fixed_dictionaries(
    {
        "brokerOffset": st.integers(0, 2**40),
        "consumerOffset": st.integers(-1, 2**40),
        "lastTimestamp": st.integers(0, 2**42),
        "pullOffset": st.integers(0, 2**40),
    }
)


@given(
    st.dictionaries(
        st.tuples(names, st.integers(0, 1023), names), queue_stats, min_size=1, max_size=12
    ),
    st.floats(0, 1e6, allow_nan=False),
)
def test_consume_stats_read_as_standard_json_agree_with_the_tolerant_parser(
    queues: dict[tuple[str, int, str], dict[str, int]], tps: float
) -> None:
    """The queue keys rewritten for the C parser give what walking the body gives."""
    table = {
        (("brokerName", b), ("queueId", q), ("topic", t)): stats
        for (b, q, t), stats in queues.items()
    }
    body = _fastjson_dump({"consumeTps": tps, "offsetTable": table})
    walked = fastjson._Parser(body).document()
    assert fastjson.loads(body.encode()) == walked
    assert walked["offsetTable"] == {
        tuple(sorted(k)): v for k, v in table.items()
    }  # the walk itself reads the keys as ObjectKeys


def _mq(broker: str, queue_id: int, topic: str) -> str:
    return f'{{"brokerName":"{broker}","queueId":{queue_id},"topic":"{topic}"}}'


def test_a_string_key_like_the_mark_is_a_string_key() -> None:
    body = '{"\\u0000mq\\u0000b\\u00000\\u0000T":1,"t":{' + _mq("b", 0, "T") + ":2}}"
    value = fastjson.loads(body)
    assert value["\x00mq\x00b\x000\x00T"] == 1
    assert value["t"] == {(("brokerName", "b"), ("queueId", 0), ("topic", "T")): 2}


def test_queue_keys_beside_other_unquoted_keys_are_walked() -> None:
    body = '{"a":{' + _mq("b", 1, "T") + ':{"x":1}},"ids":{0:"zero"}}'
    assert fastjson.loads(body) == {
        "a": {(("brokerName", "b"), ("queueId", 1), ("topic", "T")): {"x": 1}},
        "ids": {0: "zero"},
    }


@pytest.mark.parametrize(
    "bad",
    [
        '{"a":{' + _mq("b", 1, "T") + ":}}",  # a key with no value
        '{"a":{{"brokerName":"b","queueId":007,"topic":"T"}:1}}',  # not a number JSON has
    ],
)
def test_bad_bodies_with_queue_keys_are_protocol_errors(bad: str) -> None:
    with pytest.raises(ProtocolError):
        fastjson.loads(bad)


def test_a_consume_stats_body_goes_to_the_c_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    def walked(text: str) -> None:
        raise AssertionError("walked by the tolerant parser")

    monkeypatch.setattr(fastjson, "_Parser", walked)
    table = fastjson.loads(CONSUME_STATS)["offsetTable"]
    assert {fastjson.object_key_fields(k)["queueId"] for k in table} == {0, 3}


def _walked(text: str) -> object:
    """What the tolerant parser alone makes of `text` (ProtocolError if nothing)."""
    return fastjson._Parser(text).document()


@settings(max_examples=500)
@given(st.text(alphabet='{}[]:,"0123456789-.eEtrufalsn \\', max_size=60))
def test_the_c_parser_paths_agree_with_the_walk_on_noise(text: str) -> None:
    """Rewritten for the C parser or walked, a document means the same, or nothing."""
    try:
        walked = _walked(text)
    except ProtocolError:
        with pytest.raises(ProtocolError):
            fastjson.loads(text)
        return
    assert fastjson.loads(text) == walked


@given(st.dictionaries(keys, values, max_size=5))
def test_integer_keys_read_by_the_c_parser_agree_with_the_walk(doc: dict[object, object]) -> None:
    text = _fastjson_dump(doc)
    assert fastjson.loads(text) == _walked(text) == doc


def test_an_offset_table_goes_to_the_c_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    def walked(text: str) -> None:
        raise AssertionError("walked by the tolerant parser")

    monkeypatch.setattr(fastjson, "_Parser", walked)
    table = fastjson.loads(PRETTY_OFFSETS)["offsetTable"]
    assert table == {"TopicA@GroupX": {0: 120, 1: 118}, "%RETRY%GroupX@GroupX": {0: 0}}
    assert fastjson.loads(b'{"s":"a,0:b","t":{0:"x,1:y"}}') == {"s": "a,0:b", "t": {0: "x,1:y"}}
