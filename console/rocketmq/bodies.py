"""Reading the bodies and fields of the servers' answers (fastjson, mostly) into plain values,
and the few values written into requests; a body of the wrong shape is a ProtocolError."""

from __future__ import annotations

from typing import Any

from . import fastjson
from .errors import ProtocolError
from .frame import Command
from .models import Broker, MessageQueue, SubscriptionGroup


def field_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def body_of(resp: Command) -> dict[Any, Any]:
    if not resp.body:
        return {}
    value = fastjson.loads(resp.body)
    if not isinstance(value, dict):
        raise ProtocolError(f"response body of {resp.code} is not an object")
    return value


def dict_of(value: Any) -> dict[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ProtocolError(f"expected an object, got {type(value).__name__}")
    return value


def list_of(value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ProtocolError(f"expected an array, got {type(value).__name__}")
    return value


def opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def ext_int(resp: Command, name: str) -> int:
    raw = resp.ext_fields.get(name)
    try:
        return int(raw) if raw is not None else 0
    except ValueError:
        raise ProtocolError(f"response field {name!r} is not an integer: {raw!r}") from None


def broker_of(data: Any) -> Broker:
    d = dict_of(data)
    addrs = {int(k): str(v) for k, v in dict_of(d.get("brokerAddrs")).items()}
    return Broker(name=str(d.get("brokerName", "")), cluster=str(d.get("cluster", "")), addrs=addrs)


def message_queue_from_key(key: Any) -> MessageQueue:
    """A MessageQueue that fastjson wrote as a map key (see `fastjson.ObjectKey`)."""
    if not isinstance(key, tuple):
        raise ProtocolError(f"expected a MessageQueue key, got {key!r}")
    fields = fastjson.object_key_fields(key)
    try:
        return MessageQueue(
            topic=str(fields["topic"]),
            broker_name=str(fields["brokerName"]),
            queue_id=int(fields["queueId"]),
        )
    except (KeyError, TypeError, ValueError):
        raise ProtocolError(f"not a MessageQueue key: {fields!r}") from None


#: The attribute that makes a subscription group a lite group bound to a parent topic
#: (SubscriptionGroupAttributes.LITE_BIND_TOPIC_ATTRIBUTE, RocketMQ 5.5).
LITE_BIND_TOPIC = "lite.bind.topic"


def subscription_group_of(name: str, c: dict[Any, Any]) -> SubscriptionGroup:
    return SubscriptionGroup(
        name=str(c.get("groupName", name)),
        consume_enable=bool(c.get("consumeEnable", True)),
        consume_broadcast_enable=bool(c.get("consumeBroadcastEnable", True)),
        consume_message_orderly=bool(c.get("consumeMessageOrderly", False)),
        retry_queue_nums=int(c.get("retryQueueNums", 1)),
        retry_max_times=int(c.get("retryMaxTimes", 16)),
        lite_bind_topic=opt_str(dict_of(c.get("attributes")).get(LITE_BIND_TOPIC)) or None,
    )


def freeze_key(value: Any) -> Any:
    """A MessageQueue written as a plain (standard JSON) object, made into key form."""
    if isinstance(value, dict):
        return tuple(sorted(value.items()))
    return value


def properties_of(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        out[key.strip()] = value.strip()
    return out
