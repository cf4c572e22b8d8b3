"""Messages as a broker stores and sends them: the record layout of a PULL body.

A FOUND pull answers with the messages' store records back to back (fact sheet §3.12,
`MessageDecoder.decode`): a fixed part, the body, the topic and the properties string. This
module turns those bytes into `Message` values and nothing else; bytes that are not such
records raise `MessageDecodeError`, never an IndexError or a struct error.

Bodies are kept as bytes and never logged. A body the producer compressed (sysFlag bit 0) is
decompressed when its codec is zlib (the Java client's default), zstd or LZ4 (an LZ4 frame, as
the Java client's `Lz4Compressor` writes); one whose codec bits this version does not know is
kept as stored with a note saying so.
"""

from __future__ import annotations

import ipaddress
import struct
import zlib
from dataclasses import dataclass, field
from enum import IntEnum

from .errors import ProtocolError

# Magic codes of a message record (MessageDecoder / MessageVersion).
MAGIC_V1 = -626843481  # topic length in one byte
MAGIC_V2 = -626843477  # topic length in two bytes

# sysFlag bits (MessageSysFlag).
COMPRESSED_FLAG = 0x1
BORNHOST_V6_FLAG = 0x1 << 4
STOREHOST_V6_FLAG = 0x1 << 5
COMPRESSION_TYPE_BITS = 0x7 << 8

# Property names (MessageConst).
PROPERTY_TAGS = "TAGS"
PROPERTY_KEYS = "KEYS"
PROPERTY_UNIQ_KEY = "UNIQ_KEY"
KEY_SEPARATOR = " "
NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"

#: A compressed body is decompressed up to this size; a larger one is not shown (it would
#: take the memory of the process that reads it: a few bytes can inflate to gigabytes).
MAX_DECOMPRESSED = 64 * 1024 * 1024

# storeSize magic bodyCRC queueId flag queueOffset commitLogOffset sysFlag bornTimestamp
_HEAD = struct.Struct(">iiiiiqqiq")
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_SHORT = struct.Struct(">h")


class MessageDecodeError(ProtocolError):
    """Bytes that are not a message record (truncated, a bad magic code, lengths that do not
    add up). `offset` is where in the body the bad record starts."""

    def __init__(self, reason: str, offset: int = 0) -> None:
        super().__init__(f"not a message record at byte {offset}: {reason}")
        self.reason = reason
        self.offset = offset


class Compression(IntEnum):
    """The codec of a compressed body: sysFlag bits 8-10 (CompressionType.findByValue; 0 is
    zlib, from before the codec was recorded)."""

    LZ4 = 1
    ZSTD = 2
    ZLIB = 3

    @classmethod
    def of(cls, sys_flag: int) -> Compression | int:
        """The codec, or the raw value when it is none this version knows."""
        value = (sys_flag & COMPRESSION_TYPE_BITS) >> 8
        if value == 0:
            return cls.ZLIB
        try:
            return cls(value)
        except ValueError:
            return value

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class Message:
    """One stored message, as a consumer would receive it."""

    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    store_size: int
    magic: int
    body_crc: int
    flag: int
    sys_flag: int
    born_timestamp: int  # epoch ms, the producer's clock
    born_host: str  # "ip:port" ("[ip]:port" for IPv6)
    store_timestamp: int  # epoch ms, the broker's clock
    store_host: str
    reconsume_times: int
    prepared_transaction_offset: int
    #: The body as consumed (decompressed when it could be); as stored when `body_note` says
    #: why it could not be. Out of the repr: a message that ends up in a log line or a
    #: traceback must not carry its body there.
    body: bytes = field(repr=False)
    #: Length of the body as stored (compressed, when it was).
    stored_body_size: int
    properties: tuple[tuple[str, str], ...]
    #: Hex of the store host's address, port and the commit log offset (upper case), the id
    #: `mqadmin queryMsgByOffset` prints as OffsetID and VIEW_MESSAGE_BY_ID takes.
    offset_msg_id: str
    #: The codec of a compressed body ("zlib", "zstd", "lz4", "type 5"); None: not compressed.
    compression: str | None = None
    #: Why the body is not shown as consumed ("compressed (lz4): not shown"); None: it is.
    body_note: str | None = None

    def property_value(self, name: str) -> str | None:
        for key, value in self.properties:
            if key == name:
                return value
        return None

    @property
    def tags(self) -> str | None:
        return self.property_value(PROPERTY_TAGS)

    @property
    def keys(self) -> tuple[str, ...]:
        raw = self.property_value(PROPERTY_KEYS)
        return tuple(k for k in raw.split(KEY_SEPARATOR) if k) if raw else ()

    @property
    def uniq_key(self) -> str | None:
        """The producer's message id (UNIQ_KEY), what most tools call the message id."""
        return self.property_value(PROPERTY_UNIQ_KEY)


def decode_messages(data: bytes) -> list[Message]:
    """Every record of a PULL body, in order."""
    out: list[Message] = []
    pos = 0
    view = memoryview(data)
    while pos < len(view):
        if len(view) - pos < 4:
            raise MessageDecodeError(f"{len(view) - pos} byte(s) left, no record fits", pos)
        (size,) = _INT.unpack_from(view, pos)
        if size < _HEAD.size or size > len(view) - pos:
            raise MessageDecodeError(
                f"record size {size} does not fit the {len(view) - pos} byte(s) left", pos
            )
        out.append(_decode_one(view[pos : pos + size], pos))
        pos += size
    return out


def decode_message(record: bytes) -> Message:
    """One record, exactly: trailing bytes are an error."""
    messages = decode_messages(record)
    if len(messages) != 1:
        raise MessageDecodeError(f"{len(messages)} records where one was expected")
    return messages[0]


class _Reader:
    """Reads one record front to back; running past its end is a MessageDecodeError."""

    def __init__(self, record: memoryview, at: int) -> None:
        self.record = record
        self.pos = 0
        self.at = at  # where the record starts in the body, for the error

    def take(self, n: int, what: str) -> memoryview:
        if n < 0 or self.pos + n > len(self.record):
            left = len(self.record) - self.pos
            raise MessageDecodeError(
                f"{what} needs {n} byte(s), {left} left in the record", self.at
            )
        chunk = self.record[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def i32(self, what: str) -> int:
        value: int = _INT.unpack(self.take(4, what))[0]
        return value

    def i64(self, what: str) -> int:
        value: int = _LONG.unpack(self.take(8, what))[0]
        return value

    def i16(self, what: str) -> int:
        value: int = _SHORT.unpack(self.take(2, what))[0]
        return value

    def host(self, ipv6: bool, what: str) -> tuple[str, bytes]:
        raw = bytes(self.take(16 if ipv6 else 4, what))
        port = self.i32(f"{what} port")
        address = ipaddress.ip_address(raw)
        text = f"[{address}]:{port}" if ipv6 else f"{address}:{port}"
        return text, raw + _INT.pack(port)


def _decode_one(record: memoryview, at: int) -> Message:
    r = _Reader(record, at)
    head = r.take(_HEAD.size, "the fixed header")
    (size, magic, crc, queue_id, flag, queue_offset, commit_offset, sys_flag, born_ts) = (
        _HEAD.unpack(head)
    )
    if magic not in (MAGIC_V1, MAGIC_V2):
        raise MessageDecodeError(f"unknown magic code {magic}", at)
    born_host, _ = r.host(bool(sys_flag & BORNHOST_V6_FLAG), "born host")
    store_ts = r.i64("store timestamp")
    store_host, store_host_bytes = r.host(bool(sys_flag & STOREHOST_V6_FLAG), "store host")
    reconsume = r.i32("reconsume times")
    prepared = r.i64("prepared transaction offset")
    body_len = r.i32("body length")
    stored = bytes(r.take(body_len, "body")) if body_len > 0 else b""
    topic_len = r.i16("topic length") & 0xFFFF if magic == MAGIC_V2 else r.take(1, "topic")[0]
    topic = _text(r.take(topic_len, "topic"), "topic", at)
    props_len = r.i16("properties length") & 0xFFFF
    properties = _properties(_text(r.take(props_len, "properties"), "properties", at))
    if r.pos != len(record):
        raise MessageDecodeError(f"record size {size} but its fields end at byte {r.pos}", at)
    body, compression, note = _body(stored, sys_flag)
    return Message(
        topic=topic,
        queue_id=queue_id,
        queue_offset=queue_offset,
        commit_log_offset=commit_offset,
        store_size=size,
        magic=magic,
        body_crc=crc,
        flag=flag,
        sys_flag=sys_flag,
        born_timestamp=born_ts,
        born_host=born_host,
        store_timestamp=store_ts,
        store_host=store_host,
        reconsume_times=reconsume,
        prepared_transaction_offset=prepared,
        body=body,
        stored_body_size=len(stored),
        properties=properties,
        offset_msg_id=(store_host_bytes + _LONG.pack(commit_offset)).hex().upper(),
        compression=compression,
        body_note=note,
    )


def _text(raw: memoryview, what: str, at: int) -> str:
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MessageDecodeError(f"{what} is not UTF-8 ({exc.reason})", at) from None


def _properties(text: str) -> tuple[tuple[str, str], ...]:
    """`name\\x01value\\x02` repeated (MessageDecoder.string2messageProperties: an item with
    no separator is skipped)."""
    out: list[tuple[str, str]] = []
    for item in text.split(PROPERTY_SEPARATOR):
        name, sep, value = item.partition(NAME_VALUE_SEPARATOR)
        if sep:
            out.append((name, value))
    return tuple(out)


def _body(stored: bytes, sys_flag: int) -> tuple[bytes, str | None, str | None]:
    """The body as consumed, the codec's name when it was compressed, and why it is not
    shown when it could not be decompressed."""
    if not sys_flag & COMPRESSED_FLAG or not stored:
        return stored, None, None
    codec = Compression.of(sys_flag)
    label = codec.label if isinstance(codec, Compression) else f"type {codec}"
    try:
        if codec is Compression.ZLIB:
            return _inflate(stored), label, None
        if codec is Compression.ZSTD:
            return _unzstd(stored), label, None
        if codec is Compression.LZ4:
            return _unlz4(stored), label, None
    except _TooLarge:
        limit = MAX_DECOMPRESSED // (1024 * 1024)
        return stored, label, f"compressed ({label}): over {limit} MiB uncompressed, not shown"
    except _Corrupt as exc:
        return stored, label, f"compressed ({label}): cannot be decompressed ({exc})"
    return stored, label, f"compressed ({label}): not shown"


class _TooLarge(Exception):
    pass


class _Corrupt(Exception):
    pass


def _inflate(data: bytes) -> bytes:
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, MAX_DECOMPRESSED + 1)
    except zlib.error as exc:
        raise _Corrupt(str(exc)) from None
    if len(out) > MAX_DECOMPRESSED:
        raise _TooLarge
    if not inflater.eof:
        raise _Corrupt("the compressed data ends early")
    return out


def _unlz4(data: bytes) -> bytes:
    try:
        # deferred: lz4, for an lz4 body only (and it may not be installed)
        import lz4.frame
    except ImportError:  # an install without it shows the body as not shown
        raise _Corrupt("lz4 is not installed") from None
    decompressor = lz4.frame.LZ4FrameDecompressor()
    try:
        out: bytes = decompressor.decompress(data, max_length=MAX_DECOMPRESSED + 1)
    except RuntimeError as exc:  # what lz4.frame raises for bytes that are not a frame
        raise _Corrupt(str(exc)) from None
    if len(out) > MAX_DECOMPRESSED:
        raise _TooLarge
    if not decompressor.eof:
        raise _Corrupt("the compressed data ends early")
    return out


def _unzstd(data: bytes) -> bytes:
    try:
        # deferred: zstandard, for a zstd body only (and it may not be installed)
        import zstandard
    except ImportError:  # an install without it shows the body as not shown
        raise _Corrupt("zstandard is not installed") from None
    try:
        chunks: list[bytes] = []
        size = 0
        with zstandard.ZstdDecompressor().stream_reader(data) as reader:
            while chunk := reader.read(1024 * 1024):
                size += len(chunk)
                if size > MAX_DECOMPRESSED:
                    raise _TooLarge
                chunks.append(chunk)
    except (zstandard.ZstdError, ValueError) as exc:
        raise _Corrupt(str(exc)) from None
    return b"".join(chunks)
