"""The message record codec: hand-built records (IPv4 and IPv6 hosts, V1 and V2 magic,
compressed bodies) decode to what was put in, and bytes that are not records raise
MessageDecodeError, never an IndexError or a struct error."""

from __future__ import annotations

import zlib

import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from console.domain.boundary_messages import MessageView, body_head, local_time
from console.rocketmq import message
from console.rocketmq.errors import ProtocolError
from console.rocketmq.message import (
    MAGIC_V1,
    MAGIC_V2,
    MessageDecodeError,
    decode_message,
    decode_messages,
)

from .records import Record, offset_msg_id

ZLIB = 0x1 | (0x3 << 8)
ZLIB_UNTYPED = 0x1  # before the codec bits existed
ZSTD = 0x1 | (0x2 << 8)
LZ4 = 0x1 | (0x1 << 8)


def test_an_ipv4_record_decodes_field_for_field() -> None:
    r = Record()
    m = decode_message(r.encode())
    assert (m.topic, m.queue_id, m.queue_offset, m.commit_log_offset) == ("orders", 3, 42, 0xAECF)
    assert (m.born_timestamp, m.store_timestamp) == (r.born_timestamp, r.store_timestamp)
    assert (m.born_host, m.store_host) == ("10.0.0.7:59642", "127.0.0.1:24806")
    assert m.body == b'{"order": 1}'
    assert m.stored_body_size == len(m.body)
    assert (m.tags, m.keys, m.uniq_key) == ("paid", ("k1", "k2"), "AC11000100002A9F")
    assert m.store_size == len(r.encode())
    assert m.compression is None
    assert m.body_note is None
    # store host 127.0.0.1:24806 (7F000001 000060E6) + commit log offset 44751, as mqadmin
    # printed it for the sandbox's payments/broker-a/2 offset 5.
    assert m.offset_msg_id == "7F000001000060E6000000000000AECF"


def test_ipv6_hosts_widen_the_record_and_the_offset_id() -> None:
    r = Record(born_host=("fe80::1", 40000), store_host=("2001:db8::17", 10911))
    m = decode_message(r.encode())
    assert m.born_host == "[fe80::1]:40000"
    assert m.store_host == "[2001:db8::17]:10911"
    assert len(m.offset_msg_id) == 2 * (16 + 4 + 8)
    assert m.offset_msg_id == offset_msg_id(("2001:db8::17", 10911), 0xAECF)
    # Only the store host is IPv6 here: the born host stays four bytes.
    mixed = decode_message(Record(store_host=("::1", 1)).encode())
    assert (mixed.born_host, mixed.store_host) == ("10.0.0.7:59642", "[::1]:1")


def test_v2_magic_carries_a_two_byte_topic_length() -> None:
    long_topic = "t" * 200  # over 127: only V2 can carry it
    m = decode_message(Record(topic=long_topic, magic=MAGIC_V2).encode())
    assert m.topic == long_topic
    assert m.magic == MAGIC_V2


def test_records_back_to_back_decode_in_order() -> None:
    body = b"".join(Record(queue_offset=o).encode() for o in (7, 8, 9))
    assert [m.queue_offset for m in decode_messages(body)] == [7, 8, 9]
    assert decode_messages(b"") == []


def test_properties_keep_empty_values_and_skip_items_without_a_separator() -> None:
    r = Record(properties={"TAGS": "", "KEYS": "  a  b ", "X": "1\x01y"})
    m = decode_message(r.encode())
    assert m.tags == ""
    assert m.keys == ("a", "b")
    assert m.property_value("X") == "1\x01y"  # split at the first separator only
    raw = Record(properties={}).encode()
    # a properties string with a stray item: "junk\x02TAGS\x01t\x02"
    props = b"junk\x02TAGS\x01t\x02"
    patched = raw[:-2] + len(props).to_bytes(2, "big") + props
    patched = (len(patched)).to_bytes(4, "big") + patched[4:]
    assert decode_message(patched).properties == (("TAGS", "t"),)


@pytest.mark.parametrize("sys_flag", [ZLIB, ZLIB_UNTYPED])
def test_a_zlib_body_is_decompressed(sys_flag: int) -> None:
    plain = b"hello " * 200
    m = decode_message(Record(body=zlib.compress(plain), sys_flag=sys_flag).encode())
    assert m.body == plain
    assert m.compression == "zlib"
    assert m.body_note is None
    assert m.stored_body_size < len(plain)


def test_a_zstd_body_is_decompressed() -> None:
    plain = bytes(range(256)) * 10
    packed = zstandard.ZstdCompressor().compress(plain)
    m = decode_message(Record(body=packed, sys_flag=ZSTD).encode())
    assert m.body == plain
    assert m.compression == "zstd"


def test_an_lz4_frame_body_is_decompressed() -> None:
    plain = b'{"order": 7}' + bytes(range(256)) * 40
    m = decode_message(Record(body=lz4.frame.compress(plain), sys_flag=LZ4).encode())
    assert m.body == plain
    assert m.compression == "lz4"
    assert m.body_note is None


def test_an_unknown_codec_is_kept_as_stored_and_says_so() -> None:
    note = "compressed (type 5): not shown"
    m = decode_message(Record(body=b"\x04\x22\x4d\x18....", sys_flag=0x1 | (0x5 << 8)).encode())
    assert m.body_note == note
    assert m.body == b"\x04\x22\x4d\x18...."
    view = MessageView.of(m, "broker-a")
    assert view.body_head == note
    assert view.body_text == note
    assert not view.body_binary


def test_a_corrupt_or_huge_compressed_body_is_a_note_not_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    m = decode_message(Record(body=b"not zlib at all", sys_flag=ZLIB).encode())
    assert m.body_note is not None
    assert m.body_note.startswith("compressed (zlib): cannot be decompressed")
    cut = zlib.compress(b"x" * 1000)[:-6]
    assert "ends early" in (
        decode_message(Record(body=cut, sys_flag=ZLIB).encode()).body_note or ""
    )
    not_a_frame = decode_message(Record(body=b"not an lz4 frame", sys_flag=LZ4).encode())
    assert (not_a_frame.body_note or "").startswith("compressed (lz4): cannot be decompressed")
    cut_frame = lz4.frame.compress(b"x" * 100_000)[:-10]
    assert "ends early" in (
        decode_message(Record(body=cut_frame, sys_flag=LZ4).encode()).body_note or ""
    )
    monkeypatch.setattr(message, "MAX_DECOMPRESSED", 1000)
    for flag, packed in (
        (ZLIB, zlib.compress(b"\0" * 5000)),
        (ZSTD, zstandard.ZstdCompressor().compress(b"\0" * 5000)),
        (LZ4, lz4.frame.compress(b"\0" * 5000)),
    ):
        big = decode_message(Record(body=packed, sys_flag=flag).encode())
        assert big.body == packed
        assert big.body_note is not None
        assert "uncompressed, not shown" in big.body_note


def test_a_bad_magic_code_or_inconsistent_sizes_raise_the_typed_error() -> None:
    good = Record().encode()
    bad_magic = good[:4] + (123).to_bytes(4, "big", signed=True) + good[8:]
    with pytest.raises(MessageDecodeError, match="unknown magic code 123"):
        decode_messages(bad_magic)
    with pytest.raises(MessageDecodeError, match="does not fit"):
        decode_messages(good + good[:10])
    # A record that claims more bytes than its fields use.
    padded = (len(good) + 3).to_bytes(4, "big") + good[4:] + b"\0\0\0"
    with pytest.raises(MessageDecodeError, match="its fields end at byte"):
        decode_messages(padded)
    assert issubclass(MessageDecodeError, ProtocolError)  # a RocketMQError, crosses processes


def test_every_truncation_of_a_record_raises_the_typed_error() -> None:
    good = Record(body=b"abcdef" * 10).encode()
    for n in range(1, len(good)):
        with pytest.raises(MessageDecodeError):
            decode_messages(good[:n])


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=400))
def test_garbage_raises_the_typed_error_or_decodes(data: bytes) -> None:
    try:
        decode_messages(data)
    except MessageDecodeError:
        pass


@settings(max_examples=400, deadline=None)
@given(st.sampled_from([MAGIC_V1, MAGIC_V2]), st.binary(max_size=400))
def test_garbage_behind_a_plausible_header_raises_the_typed_error(magic: int, rest: bytes) -> None:
    """Past the size and magic checks: the fields' own lengths are what must not overrun."""
    data = (len(rest) + 8).to_bytes(4, "big") + magic.to_bytes(4, "big", signed=True) + rest
    try:
        decode_messages(data)
    except MessageDecodeError:
        pass


@settings(max_examples=400, deadline=None)
@given(st.integers(min_value=0), st.integers(min_value=0, max_value=255))
def test_a_corrupted_byte_raises_the_typed_error_or_decodes(where: int, value: int) -> None:
    good = bytearray(
        Record().encode()
        + Record(queue_offset=43, sys_flag=ZLIB, body=zlib.compress(b"z" * 50)).encode()
    )
    good[where % len(good)] = value
    try:
        decode_messages(bytes(good))
    except MessageDecodeError:
        pass


# ---- the view ---------------------------------------------------------------------------------


def test_a_view_shows_text_as_one_line_and_binary_as_hex() -> None:
    assert body_head(b'{"a": 1,\n\t"b": 2}') == ('{"a": 1,\\n\\t"b": 2}', False, False)
    text, binary, truncated = body_head("é".encode() * 100)  # 200 bytes, a char cut at 160
    assert (text, binary, truncated) == ("é" * 80, False, True)
    assert body_head(b"\x89PNG\r\n\x1a\n") == ("89 50 4e 47 0d 0a 1a 0a", True, False)
    hex_head, binary, truncated = body_head(bytes(100))
    assert binary
    assert truncated
    assert hex_head == " ".join(["00"] * 32)
    assert body_head(b"") == ("", False, False)
    assert body_head(b"ok\xff") == ("6f 6b ff", True, False)  # not UTF-8


def test_a_view_of_a_message_has_what_the_operator_reads() -> None:
    m = decode_message(Record(body=b"x" * 500).encode())
    v = MessageView.of(m, "broker-a")
    assert (v.topic, v.broker, v.queue_id, v.queue_offset) == ("orders", "broker-a", 3, 42)
    assert (v.keys, v.tags, v.msg_id) == (("k1", "k2"), "paid", "AC11000100002A9F")
    assert v.offset_msg_id == m.offset_msg_id
    assert v.size == 500
    assert v.body_truncated
    assert v.body_text == "x" * 160 + "…"
    assert v.to_dict()["store_time_ms"] == m.store_timestamp
    no_id = MessageView.of(decode_message(Record(properties={}).encode()), "broker-a")
    assert (no_id.msg_id, no_id.tags, no_id.keys) == (None, None, ())


def test_local_time_names_the_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("TZ", "Europe/Paris")
    time.tzset()
    try:
        assert local_time(1_795_606_246_790) == "2026-11-25 12:30:46.790 +0100 CET"
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert local_time(0) is None
