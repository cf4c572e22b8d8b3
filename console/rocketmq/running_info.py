"""GET_CONSUMER_RUNNING_INFO (307): what one online consumer reports about itself.

The broker forwards the request to the client and returns the client's own answer, so it is as
slow as the client (the broker waits up to 10 s) and its shape depends on the client: Java clients
send `mqTable` keyed by MessageQueue objects (fastjson's non-standard keys). The queues in
`mqTable` are the ones rebalancing assigned to that client, which is how the dashboard (and the
console) shows the client of each queue. Each value is the client's process queue for it
(`ProcessQueueInfo`): what it has pulled and not yet committed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import fastjson
from .admin import AdminClient
from .bodies import message_queue_from_key
from .errors import ProtocolError
from .models import MessageQueue

GET_CONSUMER_RUNNING_INFO = 307
#: The broker waits up to 10 s for the client; ask for a little longer than that at most.
DEFAULT_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class ProcessQueueInfo:
    """One queue's cache in a push consumer (the client's `ProcessQueueInfo`)."""

    #: The offset the client would commit now.
    commit_offset: int
    #: Messages pulled and not yet committed (an orderly consumer's message in flight included).
    cached_count: int
    cached_min: int
    cached_max: int
    cached_mib: int
    locked: bool  # an orderly consumer holds the queue's lock on the broker
    dropped: bool


@dataclass(frozen=True, slots=True)
class ConsumerRunningInfo:
    client_id: str
    queues: tuple[MessageQueue, ...]
    properties: dict[str, str]
    #: The client's cache of each queue it holds (the queues of `queues` whose entry parsed).
    process_queues: dict[MessageQueue, ProcessQueueInfo] = field(default_factory=dict)
    #: What a POP client holds popped and not acked (waitAckCount), by the queue it pops: a
    #: broker's topic as `MessageQueue(topic, broker, -1)` (any queue of that broker) unless
    #: the broker assigns it single queues.
    pop_wait_ack: dict[MessageQueue, int] = field(default_factory=dict)


async def consumer_running_info(
    admin: AdminClient,
    addr: str,
    group: str,
    client_id: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
) -> ConsumerRunningInfo:
    resp = await admin.call(
        addr,
        GET_CONSUMER_RUNNING_INFO,
        {"consumerGroup": group, "clientId": client_id, "jstackEnable": False},
        timeout=timeout,
    )
    return parse_running_info(client_id, resp.body)


def parse_running_info(client_id: str, raw: bytes | None) -> ConsumerRunningInfo:
    body = fastjson.loads(raw) if raw else {}
    if not isinstance(body, dict):
        raise ProtocolError("consumer running info is not an object")
    table = body.get("mqTable") or {}
    props = body.get("properties") or {}
    if not isinstance(table, dict) or not isinstance(props, dict):
        raise ProtocolError("consumer running info: mqTable/properties are not objects")
    entries = {message_queue_from_key(k): v for k, v in table.items()}
    caches = {mq: pq for mq, v in entries.items() if (pq := _process_queue(v)) is not None}
    pop_table = body.get("mqPopTable") or {}
    if not isinstance(pop_table, dict):
        raise ProtocolError("consumer running info: mqPopTable is not an object")
    waiting: dict[MessageQueue, int] = {}
    for key, value in pop_table.items():
        if isinstance(value, dict) and isinstance(value.get("waitAckCount"), int):
            waiting[message_queue_from_key(key)] = int(value["waitAckCount"])
    return ConsumerRunningInfo(
        client_id=client_id,
        queues=tuple(sorted(entries)),
        properties={str(k): str(v) for k, v in props.items()},
        process_queues=dict(sorted(caches.items())),
        pop_wait_ack=dict(sorted(waiting.items())),
    )


def _process_queue(value: Any) -> ProcessQueueInfo | None:
    """None when the client sent something else (another client's shape): no cache known."""
    if not isinstance(value, dict):
        return None
    try:
        return ProcessQueueInfo(
            commit_offset=int(value["commitOffset"]),
            cached_count=int(value["cachedMsgCount"]),
            cached_min=int(value["cachedMsgMinOffset"]),
            cached_max=int(value["cachedMsgMaxOffset"]),
            cached_mib=int(value.get("cachedMsgSizeInMiB", 0)),
            locked=bool(value.get("locked", False)),
            dropped=bool(value.get("droped", False)),  # sic: the Java field's name
        )
    except (KeyError, TypeError, ValueError):
        return None
