"""GET_CONSUMER_RUNNING_INFO (307): what one online consumer reports about itself.

The broker forwards the request to the client and returns the client's own answer, so it is as
slow as the client (the broker waits up to 10 s) and its shape depends on the client: Java clients
send `mqTable` keyed by MessageQueue objects (fastjson's non-standard keys). The queues in
`mqTable` are the ones rebalancing assigned to that client, which is how the dashboard (and the
console) shows the client of each queue.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import fastjson
from .admin import AdminClient, message_queue_from_key
from .errors import ProtocolError
from .models import MessageQueue

GET_CONSUMER_RUNNING_INFO = 307
#: The broker waits up to 10 s for the client; ask for a little longer than that at most.
DEFAULT_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class ConsumerRunningInfo:
    client_id: str
    queues: tuple[MessageQueue, ...]
    properties: dict[str, str]


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
    body = fastjson.loads(resp.body) if resp.body else {}
    if not isinstance(body, dict):
        raise ProtocolError("consumer running info is not an object")
    table = body.get("mqTable") or {}
    props = body.get("properties") or {}
    if not isinstance(table, dict) or not isinstance(props, dict):
        raise ProtocolError("consumer running info: mqTable/properties are not objects")
    queues = sorted(message_queue_from_key(k) for k in table)
    return ConsumerRunningInfo(
        client_id=client_id,
        queues=tuple(queues),
        properties={str(k): str(v) for k, v in props.items()},
    )
