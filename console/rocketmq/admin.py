"""The async admin client: name server and broker operations as typed calls.

Broker operations take the broker's address (its master, `Broker.master_addr`, or for reads a
slave); finding which brokers hold a topic or a group is the caller's business (see
`console.services`), so every operation here is one request. A name-server operation asks the name
servers in turn (`console.rocketmq.namesrv`): the next one when one cannot be reached, and also when
one is slower than `HEDGE_S` to answer (console/rocketmq/transport.py). Every broker address a name
server lists is remembered with its broker id, and a write request to an address listed as a slave
is refused before it is sent (`NotMaster`): offsets are written to masters only. What a broker's
answer means beyond itself, such as whether a commit it acknowledged took effect, is for the
services to find out (`console.services.apply.offset_writer`).
"""

from __future__ import annotations

from . import consume_stats_body, lite_group_body, offset_table_body
from .bodies import (
    body_of,
    broker_of,
    dict_of,
    ext_int,
    freeze_key,
    list_of,
    message_queue_from_key,
    opt_str,
    properties_of,
    subscription_group_of,
)
from .codes import RequestCode, ResponseCode
from .controller import ControllerRequests
from .errors import (
    BrokerError,
)
from .frame import Command
from .message import decode_messages
from .models import (
    BoundaryType,
    ClientConnection,
    ClusterInfo,
    ConsumerConnection,
    ConsumeStats,
    ConsumeTimeSpan,
    HaStatus,
    LiteGroupInfo,
    MessageQueue,
    PullResult,
    PullStatus,
    QueueData,
    QueueStats,
    SubscriptionGroup,
    TopicRoute,
)
from .writes import BrokerWrites

#: The group an admin pulls with (the brokers create it for their tools; mqadmin uses it too).
TOOLS_GROUP = "TOOLS_CONSUMER"
#: What a connection list is answered with: the group's connections, or that none is online.
_CONNECTIONS_ANSWERED = (ResponseCode.SUCCESS, ResponseCode.CONSUMER_NOT_ONLINE)
#: PullSysFlag: the subscription is in the request (bit 2); no commit, no suspend.
PULL_SYS_FLAG = 0x4
_PULL_ANSWERS = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.RETRY_IMMEDIATELY,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_MOVED,
}


class AdminClient(BrokerWrites, ControllerRequests):
    """The cluster's operations as typed calls, each one request (console/rocketmq/transport.py
    sends it; the writes are console/rocketmq/writes.py's, the controller's
    console/rocketmq/controller.py's)."""

    # ---- name server -------------------------------------------------------------------------

    async def cluster_info(self) -> ClusterInfo:
        resp = await self.call_namesrv(RequestCode.GET_BROKER_CLUSTER_INFO)
        body = body_of(resp)
        brokers = {
            str(name): self._learn(broker_of(data))
            for name, data in dict_of(body.get("brokerAddrTable")).items()
        }
        clusters = {
            str(name): sorted(str(b) for b in list_of(members))
            for name, members in dict_of(body.get("clusterAddrTable")).items()
        }
        return ClusterInfo(brokers=brokers, clusters=clusters)

    async def topic_list(self) -> list[str]:
        resp = await self.call_namesrv(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        return sorted(str(t) for t in list_of(body_of(resp).get("topicList")))

    async def topics_by_cluster(self, cluster: str) -> list[str]:
        resp = await self.call_namesrv(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": cluster})
        return sorted(str(t) for t in list_of(body_of(resp).get("topicList")))

    async def topic_route(self, topic: str) -> TopicRoute:
        resp = await self.call_namesrv(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic, "acceptStandardJsonOnly": True}
        )
        route = _route_of(topic, resp)
        for broker in route.brokers:
            self._learn(broker)
        return route

    async def topic_route_at(self, addr: str, topic: str) -> TopicRoute:
        """The topic's route as the server at `addr` answers it (a proxy serves routes too);
        its addresses are not learnt as the brokers' (a proxy may name itself in them)."""
        resp = await self.call(
            addr,
            RequestCode.GET_ROUTEINFO_BY_TOPIC,
            {"topic": topic, "acceptStandardJsonOnly": True},
        )
        return _route_of(topic, resp)

    # ---- broker: read side -------------------------------------------------------------------

    async def broker_config(self, addr: str) -> dict[str, str]:
        resp = await self.call(addr, RequestCode.GET_BROKER_CONFIG)
        return properties_of(resp.body.decode("utf-8", errors="replace"))

    async def broker_runtime(self, addr: str) -> dict[str, str]:
        resp = await self.call(addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        return {str(k): str(v) for k, v in dict_of(body_of(resp).get("table")).items()}

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
        for topic, groups in dict_of(body_of(resp).get("messageRequestModeMap")).items():
            for group, body in dict_of(groups).items():
                out[(str(topic), str(group))] = str(dict_of(body).get("mode", ""))
        return out

    async def ha_status(self, addr: str) -> HaStatus:
        """A broker's replication, as it says (GET_BROKER_HA_STATUS): for a slave, its own
        commit log's end and the master's it last heard of."""
        resp = await self.call(addr, RequestCode.GET_BROKER_HA_STATUS)
        body = body_of(resp)
        client = dict_of(body.get("haClientRuntimeInfo"))
        return HaStatus(
            master=bool(body.get("master", False)),
            max_offset=int(client.get("maxOffset", 0)),
            master_flush_offset=int(client.get("masterFlushOffset", 0)),
            last_read_ms=int(client.get("lastReadTimestamp", 0)),
        )

    async def topic_stats(self, addr: str, topic: str) -> dict[MessageQueue, QueueStats]:
        resp = await self.call(addr, RequestCode.GET_TOPIC_STATS_INFO, {"topic": topic})
        out: dict[MessageQueue, QueueStats] = {}
        for key, value in dict_of(body_of(resp).get("offsetTable")).items():
            mq = message_queue_from_key(key)
            v = dict_of(value)
            out[mq] = QueueStats(
                queue=mq,
                min_offset=int(v.get("minOffset", 0)),
                max_offset=int(v.get("maxOffset", 0)),
                last_update_timestamp=int(v.get("lastUpdateTimestamp", 0)),
            )
        return dict(sorted(out.items()))

    async def subscription_groups(self, addr: str) -> dict[str, SubscriptionGroup]:
        resp = await self.call(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        table = dict_of(body_of(resp).get("subscriptionGroupTable"))
        out = {str(name): subscription_group_of(str(name), dict_of(c)) for name, c in table.items()}
        return dict(sorted(out.items()))

    async def consume_time_span(
        self, addr: str, topic: str, group: str
    ) -> dict[MessageQueue, ConsumeTimeSpan]:
        """Per queue: earliest, latest and last-consumed store times, and how far behind."""
        resp = await self.call(
            addr, RequestCode.QUERY_CONSUME_TIME_SPAN, {"topic": topic, "group": group}
        )
        out: dict[MessageQueue, ConsumeTimeSpan] = {}
        for item in map(dict_of, list_of(body_of(resp).get("consumeTimeSpanSet"))):
            mq = message_queue_from_key(freeze_key(item.get("messageQueue")))
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
        return consume_stats_body.read(resp)

    async def lite_group_info(self, addr: str, group: str, top: int) -> LiteGroupInfo:
        """What the broker counts of a lite group (RocketMQ 5.5): its total lag and the `top`
        lite topics most behind (console/rocketmq/lite_group_body.py says what they hold)."""
        resp = await self.call(addr, RequestCode.GET_LITE_GROUP_INFO, {"group": group, "topK": top})
        return lite_group_body.read(resp)

    async def consumer_connections(self, addr: str, group: str) -> ConsumerConnection:
        """Who is online; a group with no live client comes back with no clients."""
        resp = await self.call(
            addr,
            RequestCode.GET_CONSUMER_CONNECTION_LIST,
            {"consumerGroup": group},
            # An answer, not an error: a fleet scan hears it for most groups.
            ok=_CONNECTIONS_ANSWERED,
        )
        if resp.code == ResponseCode.CONSUMER_NOT_ONLINE:
            return ConsumerConnection([], None, None, None)
        body = body_of(resp)
        clients = [
            ClientConnection(
                client_id=str(c.get("clientId", "")),
                client_addr=str(c.get("clientAddr", "")),
                language=str(c.get("language", "")),
                version=int(c.get("version", 0)),
            )
            for c in map(dict_of, list_of(body.get("connectionSet")))
        ]
        subs = {
            str(t): str(dict_of(s).get("subString", "*"))
            for t, s in dict_of(body.get("subscriptionTable")).items()
        }
        return ConsumerConnection(
            clients=sorted(clients, key=lambda c: c.client_id),
            consume_type=opt_str(body.get("consumeType")),
            message_model=opt_str(body.get("messageModel")),
            consume_from_where=opt_str(body.get("consumeFromWhere")),
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
        return ext_int(resp, "offset")

    async def consumer_offset_table(self, addr: str) -> dict[tuple[str, str], dict[int, int]]:
        """Every offset the broker has committed (its consumerOffset.json): (topic, group) ->
        queue id -> offset. A queue missing here was never committed. One answer for all the
        broker's groups: ask once per read, not per group."""
        resp = await self.call(addr, RequestCode.GET_ALL_CONSUMER_OFFSET)
        return offset_table_body.read(resp)

    async def min_offset(self, addr: str, topic: str, queue_id: int) -> int:
        resp = await self.call(
            addr, RequestCode.GET_MIN_OFFSET, {"topic": topic, "queueId": queue_id}
        )
        return ext_int(resp, "offset")

    async def max_offset(self, addr: str, topic: str, queue_id: int) -> int:
        resp = await self.call(
            addr, RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": queue_id}
        )
        return ext_int(resp, "offset")

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
        return ext_int(resp, "offset")

    async def earliest_store_time(self, addr: str, topic: str, queue_id: int) -> int | None:
        """Store time (epoch ms) of the first available message; None for an empty queue."""
        resp = await self.call(
            addr, RequestCode.GET_EARLIEST_MSG_STORETIME, {"topic": topic, "queueId": queue_id}
        )
        ts = ext_int(resp, "timestamp")
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
            next_begin_offset=ext_int(resp, "nextBeginOffset"),
            min_offset=ext_int(resp, "minOffset"),
            max_offset=ext_int(resp, "maxOffset"),
            messages=messages,
            suggest_broker_id=ext_int(resp, "suggestWhichBrokerId"),
        )

    async def server_side_reset(self, addr: str) -> bool:
        """Whether the broker resets offsets itself (5.1+ `useServerSideResetOffset`)."""
        value = (await self.broker_config(addr)).get("useServerSideResetOffset", "")
        return value.strip().lower() == "true"

    # ---- derived answers ----------------------------------------------------------------------

    async def master_addrs(self) -> dict[str, str]:
        """Master address of every broker the name servers list, by broker name."""
        info = await self.cluster_info()
        return {n: b.master_addr for n, b in sorted(info.brokers.items()) if b.master_addr}


def _route_of(topic: str, resp: Command) -> TopicRoute:
    body = body_of(resp)
    queues = [
        QueueData(
            broker_name=str(q.get("brokerName", "")),
            read_queue_nums=int(q.get("readQueueNums", 0)),
            write_queue_nums=int(q.get("writeQueueNums", 0)),
            perm=int(q.get("perm", 0)),
            topic_sys_flag=int(q.get("topicSysFlag", 0)),
        )
        for q in map(dict_of, list_of(body.get("queueDatas")))
    ]
    brokers = [broker_of(b) for b in list_of(body.get("brokerDatas"))]
    return TopicRoute(
        topic=topic,
        brokers=sorted(brokers, key=lambda b: b.name),
        queues=sorted(queues, key=lambda q: q.broker_name),
    )
