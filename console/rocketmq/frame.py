"""The remoting frame: length-prefixed header (JSON or ROCKETMQ binary) plus an opaque body.

int32 length = 4 + headerLen + bodyLen   (big-endian, does not count itself)
int32 (serializeType << 24) | headerLen
header, body
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import Any

from .codes import CLIENT_VERSION, FLAG_ONEWAY, FLAG_RESPONSE, LANGUAGE
from .errors import ProtocolError

MAX_FRAME = 16 * 1024 * 1024  # the servers' default frameMaxLength
SERIALIZE_JSON = 0
SERIALIZE_ROCKETMQ = 1

# LanguageCode byte values, in declaration order of LanguageCode.java.
LANGUAGES = (
    "JAVA",
    "CPP",
    "DOTNET",
    "PYTHON",
    "DELPHI",
    "ERLANG",
    "RUBY",
    "OTHER",
    "HTTP",
    "GO",
    "PHP",
    "OMS",
    "RUST",
    "NODE_JS",
)

_LENGTHS = struct.Struct(">ii")
#: One encoder for every header: json.dumps with options builds a new one per call.
_HEADER_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_BINARY_FIXED = struct.Struct(">hbhii")


@dataclass(slots=True)
class Command:
    code: int
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    language: str = LANGUAGE
    version: int = CLIENT_VERSION

    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)


def encode(cmd: Command) -> bytes:
    """Encode with a JSON header: every server version reads it and it has no 16-bit code limit."""
    header: dict[str, Any] = {
        "code": cmd.code,
        "language": cmd.language,
        "version": cmd.version,
        "opaque": cmd.opaque,
        "flag": cmd.flag,
    }
    if cmd.remark is not None:
        header["remark"] = cmd.remark
    if cmd.ext_fields:
        header["extFields"] = cmd.ext_fields
    try:
        raw = _HEADER_JSON.encode(header).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ProtocolError(f"header field is not encodable as UTF-8: {exc}") from None
    total = 4 + len(raw) + len(cmd.body)
    if total > MAX_FRAME:
        raise ProtocolError(f"frame of {total} bytes exceeds the {MAX_FRAME}-byte limit")
    return _LENGTHS.pack(total, (SERIALIZE_JSON << 24) | len(raw)) + raw + cmd.body


def frame_length(prefix: bytes | bytearray) -> int:
    """Validate the 4-byte length prefix and return how many bytes follow it."""
    length: int = struct.unpack(">i", prefix)[0]
    if length < 4:
        raise ProtocolError(f"frame length {length} is shorter than its header-length field")
    if length > MAX_FRAME:
        raise ProtocolError(f"frame length {length} exceeds the {MAX_FRAME}-byte limit")
    return length


def decode(frame: bytes | bytearray) -> Command:
    """Decode the bytes after the length prefix (header-meta, header, body)."""
    if len(frame) < 4:
        raise ProtocolError("frame too short for its header-length field")
    (meta,) = struct.unpack_from(">i", frame, 0)
    serialize_type = (meta >> 24) & 0xFF
    header_len = meta & 0xFFFFFF
    if header_len > len(frame) - 4:
        raise ProtocolError(f"header length {header_len} exceeds the frame ({len(frame)} bytes)")
    header = frame[4 : 4 + header_len]
    body = bytes(frame[4 + header_len :])
    if serialize_type == SERIALIZE_JSON:
        cmd = _decode_json_header(header)
    elif serialize_type == SERIALIZE_ROCKETMQ:
        cmd = _decode_binary_header(header)
    else:
        raise ProtocolError(f"unknown serialize type {serialize_type}")
    cmd.body = body
    return cmd


def _as_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError(f"header field {name!r} is not an integer: {value!r}")
    return value


def _decode_json_header(raw: bytes | bytearray) -> Command:
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ProtocolError(f"JSON header is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("JSON header is not an object")
    ext = obj.get("extFields") or {}
    if not isinstance(ext, dict):
        raise ProtocolError("extFields is not an object")
    remark = obj.get("remark")
    language = obj.get("language", "JAVA")
    return Command(
        code=_as_int(obj.get("code", 0), "code"),
        opaque=_as_int(obj.get("opaque", 0), "opaque"),
        flag=_as_int(obj.get("flag", 0), "flag"),
        remark=remark if isinstance(remark, str) else None,
        ext_fields={str(k): "" if v is None else str(v) for k, v in ext.items()},
        language=language if isinstance(language, str) else "OTHER",
        version=_as_int(obj.get("version", 0), "version"),
    )


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes | bytearray) -> None:
        self.buf = buf
        self.pos = 0

    def take(self, n: int) -> bytes | bytearray:
        if n < 0 or self.pos + n > len(self.buf):
            raise ProtocolError(f"binary header truncated at byte {self.pos} (wanted {n} more)")
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def int16(self) -> int:
        return int(struct.unpack(">h", self.take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self.take(4))[0])

    def text(self, n: int) -> str | None:
        if n == 0:
            return None
        try:
            return self.take(n).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"binary header string is not UTF-8: {exc}") from None


def _decode_binary_header(raw: bytes | bytearray) -> Command:
    r = _Reader(raw)
    code, lang, version, opaque, flag = _BINARY_FIXED.unpack(r.take(_BINARY_FIXED.size))
    remark = r.text(r.int32())
    ext_len = r.int32()
    ext = _Reader(r.take(ext_len))
    fields: dict[str, str] = {}
    while ext.pos < len(ext.buf):
        key = ext.text(ext.int16())
        value = ext.text(ext.int32())
        if key is not None:
            fields[key] = value or ""
    return Command(
        code=code,
        opaque=opaque,
        flag=flag,
        remark=remark,
        ext_fields=fields,
        language=LANGUAGES[lang] if 0 <= lang < len(LANGUAGES) else "OTHER",
        version=version,
    )


def encode_binary_header(cmd: Command) -> bytes:
    """A full frame with a ROCKETMQ binary header, as 4.x servers may answer; used by tests."""

    def s16(text: str) -> bytes:
        b = text.encode()
        return struct.pack(">h", len(b)) + b

    def s32(text: str | None) -> bytes:
        b = (text or "").encode()
        return struct.pack(">i", len(b)) + b

    ext = b"".join(s16(k) + s32(v) for k, v in cmd.ext_fields.items())
    lang = LANGUAGES.index(cmd.language) if cmd.language in LANGUAGES else 7
    header = (
        _BINARY_FIXED.pack(cmd.code, lang, cmd.version, cmd.opaque, cmd.flag)
        + s32(cmd.remark)
        + struct.pack(">i", len(ext))
        + ext
    )
    total = 4 + len(header) + len(cmd.body)
    return _LENGTHS.pack(total, (SERIALIZE_ROCKETMQ << 24) | len(header)) + header + cmd.body
