"""A BROADCASTING consumer's own offsets: the `offsets.json` its Java client keeps on its host.

The client (LocalFileOffsetStore) keeps them in
`${rocketmq.client.localOffsetStoreDir:-~/.rocketmq_offsets}/<clientId>/<group>/offsets.json`,
written every few seconds while it runs, the previous version kept as `offsets.json.bak`. The
content is fastjson's pretty print of `{"offsetTable":{MessageQueue: offset}}`, the queue objects
standing in key position (not standard JSON; see console.rocketmq.fastjson). The client reads the
file once at start and falls back to the `.bak` when the file is missing, empty or unreadable;
a running client overwrites the file with what it holds in memory, so the file may only be
rewritten while the client is stopped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from console.domain.offsets import QueueKey
from console.errors import UserError
from console.rocketmq import fastjson
from console.rocketmq.errors import ProtocolError

OFFSETS_FILE = "offsets.json"
#: Where the Java client keeps them unless `rocketmq.client.localOffsetStoreDir` says otherwise.
DEFAULT_STORE_DIR = "~/.rocketmq_offsets"


class ClientOffsetsError(UserError, ValueError):
    """An offsets.json that is not one the Java client wrote (or could read)."""


def parse_offsets_json(text: str) -> dict[QueueKey, int]:
    """topic, broker, queue id -> offset, from the text of an offsets.json."""
    try:
        doc = fastjson.loads(text)
    except ProtocolError as exc:
        raise ClientOffsetsError(f"not an offsets file: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("offsetTable"), dict):
        raise ClientOffsetsError('not an offsets file: no "offsetTable" object')
    out: dict[QueueKey, int] = {}
    for key, value in doc["offsetTable"].items():
        if not isinstance(key, tuple):
            raise ClientOffsetsError(f"offsetTable key {key!r} is not a message queue")
        fields = fastjson.object_key_fields(key)
        topic, broker, queue_id = (
            fields.get("topic"),
            fields.get("brokerName"),
            fields.get("queueId"),
        )
        if not isinstance(topic, str) or not isinstance(broker, str) or type(queue_id) is not int:
            raise ClientOffsetsError(f"offsetTable key {fields!r} is not a message queue")
        if type(value) is not int or value < 0:
            raise ClientOffsetsError(f"{topic}/{broker}/{queue_id}: offset {value!r} is not one")
        out[(topic, broker, queue_id)] = value
    return out


def render_offsets_json(offsets: Mapping[QueueKey, int]) -> str:
    """The file the Java client writes for these offsets (fastjson's pretty print: tabs, the
    queue objects as keys, their fields in alphabetical order)."""
    entries = []
    for (topic, broker, queue_id), offset in sorted(offsets.items()):
        entries.append(
            "{\n"
            f"\t\t\t{_string('brokerName')}:{_string(broker)},\n"
            f"\t\t\t{_string('queueId')}:{queue_id},\n"
            f"\t\t\t{_string('topic')}:{_string(topic)}\n"
            f"\t\t}}:{int(offset)}"
        )
    return '{\n\t"offsetTable":{' + ",".join(entries) + "\n\t}\n}"


def _string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)
