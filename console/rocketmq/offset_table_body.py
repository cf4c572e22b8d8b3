"""GET_ALL_CONSUMER_OFFSET bodies read without the general fastjson parser.

A broker answers with its whole offset table (consumerOffset.json as it holds it: ~1 MB for
10,000 groups), whose queue ids fastjson writes as bare integer keys (`{0:12,1:9}`): no standard
parser reads that, and the general one's rewrite of every key cost a fleet scan 0.2 s a broker.
Here one pattern reads the table's entries where they stand; the rest of the document (the data
version, 5.x's group -> topics map) is not needed and not read. A table of any other shape (a
name with an escape, a value that is not an integer, the table named twice) is not this one's:
`parse` says so (None), and the general parser reads it.
"""

from __future__ import annotations

import re
from typing import Any

from .bodies import body_of, dict_of
from .frame import Command

_TABLE = b'"offsetTable":{'
# "topic@group":{queue id:offset,...}; RocketMQ's names hold no quote or backslash.
_ENTRY = re.compile(rb'"([^"\\]*)":\{((?:-?\d+:-?\d+)(?:,-?\d+:-?\d+)*)?\}(,?)')

OffsetTable = dict[tuple[str, str], dict[int, int]]


def read(resp: Command) -> OffsetTable:
    """(topic, group) -> queue id -> committed offset, from an answer to GET_ALL_CONSUMER_OFFSET."""
    usual = parse(resp.body) if resp.body else None
    return usual if usual is not None else general(body_of(resp))


def general(body: dict[Any, Any]) -> OffsetTable:
    """The table of a body the general fastjson parser read."""
    out: OffsetTable = {}
    for key, queues in dict_of(body.get("offsetTable")).items():
        topic, _, group = str(key).rpartition("@")  # "topic@group"; neither name has an @
        out[(topic, group)] = {int(q): int(o) for q, o in dict_of(queues).items()}
    return out


def parse(body: bytes) -> OffsetTable | None:
    """The table of a body of the usual shape; None for any other body."""
    start = body.find(_TABLE)
    if start < 1 or body[start - 1 : start] not in (b"{", b",") or body.count(_TABLE) != 1:
        return None
    pos = start + len(_TABLE)
    out: OffsetTable = {}
    more = body.startswith(b'"', pos)
    try:
        while more:
            entry = _ENTRY.match(body, pos)
            if entry is None:
                return None
            key, pairs, comma = entry.groups()
            topic, _, group = key.decode().rpartition("@")
            queues: dict[int, int] = {}
            if pairs:
                for pair in pairs.split(b","):
                    queue_id, _, offset = pair.partition(b":")
                    queues[int(queue_id)] = int(offset)
            if (topic, group) in out:
                return None  # a key twice: the general parser says what it makes of it
            out[(topic, group)] = queues
            pos = entry.end()
            more = bool(comma)
    except UnicodeDecodeError:
        return None
    # The table closes, and the document goes on with another field or ends.
    if not (body.startswith(b'},"', pos) or body[pos:].rstrip() == b"}}"):
        return None
    return out
