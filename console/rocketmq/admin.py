"""The async admin client: name server and broker operations as typed calls.

Broker operations take the broker's address (its master, `Broker.master_addr`, or for reads a
slave); finding which brokers hold a topic or a group is the caller's business (see
`console.services`), so every operation here is one request. A name-server operation asks the
name servers in turn (`console.rocketmq.namesrv`): the next one when one cannot be reached, and
also when one is slower than `HEDGE_S` to answer. Every broker address a name server lists is
remembered with its broker id, and a write request to an address listed as a slave is refused
before it is sent (`NotMaster`): offsets are written to masters only. What a broker's answer
means beyond itself, such as whether a commit it acknowledged took effect, is for the services
to find out (`console.services.apply.offset_writer`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any, Literal

from . import fastjson
from .codes import WRITE_CODES, RequestCode, ResponseCode
from .connection import ConnectionPool
from .errors import (
    AccessDenied,
    BrokerError,
    ConnectError,
    ConnectionLost,
    NotMaster,
    ProtocolError,
    ReadOnlyError,
    RequestTimeout,
    RocketMQError,
    TlsRefused,
)
from .frame import Command
from .message import decode_messages
from .models import (
    MASTER_ID,
    BoundaryType,
    Broker,
    ClientConnection,
    ClusterInfo,
    ConsumerConnection,
    ConsumeStats,
    ConsumeTimeSpan,
    HaStatus,
    MessageQueue,
    PullResult,
    PullStatus,
    QueueConsumeStats,
    QueueData,
    QueueStats,
    SendResult,
    SubscriptionGroup,
    TopicRoute,
)
from .namesrv import NameServers
from .signing import Credentials
from .tls import TlsClient

DEFAULT_TOPIC = "TBW102"
PRODUCER_GROUP = "rmq_console_producer"
PERM_READ_WRITE = 6
#: The group an admin pulls with (the brokers create it for their tools; mqadmin uses it too).
TOOLS_GROUP = "TOOLS_CONSUMER"
#: PullSysFlag: the subscription is in the request (bit 2); no commit, no suspend.
PULL_SYS_FLAG = 0x4
_PULL_ANSWERS = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.RETRY_IMMEDIATELY,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_MOVED,
}
#: After this long without an answer from a name server, the next one is asked too (the first
#: to answer wins); at most half the request timeout.
HEDGE_S = 1.0


class AdminClient:
    """Speaks the remoting protocol to one name server list and any broker it names."""

    def __init__(
        self,
        namesrv: str | Sequence[str],
        *,
        timeout: float = 3.0,
        credentials: Credentials | None = None,
        read_only: str | None = None,
        tls: TlsClient | None = None,
    ) -> None:
        """`read_only`, when given, is why this client must not write: every write operation
        then raises ReadOnlyError with it, before anything is sent. `tls`: every connection,
        to name servers and brokers alike, speaks TLS with it."""
        addrs = [namesrv] if isinstance(namesrv, str) else list(namesrv)
        # One string may hold several, as in RocketMQ's NAMESRV_ADDR ("a:9876;b:9876").
        self.namesrv = [
            a.strip() for item in addrs for a in item.replace(",", ";").split(";") if a.strip()
        ]
        if not self.namesrv:
            raise ValueError("no name server address given")
        self.timeout = timeout
        self.read_only = read_only
        self._pool = ConnectionPool(credentials, tls)
        self.tls = tls
        #: The access key requests are signed with (None: unsigned), named in AccessDenied.
        self.access_key = credentials.access_key if credentials else None
        #: Which name server to ask first, and those that did not answer lately (`news()` tells
        #: each once: the CLI prints it on stderr, the console shows it in its status line).
        self.name_servers = NameServers(self.namesrv)
        self.server_versions: dict[str, int] = {}
        #: Broker name and id of every address a name server listed (id 0 = master).
        self.broker_roles: dict[str, tuple[str, int]] = {}

    async def __aenter__(self) -> AdminClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._pool.close()

    # ---- transport -------------------------------------------------------------------------

    async def call(
        self,
        addr: str,
        code: int,
        fields: dict[str, Any] | None = None,
        body: bytes = b"",
        *,
        timeout: float | None = None,
        ok: Iterable[int] = (ResponseCode.SUCCESS,),
    ) -> Command:
        """One request; raises BrokerError unless the response code is in `ok` (AccessDenied
        when the server refused the credentials or what they may do)."""
        if int(code) in WRITE_CODES:
            # Checked here, where every request passes, not per operation: nothing that changes
            # the cluster leaves a read-only client, nor goes to a slave, whichever method
            # builds it.
            if self.read_only is not None:
                raise ReadOnlyError(
                    f"request {int(code)} would change the cluster: {self.read_only}"
                )
            role = self.broker_roles.get(addr)
            if role is not None and role[1] != MASTER_ID:
                raise NotMaster(addr, int(code), broker=role[0], broker_id=role[1])
        ext = {k: _field(v) for k, v in (fields or {}).items() if v is not None}
        resp = await self._pool.request(addr, int(code), ext, body, timeout or self.timeout)
        self.server_versions[addr] = resp.version
        if resp.code not in set(ok):
            raise self._refusal(addr, int(code), resp.code, resp.remark)
        return resp

    def _refusal(self, addr: str, request_code: int, code: int, remark: str | None) -> BrokerError:
        denied = access_denial(code, remark)
        if denied is None:
            return BrokerError(addr, request_code, code, remark)
        return AccessDenied(
            addr,
            request_code,
            code,
            remark,
            access_key=self.access_key,
            authentication=denied == "authentication",
        )

    async def call_namesrv(
        self, code: int, fields: dict[str, Any] | None = None, **kw: Any
    ) -> Command:
        """Ask the name servers in turn until one answers; its errors are final.

        The next one is asked as soon as one fails, and also when one has not answered after
        HEDGE_S (then the first answer wins and the silent one is remembered as not answering):
        a hung name server first in the list costs each call HEDGE_S at most, once, not a
        timeout per call (see NameServers).
        """
        order = self.name_servers.order()
        hedge = min(HEDGE_S, (kw.get("timeout") or self.timeout) / 2)
        loop = asyncio.get_running_loop()
        asking: dict[asyncio.Future[Command], tuple[str, float]] = {}
        errors: list[RocketMQError] = []

        def ask_next() -> None:
            addr = order.pop(0)
            future = asyncio.ensure_future(self.call(addr, code, fields, **kw))
            future.add_done_callback(_retrieve)
            asking[future] = (addr, loop.time())

        ask_next()
        try:
            while asking:
                done, _ = await asyncio.wait(
                    asking, timeout=hedge if order else None, return_when=asyncio.FIRST_COMPLETED
                )
                if not done:
                    ask_next()  # the one(s) asked are slow: ask the next one as well
                    continue
                answered = [f for f in done if f.exception() is None]
                if answered:
                    addr, _ = asking.pop(answered[0])
                    for slow, (other, since) in asking.items():
                        if not slow.done():
                            waited = loop.time() - since
                            self.name_servers.failed(other, f"no answer within {waited:.1f}s")
                    self.name_servers.answered(addr)
                    return answered[0].result()
                for future in done:
                    addr, _ = asking.pop(future)
                    exc = future.exception()
                    if not isinstance(exc, RocketMQError) or isinstance(exc, BrokerError):
                        assert exc is not None
                        raise exc
                    errors.append(exc)
                    self.name_servers.failed(addr, _unanswered_reason(exc))
                    if order:
                        ask_next()
        finally:
            for future in asking:
                future.cancel()
        if len(errors) == 1:
            raise errors[0]
        refused = [e for e in errors if isinstance(e, TlsRefused)]
        if len(refused) == len(errors):
            # Every name server refused our TLS (or its absence): a configuration problem,
            # said as such, never "cannot connect".
            raise refused[0]
        raise ConnectError(",".join(self.namesrv), "; ".join(str(e) for e in errors))

    # ---- name server -------------------------------------------------------------------------

    async def cluster_info(self) -> ClusterInfo:
        resp = await self.call_namesrv(RequestCode.GET_BROKER_CLUSTER_INFO)
        body = _body(resp)
        brokers = {
            str(name): self._learn(_broker(data))
            for name, data in _dict(body.get("brokerAddrTable")).items()
        }
        clusters = {
            str(name): sorted(str(b) for b in _list(members))
            for name, members in _dict(body.get("clusterAddrTable")).items()
        }
        return ClusterInfo(brokers=brokers, clusters=clusters)

    async def topic_list(self) -> list[str]:
        resp = await self.call_namesrv(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        return sorted(str(t) for t in _list(_body(resp).get("topicList")))

    async def topics_by_cluster(self, cluster: str) -> list[str]:
        resp = await self.call_namesrv(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": cluster})
        return sorted(str(t) for t in _list(_body(resp).get("topicList")))

    async def topic_route(self, topic: str) -> TopicRoute:
        resp = await self.call_namesrv(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic, "acceptStandardJsonOnly": True}
        )
        body = _body(resp)
        queues = [
            QueueData(
                broker_name=str(q.get("brokerName", "")),
                read_queue_nums=int(q.get("readQueueNums", 0)),
                write_queue_nums=int(q.get("writeQueueNums", 0)),
                perm=int(q.get("perm", 0)),
                topic_sys_flag=int(q.get("topicSysFlag", 0)),
            )
            for q in map(_dict, _list(body.get("queueDatas")))
        ]
        brokers = [self._learn(_broker(b)) for b in _list(body.get("brokerDatas"))]
        return TopicRoute(
            topic=topic,
            brokers=sorted(brokers, key=lambda b: b.name),
            queues=sorted(queues, key=lambda q: q.broker_name),
        )

    def _learn(self, broker: Broker) -> Broker:
        for broker_id, addr in broker.addrs.items():
            self.broker_roles[addr] = (broker.name, broker_id)
        return broker

    # ---- broker: read side -------------------------------------------------------------------

    async def broker_config(self, addr: str) -> dict[str, str]:
        resp = await self.call(addr, RequestCode.GET_BROKER_CONFIG)
        return _properties(resp.body.decode("utf-8", errors="replace"))

    async def broker_runtime(self, addr: str) -> dict[str, str]:
        resp = await self.call(addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        return {str(k): str(v) for k, v in _dict(_body(resp).get("table")).items()}

    async def message_request_modes(self, addr: str) -> dict[tuple[str, str], str]:
        """How the broker hands each group's topic to its remoting clients, where it was set
        (`mqadmin setConsumeMode`, kept in messageRequestMode.json): (topic, group) -> PULL or
        POP. Empty when nothing was set (the broker then answers an error) or the broker is
        older than 5.0 (it does not know the request)."""
        try:
            resp = await self.call(addr, RequestCode.GET_ALL_MESSAGE_REQUEST_MODE)
        except BrokerError as exc:
            if exc.code in (ResponseCode.SYSTEM_ERROR, ResponseCode.REQUEST_CODE_NOT_SUPPORTED):
                return {}
            raise
        out: dict[tuple[str, str], str] = {}
        for topic, groups in _dict(_body(resp).get("messageRequestModeMap")).items():
            for group, body in _dict(groups).items():
                out[(str(topic), str(group))] = str(_dict(body).get("mode", ""))
        return out

    async def ha_status(self, addr: str) -> HaStatus:
        """A broker's replication, as it says (GET_BROKER_HA_STATUS): for a slave, its own
        commit log's end and the master's it last heard of."""
        resp = await self.call(addr, RequestCode.GET_BROKER_HA_STATUS)
        body = _body(resp)
        client = _dict(body.get("haClientRuntimeInfo"))
        return HaStatus(
            master=bool(body.get("master", False)),
            max_offset=int(client.get("maxOffset", 0)),
            master_flush_offset=int(client.get("masterFlushOffset", 0)),
            last_read_ms=int(client.get("lastReadTimestamp", 0)),
        )

    async def topic_stats(self, addr: str, topic: str) -> dict[MessageQueue, QueueStats]:
        resp = await self.call(addr, RequestCode.GET_TOPIC_STATS_INFO, {"topic": topic})
        out: dict[MessageQueue, QueueStats] = {}
        for key, value in _dict(_body(resp).get("offsetTable")).items():
            mq = message_queue_from_key(key)
            v = _dict(value)
            out[mq] = QueueStats(
                queue=mq,
                min_offset=int(v.get("minOffset", 0)),
                max_offset=int(v.get("maxOffset", 0)),
                last_update_timestamp=int(v.get("lastUpdateTimestamp", 0)),
            )
        return dict(sorted(out.items()))

    async def subscription_groups(self, addr: str) -> dict[str, SubscriptionGroup]:
        resp = await self.call(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        table = _dict(_body(resp).get("subscriptionGroupTable"))
        out = {str(name): _subscription_group(str(name), _dict(c)) for name, c in table.items()}
        return dict(sorted(out.items()))

    async def consume_time_span(
        self, addr: str, topic: str, group: str
    ) -> dict[MessageQueue, ConsumeTimeSpan]:
        """Per queue: earliest, latest and last-consumed store times, and how far behind."""
        resp = await self.call(
            addr, RequestCode.QUERY_CONSUME_TIME_SPAN, {"topic": topic, "group": group}
        )
        out: dict[MessageQueue, ConsumeTimeSpan] = {}
        for item in map(_dict, _list(_body(resp).get("consumeTimeSpanSet"))):
            mq = message_queue_from_key(_freeze_key(item.get("messageQueue")))
            out[mq] = ConsumeTimeSpan(
                queue=mq,
                min_timestamp=int(item.get("minTimeStamp", 0)),
                max_timestamp=int(item.get("maxTimeStamp", 0)),
                consume_timestamp=int(item.get("consumeTimeStamp", 0)),
                delay_ms=int(item.get("delayTime", 0)),
            )
        return dict(sorted(out.items()))

    async def consume_stats(self, addr: str, group: str, topic: str | None = None) -> ConsumeStats:
        resp = await self.call(
            addr, RequestCode.GET_CONSUME_STATS, {"consumerGroup": group, "topic": topic}
        )
        body = _body(resp)
        queues: dict[MessageQueue, QueueConsumeStats] = {}
        for key, value in _dict(body.get("offsetTable")).items():
            mq = message_queue_from_key(key)
            v = _dict(value)
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

    async def consumer_connections(self, addr: str, group: str) -> ConsumerConnection:
        """Who is online; a group with no live client comes back with no clients."""
        try:
            resp = await self.call(
                addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": group}
            )
        except BrokerError as exc:
            if exc.code == ResponseCode.CONSUMER_NOT_ONLINE:
                return ConsumerConnection([], None, None, None)
            raise
        body = _body(resp)
        clients = [
            ClientConnection(
                client_id=str(c.get("clientId", "")),
                client_addr=str(c.get("clientAddr", "")),
                language=str(c.get("language", "")),
                version=int(c.get("version", 0)),
            )
            for c in map(_dict, _list(body.get("connectionSet")))
        ]
        subs = {
            str(t): str(_dict(s).get("subString", "*"))
            for t, s in _dict(body.get("subscriptionTable")).items()
        }
        return ConsumerConnection(
            clients=sorted(clients, key=lambda c: c.client_id),
            consume_type=_opt_str(body.get("consumeType")),
            message_model=_opt_str(body.get("messageModel")),
            consume_from_where=_opt_str(body.get("consumeFromWhere")),
            subscriptions=subs,
        )

    async def query_consumer_offset(
        self, addr: str, group: str, topic: str, queue_id: int
    ) -> int | None:
        """The committed offset, or None when the group never committed on that queue."""
        resp = await self.call(
            addr,
            RequestCode.QUERY_CONSUMER_OFFSET,
            {
                "consumerGroup": group,
                "topic": topic,
                "queueId": queue_id,
                "setZeroIfNotFound": False,
            },
            ok=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND),
        )
        if resp.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        return _ext_int(resp, "offset")

    async def consumer_offset_table(self, addr: str) -> dict[tuple[str, str], dict[int, int]]:
        """Every offset the broker has committed (its consumerOffset.json): (topic, group) ->
        queue id -> offset. A queue missing here was never committed. One answer for all the
        broker's groups: ask once per read, not per group."""
        resp = await self.call(addr, RequestCode.GET_ALL_CONSUMER_OFFSET)
        out: dict[tuple[str, str], dict[int, int]] = {}
        for key, queues in _dict(_body(resp).get("offsetTable")).items():
            topic, _, group = str(key).rpartition("@")  # "topic@group"; neither name has an @
            out[(topic, group)] = {int(q): int(o) for q, o in _dict(queues).items()}
        return out

    async def min_offset(self, addr: str, topic: str, queue_id: int) -> int:
        resp = await self.call(
            addr, RequestCode.GET_MIN_OFFSET, {"topic": topic, "queueId": queue_id}
        )
        return _ext_int(resp, "offset")

    async def max_offset(self, addr: str, topic: str, queue_id: int) -> int:
        resp = await self.call(
            addr, RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": queue_id}
        )
        return _ext_int(resp, "offset")

    async def search_offset(
        self,
        addr: str,
        topic: str,
        queue_id: int,
        timestamp_ms: int,
        boundary: BoundaryType = BoundaryType.LOWER,
    ) -> int:
        resp = await self.call(
            addr,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
            {
                "topic": topic,
                "queueId": queue_id,
                "timestamp": timestamp_ms,
                "boundaryType": boundary.value,
            },
        )
        return _ext_int(resp, "offset")

    async def earliest_store_time(self, addr: str, topic: str, queue_id: int) -> int | None:
        """Store time (epoch ms) of the first available message; None for an empty queue."""
        resp = await self.call(
            addr, RequestCode.GET_EARLIEST_MSG_STORETIME, {"topic": topic, "queueId": queue_id}
        )
        ts = _ext_int(resp, "timestamp")
        return ts if ts > 0 else None

    async def pull_message(
        self,
        addr: str,
        topic: str,
        queue_id: int,
        offset: int,
        *,
        max_nums: int = 1,
        group: str = TOOLS_GROUP,
        timeout: float | None = None,
    ) -> PullResult:
        """Read up to `max_nums` messages from `offset` on, as `mqadmin queryMsgByOffset` does:
        no commit, no long poll, every tag.

        A pull leaves state behind for the pulling group (its subscription, a pull offset) and
        erases a server-side reset pending for that group and queue: `group` is never the
        group being administered, hence the brokers' own TOOLS_CONSUMER.
        """
        resp = await self.call(
            addr,
            RequestCode.PULL_MESSAGE,
            {
                "consumerGroup": group,
                "topic": topic,
                "queueId": queue_id,
                "queueOffset": offset,
                "maxMsgNums": max_nums,
                "sysFlag": PULL_SYS_FLAG,
                "commitOffset": 0,
                "suspendTimeoutMillis": 0,
                "subscription": "*",
                "subVersion": 0,
                "expressionType": "TAG",
            },
            timeout=timeout,
            ok=_PULL_ANSWERS,
        )
        status = _PULL_ANSWERS[ResponseCode(resp.code)]
        messages = tuple(decode_messages(resp.body)) if status is PullStatus.FOUND else ()
        return PullResult(
            status=status,
            next_begin_offset=_ext_int(resp, "nextBeginOffset"),
            min_offset=_ext_int(resp, "minOffset"),
            max_offset=_ext_int(resp, "maxOffset"),
            messages=messages,
            suggest_broker_id=_ext_int(resp, "suggestWhichBrokerId"),
        )

    async def server_side_reset(self, addr: str) -> bool:
        """Whether the broker resets offsets itself (5.1+ `useServerSideResetOffset`)."""
        value = (await self.broker_config(addr)).get("useServerSideResetOffset", "")
        return value.strip().lower() == "true"

    # ---- broker: write side ------------------------------------------------------------------

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
        table = _dict(_body(resp).get("offsetTable")) if resp.body else {}
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
    ) -> None:
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
    ) -> None:
        config = {
            "groupName": group,
            "consumeEnable": True,
            "consumeFromMinEnable": True,
            "consumeBroadcastEnable": broadcast_enable,
            "consumeMessageOrderly": orderly,
            "retryQueueNums": retry_queue_nums,
            "retryMaxTimes": retry_max_times,
        }
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
    ) -> SendResult:
        props = {"WAIT": "true"}
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
            queue_id=_ext_int(resp, "queueId"),
            queue_offset=_ext_int(resp, "queueOffset"),
        )

    # ---- derived answers ----------------------------------------------------------------------

    async def master_addrs(self) -> dict[str, str]:
        """Master address of every broker the name servers list, by broker name."""
        info = await self.cluster_info()
        return {n: b.master_addr for n, b in sorted(info.brokers.items()) if b.master_addr}


# ---- body helpers --------------------------------------------------------------------------------


# How servers word a refusal of who is asking (fact sheet §6): ACL 2.0 (5.3.x) answers
# NO_PERMISSION with "username cannot be null.", "check signature failed.", "User:x is not
# found.", "User:x is disabled."; ACL 1.0 (4.9.x) answers SYSTEM_ERROR with an AclException's
# text ("Check signature failed for accessKey=x", "No acl config for x", "No accessKey is
# configured"). A denied permission says "permission" in both ("x has no permission to access
# Topic:t from ip", "No default permission for t", "Need admin permission for request code=n").
_AUTHENTICATION_WORDS = (
    "signature",
    "username cannot be null",
    "not found",
    "is disabled",
    "accesskey",
    "acl config",
    "authentication",
)


Denial = Literal["authentication", "authorization"]


def access_denial(code: int, remark: str | None) -> Denial | None:
    """Whether an error answer refuses the credentials ("authentication"), what they may do
    ("authorization"), or is no refusal of access at all (None)."""
    text = (remark or "").lower()
    acl_v1 = code == ResponseCode.SYSTEM_ERROR and "aclexception" in text
    if code != ResponseCode.NO_PERMISSION and not acl_v1:
        return None
    if "permission" not in text and any(word in text for word in _AUTHENTICATION_WORDS):
        return "authentication"
    return "authorization"


def _unanswered_reason(error: RocketMQError) -> str:
    """Why a name server did not answer, in a few words."""
    if isinstance(error, RequestTimeout):
        return "timed out"
    if isinstance(error, ConnectError):
        return f"cannot connect: {error.reason}"
    if isinstance(error, ConnectionLost):
        return f"connection lost: {error.reason}"
    if isinstance(error, TlsRefused):
        return f"TLS: {error.cause}"
    return str(error)


def _retrieve(future: asyncio.Future[Any]) -> None:
    """A name server's answer nobody waits for any more (another answered): its error is seen."""
    if not future.cancelled():
        future.exception()


def _field(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _body(resp: Command) -> dict[Any, Any]:
    if not resp.body:
        return {}
    value = fastjson.loads(resp.body)
    if not isinstance(value, dict):
        raise ProtocolError(f"response body of {resp.code} is not an object")
    return value


def _dict(value: Any) -> dict[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ProtocolError(f"expected an object, got {type(value).__name__}")
    return value


def _list(value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ProtocolError(f"expected an array, got {type(value).__name__}")
    return value


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _ext_int(resp: Command, name: str) -> int:
    raw = resp.ext_fields.get(name)
    try:
        return int(raw) if raw is not None else 0
    except ValueError:
        raise ProtocolError(f"response field {name!r} is not an integer: {raw!r}") from None


def _broker(data: Any) -> Broker:
    d = _dict(data)
    addrs = {int(k): str(v) for k, v in _dict(d.get("brokerAddrs")).items()}
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


def _subscription_group(name: str, c: dict[Any, Any]) -> SubscriptionGroup:
    return SubscriptionGroup(
        name=str(c.get("groupName", name)),
        consume_enable=bool(c.get("consumeEnable", True)),
        consume_broadcast_enable=bool(c.get("consumeBroadcastEnable", True)),
        consume_message_orderly=bool(c.get("consumeMessageOrderly", False)),
        retry_queue_nums=int(c.get("retryQueueNums", 1)),
        retry_max_times=int(c.get("retryMaxTimes", 16)),
    )


def _freeze_key(value: Any) -> Any:
    """A MessageQueue written as a plain (standard JSON) object, made into key form."""
    if isinstance(value, dict):
        return tuple(sorted(value.items()))
    return value


def _properties(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        out[key.strip()] = value.strip()
    return out
