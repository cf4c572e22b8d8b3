"""GET_CONSUME_STATS bodies read without the general fastjson parser.

A scan of a large fleet reads tens of thousands of these bodies, all of one shape:
`{"consumeTps":N,"offsetTable":{<MessageQueue>:{<numbers>},...}}`, the MessageQueue keys in
fastjson's object form, and the same few queues in every group's body. The general parser takes
each body through the C parser and a walk that rebuilds the keys; here one pattern reads the
entries where they stand and each queue is made once. A body of any other shape (another field, a
string where a number is expected, an escaped name) is not this one's: `parse` says so (None), and
the general parser reads it.
"""

from __future__ import annotations

import functools
import operator
import re
from typing import Any

from .bodies import body_of, dict_of, message_queue_from_key
from .frame import Command
from .models import ConsumeStats, MessageQueue, QueueConsumeStats

_NUMBER = rb"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?"
_HEAD = re.compile(rb'\{"consumeTps":(' + _NUMBER + rb'),"offsetTable":\{')
# One queue: fastjson writes fields in name order, an OffsetWrapper's all of them (no pullOffset
# before 5.x); RocketMQ's topic and broker names hold no quote or backslash. The whole entry and
# the comma after it are kept, to see that the entries found are the whole table.
_ENTRY = re.compile(
    rb'(\{"brokerName":"([^"\\]*)","queueId":(0|[1-9]\d*),"topic":"([^"\\]*)"\}:'
    rb'\{"brokerOffset":(-?\d+),"consumerOffset":(-?\d+),"lastTimestamp":(-?\d+)'
    rb'(?:,"pullOffset":(-?\d+))?\}(,?))'
)

#: A record's queue: a body's records are kept in queue order.
_BY_QUEUE = operator.itemgetter(0)


@functools.lru_cache(maxsize=1 << 16)
def _queue(broker: bytes, queue_id: bytes, topic: bytes) -> MessageQueue:
    return MessageQueue(topic.decode(), broker.decode(), int(queue_id))


def read(resp: Command) -> ConsumeStats:
    """The consume stats of an answer to GET_CONSUME_STATS."""
    usual = parse(resp.body) if resp.body else None
    return usual if usual is not None else general(body_of(resp))


def general(body: dict[Any, Any]) -> ConsumeStats:
    """The consume stats of a body the general fastjson parser read."""
    queues: dict[MessageQueue, QueueConsumeStats] = {}
    for key, value in dict_of(body.get("offsetTable")).items():
        mq = message_queue_from_key(key)
        v = dict_of(value)
        pull = v.get("pullOffset")
        queues[mq] = QueueConsumeStats(
            queue=mq,
            broker_offset=int(v.get("brokerOffset", 0)),
            consumer_offset=int(v.get("consumerOffset", 0)),
            pull_offset=int(pull) if pull is not None else None,
            last_timestamp=int(v.get("lastTimestamp", 0)),
        )
    return ConsumeStats(
        queues=dict(sorted(queues.items())), consume_tps=float(body.get("consumeTps", 0.0))
    )


def parse(body: bytes) -> ConsumeStats | None:
    """The consume stats of a body of the usual shape; None for any other body."""
    head = _HEAD.match(body)
    if head is None or not body.endswith(b"}}"):
        return None
    start, end = head.end(), len(body) - 2
    entries = _ENTRY.findall(body, start, end)
    # Entries found one after the other from the table's start to its end, with a comma between
    # each two and none after the last: the table is theirs and nothing else.
    if (
        sum(len(e[0]) for e in entries) != end - start
        or any(not e[8] for e in entries[:-1])
        or (entries and entries[-1][8])
    ):
        return None
    try:
        rows = [
            QueueConsumeStats(
                _queue(broker, queue_id, topic),
                int(offset),
                int(committed),
                int(pull) if pull else None,
                int(last),
            )
            for _, broker, queue_id, topic, offset, committed, last, pull, _ in entries
        ]
    except UnicodeDecodeError:
        return None
    rows.sort(key=_BY_QUEUE)
    queues = {q.queue: q for q in rows}
    if len(queues) != len(rows):
        return None  # a queue twice: the general parser says what it is
    return ConsumeStats(queues=queues, consume_tps=float(head.group(1)))
