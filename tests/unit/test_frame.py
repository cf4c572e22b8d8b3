"""The remoting frame codec: both header serializations, and bad frames."""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.rocketmq import frame
from console.rocketmq.errors import ProtocolError
from console.rocketmq.frame import Command


def _split(raw: bytes) -> tuple[int, bytes]:
    return frame.frame_length(raw[:4]), raw[4:]


def test_json_request_layout_matches_the_wire_format() -> None:
    raw = frame.encode(Command(code=105, opaque=7, ext_fields={"topic": "T1"}))
    length, rest = _split(raw)
    assert length == len(rest)
    (meta,) = struct.unpack(">i", rest[:4])
    assert meta >> 24 == frame.SERIALIZE_JSON
    header = json.loads(rest[4 : 4 + (meta & 0xFFFFFF)])
    assert header == {
        "code": 105,
        "language": "PYTHON",
        "version": 479,
        "opaque": 7,
        "flag": 0,
        "extFields": {"topic": "T1"},
    }


def test_java_style_json_response_decodes() -> None:
    header = (
        b'{"code":17,"extFields":{"offset":"12"},"flag":1,"language":"JAVA","opaque":9,'
        b'"remark":"topic[T] not exist","serializeTypeCurrentRPC":"JSON","version":479}'
    )
    body = b"payload"
    raw = struct.pack(">ii", 4 + len(header) + len(body), len(header)) + header + body
    cmd = frame.decode(raw[4:])
    assert (cmd.code, cmd.opaque, cmd.flag, cmd.version) == (17, 9, 1, 479)
    assert cmd.remark == "topic[T] not exist"
    assert cmd.ext_fields == {"offset": "12"}
    assert cmd.body == b"payload"
    assert cmd.is_response
    assert not cmd.is_oneway


def test_binary_header_hand_built_bytes() -> None:
    # code 0, language JAVA(0), version 409, opaque 5, flag 1, remark "ok", ext {offset: 42}
    ext = struct.pack(">h", 6) + b"offset" + struct.pack(">i", 2) + b"42"
    header = (
        struct.pack(">hbhii", 0, 0, 409, 5, 1)
        + struct.pack(">i", 2)
        + b"ok"
        + struct.pack(">i", len(ext))
        + ext
    )
    raw = struct.pack(">ii", 4 + len(header) + 3, (1 << 24) | len(header)) + header + b"xyz"
    cmd = frame.decode(raw[4:])
    assert (cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag) == (0, "JAVA", 409, 5, 1)
    assert cmd.remark == "ok"
    assert cmd.ext_fields == {"offset": "42"}
    assert cmd.body == b"xyz"


def test_binary_empty_strings_decode_as_null() -> None:
    raw = frame.encode_binary_header(Command(code=1, remark=None, flag=1))
    cmd = frame.decode(raw[4:])
    assert cmd.remark is None
    assert cmd.ext_fields == {}


@pytest.mark.parametrize(
    "prefix", [struct.pack(">i", 3), struct.pack(">i", -1), struct.pack(">i", 16 * 1024 * 1024 + 1)]
)
def test_bad_length_prefix(prefix: bytes) -> None:
    with pytest.raises(ProtocolError):
        frame.frame_length(prefix)


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"\x00\x00",
        struct.pack(">i", 100) + b"{}",  # header longer than the frame
        struct.pack(">i", (7 << 24) | 2) + b"{}",  # unknown serialize type
        struct.pack(">i", 5) + b"{nope",  # JSON header that is not JSON
        struct.pack(">i", 2) + b"[]",  # JSON header that is not an object
        struct.pack(">i", 11) + b'{"code":"x"}'[:11],
        struct.pack(">i", (1 << 24) | 4) + b"\x00\x01\x02\x03",  # truncated binary header
    ],
)
def test_garbage_frames_are_protocol_errors(payload: bytes) -> None:
    with pytest.raises(ProtocolError):
        frame.decode(payload)


def test_oversized_request_is_refused() -> None:
    with pytest.raises(ProtocolError):
        frame.encode(Command(code=10, body=b"x" * (16 * 1024 * 1024)))


commands = st.builds(
    Command,
    code=st.integers(-(2**15), 2**15 - 1),
    opaque=st.integers(0, 2**31 - 1),
    flag=st.integers(0, 3),
    remark=st.one_of(st.none(), st.text(min_size=1, max_size=30)),
    ext_fields=st.dictionaries(
        st.text(min_size=1, max_size=10), st.text(min_size=1, max_size=20), max_size=6
    ),
    body=st.binary(max_size=300),
    version=st.integers(0, 2**15 - 1),
)


@given(commands)
def test_json_round_trip(cmd: Command) -> None:
    raw = frame.encode(cmd)
    assert frame.frame_length(raw[:4]) == len(raw) - 4
    assert frame.decode(raw[4:]) == cmd


@given(commands)
def test_binary_round_trip(cmd: Command) -> None:
    raw = frame.encode_binary_header(cmd)
    assert frame.decode(raw[4:]) == cmd


@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_crash_the_decoder(data: bytes) -> None:
    try:
        frame.decode(data)
    except ProtocolError:
        pass


@given(commands, st.integers(min_value=1, max_value=40))
def test_truncated_frames_fail_cleanly(cmd: Command, cut: int) -> None:
    raw = frame.encode_binary_header(cmd)[4:]
    truncated = raw[: max(0, len(raw) - cut)]
    try:
        decoded = frame.decode(truncated)
    except ProtocolError:
        return
    # Cutting only body bytes leaves a valid header: the body is then shorter, never garbage.
    assert decoded.code == cmd.code
    assert len(decoded.body) < len(cmd.body) + 1
