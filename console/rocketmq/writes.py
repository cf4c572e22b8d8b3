"""What an admin client writes to a broker: committed offsets, the broker's own reset, topics,
groups and messages (the sandbox's seed). Every one goes through `Transport.call`, where the
one rule on writes is kept (console/rocketmq/transport.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping

from .bodies import body_of, dict_of, ext_int, message_queue_from_key
from .codes import RequestCode
from .models import MessageQueue, SendResult
from .transport import Transport

DEFAULT_TOPIC = "TBW102"
PRODUCER_GROUP = "rmq_console_producer"
PERM_READ_WRITE = 6


class BrokerWrites(Transport):
    """The write operations (AdminClient has them all: console/rocketmq/admin.py)."""

    async def update_consumer_offset(
        self, addr: str, group: str, topic: str, queue_id: int, offset: int
    ) -> str | None:
        """UPDATE_CONSUMER_OFFSET; returns the broker's remark. An acknowledgement is not proof:
        a broker with a pending server-side reset answers SUCCESS with the remark "Offset has
        been previously reset" and keeps its value, and concurrent first commits of a new
        topic@group can be lost (see `console.services.apply.offset_writer`, which reads back)."""
        resp = await self.call(
            addr,
            RequestCode.UPDATE_CONSUMER_OFFSET,
            {"consumerGroup": group, "topic": topic, "queueId": queue_id, "commitOffset": offset},
        )
        return resp.remark or None

    async def reset_offset(
        self,
        addr: str,
        group: str,
        topic: str,
        *,
        timestamp_ms: int = -1,
        queue_id: int = -1,
        offset: int | None = None,
        force: bool = True,
    ) -> dict[MessageQueue, int]:
        """INVOKE_BROKER_TO_RESET_OFFSET: the broker's own reset path (server-side on 5.2+,
        client push on older brokers). Returns the new offset per queue as the broker reports."""
        resp = await self.call(
            addr,
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
            {
                "group": group,
                "topic": topic,
                "timestamp": timestamp_ms,
                "isForce": force,
                "queueId": queue_id,
                "offset": -1 if offset is None else offset,
            },
        )
        table = dict_of(body_of(resp).get("offsetTable")) if resp.body else {}
        return dict(sorted((message_queue_from_key(k), int(v)) for k, v in table.items()))

    async def clone_group_offset(
        self, addr: str, src_group: str, dest_group: str, topic: str, *, offline: bool
    ) -> None:
        await self.call(
            addr,
            RequestCode.CLONE_GROUP_OFFSET,
            {"srcGroup": src_group, "destGroup": dest_group, "topic": topic, "offline": offline},
        )

    async def create_topic(
        self,
        addr: str,
        topic: str,
        *,
        read_queues: int = 4,
        write_queues: int = 4,
        perm: int = PERM_READ_WRITE,
        attributes: Mapping[str, str] | None = None,
    ) -> None:
        """`attributes`: the topic's (5.x), e.g. {"message.type": "LITE"}; a new topic's may
        only be added ("+key=value", comma-separated, as the broker takes them)."""
        await self.call(
            addr,
            RequestCode.UPDATE_AND_CREATE_TOPIC,
            {
                "topic": topic,
                "defaultTopic": DEFAULT_TOPIC,
                "readQueueNums": read_queues,
                "writeQueueNums": write_queues,
                "perm": perm,
                "topicFilterType": "SINGLE_TAG",
                "topicSysFlag": 0,
                "order": False,
                "attributes": ",".join(f"+{k}={v}" for k, v in (attributes or {}).items()) or None,
            },
        )

    async def create_group(
        self,
        addr: str,
        group: str,
        *,
        broadcast_enable: bool = True,
        retry_max_times: int = 16,
        retry_queue_nums: int = 1,
        orderly: bool = False,
        attributes: Mapping[str, str] | None = None,
    ) -> None:
        """`attributes`: the group's (5.x), e.g. {"lite.bind.topic": "chats"}; a new group's
        may only be added (the broker takes them as "+key")."""
        config: dict[str, object] = {
            "groupName": group,
            "consumeEnable": True,
            "consumeFromMinEnable": True,
            "consumeBroadcastEnable": broadcast_enable,
            "consumeMessageOrderly": orderly,
            "retryQueueNums": retry_queue_nums,
            "retryMaxTimes": retry_max_times,
        }
        if attributes:
            config["attributes"] = {f"+{k}": v for k, v in attributes.items()}
        body = json.dumps(config).encode()
        await self.call(addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)

    async def send_message(
        self,
        addr: str,
        topic: str,
        queue_id: int,
        body: bytes,
        *,
        tags: str | None = None,
        keys: str | None = None,
        producer_group: str = PRODUCER_GROUP,
        extra: Mapping[str, str] | None = None,
    ) -> SendResult:
        """`extra`: more properties of the message (e.g. `__LITE_TOPIC`: a lite topic of the
        parent topic, which the broker also stores the message under, RocketMQ 5.5)."""
        props = {"WAIT": "true", **(extra or {})}
        if tags:
            props["TAGS"] = tags
        if keys:
            props["KEYS"] = keys
        properties = "".join(f"{k}\x01{v}\x02" for k, v in props.items())
        resp = await self.call(
            addr,
            RequestCode.SEND_MESSAGE,
            {
                "producerGroup": producer_group,
                "topic": topic,
                "defaultTopic": DEFAULT_TOPIC,
                "defaultTopicQueueNums": 4,
                "queueId": queue_id,
                "sysFlag": 0,
                "bornTimestamp": int(time.time() * 1000),
                "flag": 0,
                "properties": properties,
                "reconsumeTimes": 0,
                "unitMode": False,
                "batch": False,
            },
            body,
        )
        return SendResult(
            msg_id=resp.ext_fields.get("msgId", ""),
            topic=topic,
            queue_id=ext_int(resp, "queueId"),
            queue_offset=ext_int(resp, "queueOffset"),
        )
