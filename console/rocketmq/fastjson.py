"""A tolerant parser for the JSON that fastjson 1.x writes.

fastjson writes a map key that is not a String as its JSON value: `{0:"addr"}` for Long keys and
`{{"brokerName":"b","queueId":0,"topic":"T"}:{...}}` for MessageQueue keys. Standard JSON parsers
reject both, so objects here accept any value as a key. Keys come back hashable: strings stay
strings, numbers become int/float, objects become an `ObjectKey` (sorted field/value pairs) and
arrays become tuples. Everything else is standard JSON.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .errors import ProtocolError

ObjectKey = tuple[tuple[Any, Any], ...]

MAX_DEPTH = 64

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?")
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None}

# Two non-standard keys are rewritten into marked string keys (a NUL and a tag first), so that
# the C parser reads the document, and the walk after makes each marked key what the tolerant
# parser would: its fields in key form, or an int. A document that holds an escaped NUL itself
# is walked instead, so that no string of its own is taken for a mark.
#
# A MessageQueue in key position (fields in name order; RocketMQ's topic and broker names hold
# no quote or backslash), as a consume-stats body has one per queue. Inside a string a quote is
# escaped, so `{"brokerName":"` there is never followed by what this matches.
_MQ_KEY = re.compile(r'\{"brokerName":"([^"\\]*)","queueId":(0|[1-9]\d*),"topic":"([^"\\]*)"\}:')
_MQ_MARKED = r'"\\u0000mq\\u0000\1\\u0000\2\\u0000\3":'
_MQ_MARK = "\x00mq\x00"
# A Long or Integer key (`{0:"addr"}`, a queue id in an offset table). A `,0:` may stand inside
# a string, so strings are matched too, whole, and kept as they are: the scan stays in step.
_INT_KEY = re.compile(r'"(?:[^"\\]|\\.)*"|([{,]\s*)(-?(?:0|[1-9]\d*))\s*:')
_INT_MARK = "\x00i"


# The C string scanner json itself uses; not in the typeshed stubs, so looked up once here.
_scanstring: Any = getattr(json.decoder, "scanstring")  # noqa: B009
_standard = json.JSONDecoder()


def loads(data: bytes | str) -> Any:
    """Parse one fastjson document. Raises ProtocolError on anything that is not one."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes | bytearray) else data
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"body is not UTF-8: {exc}") from None
    # Most bodies are standard JSON; the C parser takes those much faster.
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    if "\\u0000" not in text:
        marked, marks = (text, 0)
        if '{"brokerName":"' in text:
            marked, marks = _MQ_KEY.subn(_MQ_MARKED, text)
        if marks:
            try:
                return _Unmark(marks).walk(json.loads(marked))
            except (ValueError, RecursionError):
                pass  # another non-standard part: integer keys, maybe
        unmark = _Unmark(marks)  # counts the integer keys it marks too
        try:
            return unmark.walk(json.loads(_INT_KEY.sub(unmark.mark_int, marked)))
        except (ValueError, RecursionError):
            pass  # another non-standard part: the tolerant parser reads it all
    parser = _Parser(text)
    value = parser.document()
    return value


class _Unmark:
    """Makes the marked keys of a document what they were: a walk over its objects and arrays
    (cheaper than a hook the C parser would call for each), which stops when `left`, the marks
    made, are all found: the queue stats under a consume-stats body's keys are kept as parsed."""

    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left

    def mark_int(self, m: re.Match[str]) -> str:
        """_INT_KEY's replacement: a string as it is, an integer key marked (and counted)."""
        if m.group(2) is None:
            return m.group(0)
        self.left += 1
        return f'{m.group(1)}"\\u0000i{m.group(2)}":'

    def walk(self, value: Any) -> Any:
        if not self.left:
            return value
        if isinstance(value, list):
            return [self.walk(v) if isinstance(v, dict | list) else v for v in value]
        if not isinstance(value, dict):
            return value
        out: dict[Any, Any] = {}
        for key, v in value.items():
            if key.startswith("\x00"):
                if key.startswith(_MQ_MARK):
                    broker, queue_id, topic = key[len(_MQ_MARK) :].split("\x00")
                    key = (("brokerName", broker), ("queueId", int(queue_id)), ("topic", topic))
                    self.left -= 1
                elif key.startswith(_INT_MARK):
                    key = int(key[len(_INT_MARK) :])
                    self.left -= 1
            out[key] = self.walk(v) if self.left and isinstance(v, dict | list) else v
        return out


def object_key_fields(key: ObjectKey) -> dict[str, Any]:
    """The fields of an object that stood in key position."""
    return {str(k): v for k, v in key}


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted(((k, _freeze(v)) for k, v in value.items()), key=_sort_key))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _sort_key(item: tuple[Any, Any]) -> tuple[str, str]:
    k = item[0]
    return (type(k).__name__, repr(k))


class _Parser:
    __slots__ = ("text", "pos")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> ProtocolError:
        snippet = self.text[self.pos : self.pos + 20]
        return ProtocolError(f"bad fastjson at char {self.pos}: {what} (near {snippet!r})")

    def skip_ws(self) -> None:
        m = _WS.match(self.text, self.pos)
        if m:
            self.pos = m.end()

    def document(self) -> Any:
        value = self.value(0)
        self.skip_ws()
        if self.pos != len(self.text):
            raise self.fail("trailing data")
        return value

    def value(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise self.fail(f"nesting deeper than {MAX_DEPTH}")
        self.skip_ws()
        if self.pos >= len(self.text):
            raise self.fail("unexpected end")
        ch = self.text[self.pos]
        if ch in "{[":
            # Most of a non-standard document is standard inside (a consume-stats body is
            # standard but for its keys): each standard part goes to the C parser, only the
            # parts around a non-standard key are walked here.
            try:
                value, self.pos = _standard.raw_decode(self.text, self.pos)
            except (ValueError, RecursionError):
                pass
            else:
                return value
        if ch == "{":
            return self.object(depth)
        if ch == "[":
            return self.array(depth)
        if ch == '"':
            return self.string()
        if ch == "-" or ch.isdigit():
            return self.number()
        for word, literal in _LITERALS.items():
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return literal
        raise self.fail("unexpected character")

    def string(self) -> str:
        try:
            s, end = _scanstring(self.text, self.pos + 1, True)
        except ValueError as exc:
            raise self.fail(f"bad string: {exc}") from None
        self.pos = end
        return str(s)

    def number(self) -> int | float:
        m = _NUMBER.match(self.text, self.pos)
        if not m or m.end() == self.pos:
            raise self.fail("bad number")
        self.pos = m.end()
        if m.group(1) or m.group(2):
            return float(m.group(0))
        return int(m.group(0))

    def array(self, depth: int) -> list[Any]:
        self.pos += 1
        items: list[Any] = []
        self.skip_ws()
        if self.text.startswith("]", self.pos):
            self.pos += 1
            return items
        while True:
            items.append(self.value(depth + 1))
            self.skip_ws()
            ch = self.text[self.pos : self.pos + 1]
            self.pos += 1
            if ch == ",":
                continue
            if ch == "]":
                return items
            self.pos -= 1
            raise self.fail("expected ',' or ']'")

    def object(self, depth: int) -> dict[Any, Any]:
        self.pos += 1
        result: dict[Any, Any] = {}
        self.skip_ws()
        if self.text.startswith("}", self.pos):
            self.pos += 1
            return result
        while True:
            key = _freeze(self.value(depth + 1))
            self.skip_ws()
            if not self.text.startswith(":", self.pos):
                raise self.fail("expected ':'")
            self.pos += 1
            result[key] = self.value(depth + 1)
            self.skip_ws()
            ch = self.text[self.pos : self.pos + 1]
            self.pos += 1
            if ch == ",":
                continue
            if ch == "}":
                return result
            self.pos -= 1
            raise self.fail("expected ',' or '}'")
