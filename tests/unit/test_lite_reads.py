"""Lite groups (RocketMQ 5.5's LiteTopic) against a fake cluster that answers as 5.5.0 brokers
were seen to (tests/integration/test_lite_groups.py runs the same on real ones):

- a lite group has no queue of its own in its consume stats on a broker that keeps offsets in
  RocksDB (configManagerVersion=v2), and its lite topics' queues (`%LMQ%$parent$lite`) on one
  that keeps them in its JSON file; its brokers count it (GET_LITE_GROUP_INFO);
- a v2 broker's count is 0 whatever the lag: unknown, never 0;
- a broker that cannot answer, or whose store cannot be told, is named; one that does not hold
  the group counts nothing;
- the proxy lists a LitePushConsumer as CONSUME_POP: it is a lite consumer, whose offset moves
  as it acks, so nothing it holds is missing from the lag.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from contextlib import redirect_stdout
from typing import Any

import pytest

from console.cli.browse import _group_summary, _note_cell, _print_lag, lag_document
from console.domain.gaps import Part, Why
from console.domain.lag import LagPoint
from console.domain.lag_trend import time_behind_ms
from console.domain.lite import lite_lag, lite_queue
from console.domain.offsets import Consumption, Kind
from console.domain.spec import ResetSpec, Scope, ShiftBy, SpecError, ToGroup
from console.rocketmq.bodies import subscription_group_of
from console.rocketmq.codes import ResponseCode
from console.rocketmq.errors import BrokerError, RequestTimeout
from console.rocketmq.frame import Command
from console.rocketmq.lite_group_body import read as read_body
from console.rocketmq.models import (
    Broker,
    ClientConnection,
    ClusterInfo,
    ConsumerConnection,
    ConsumeStats,
    LiteGroupInfo,
    LiteLagInfo,
    MessageQueue,
    QueueConsumeStats,
    QueueData,
    QueueStats,
    SubscriptionGroup,
    TopicRoute,
)
from console.services.plan.lite_refusal import refuse_lite
from console.services.read.reader import ClusterReader
from console.ui import format as fmt

A, B, PROXY = "10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.5:8080"
GROUP, PARENT = "chat-agents", "chats"
NAMES = {A: "broker-a", B: "broker-b"}

#: What a 5.5.0 broker keeping offsets in its JSON file answered (the sandbox, 2026-11).
JSON_STORE_ANSWER = (
    b'{"earliestUnconsumedTimestamp":-1,"group":"chat-agents","lagCountTopK":[{'
    b'"earliestUnconsumedTimestamp":1795880115170,"lagCount":7,"liteTopic":"session-3"}],'
    b'"lagTimestampTopK":[],"parentTopic":"chats","totalLagCount":7}'
)


def info(total: int, *lags: tuple[str, int, int], by_time: tuple[str, ...] = ()) -> LiteGroupInfo:
    listed = tuple(LiteLagInfo(t, n, ms) for t, n, ms in lags)
    return LiteGroupInfo(
        GROUP,
        PARENT,
        total,
        -1,
        listed,
        tuple(x for x in listed if x.lite_topic in by_time),
    )


class FakeLiteCluster:
    """Two brokers, each holding some of a lite group's lite topics."""

    def __init__(
        self,
        counts: Mapping[str, LiteGroupInfo | Exception],
        *,
        v2: tuple[str, ...] = (),
        config_fails: tuple[str, ...] = (),
        lmq_rows: Mapping[str, tuple[str, int, int]] | None = None,
        ordinary_rows: bool = False,
        lite: bool = True,
        proxy_clients: ConsumerConnection | None = None,
        parent_on: tuple[str, ...] | None = ("broker-a", "broker-b"),
    ) -> None:
        self.counts = counts
        self.parent_on = parent_on
        self.v2 = v2
        self.config_fails = config_fails
        self.lmq_rows = lmq_rows or {}
        self.ordinary_rows = ordinary_rows
        self.lite = lite
        self.proxy_clients = proxy_clients
        self.server_versions: dict[str, int] = {}
        self.timeout = 3.0
        self.tls = None
        self.asked: list[tuple[str, str]] = []

    async def cluster_info(self) -> ClusterInfo:
        brokers = {n: Broker(n, "C", {0: a}) for a, n in NAMES.items()}
        return ClusterInfo(brokers, {"C": sorted(brokers)})

    async def consume_stats(self, addr: str, group: str, topic: str | None = None) -> ConsumeStats:
        name = NAMES[addr]
        rows: dict[MessageQueue, QueueConsumeStats] = {}
        if self.ordinary_rows:
            mq = MessageQueue("orders", name, 0)
            rows[mq] = QueueConsumeStats(mq, 10, 4, 4, 0)
        if name in self.lmq_rows:
            lite_topic, max_offset, committed = self.lmq_rows[name]
            mq = MessageQueue(lite_queue(PARENT, lite_topic), name, 0)
            rows[mq] = QueueConsumeStats(mq, max_offset, committed, committed, 0)
        return ConsumeStats(rows, 0.0)

    async def topic_stats(self, addr: str, topic: str) -> dict[MessageQueue, QueueStats]:
        if topic != "orders":
            raise BrokerError(addr, 202, ResponseCode.TOPIC_NOT_EXIST, "no topic")
        mq = MessageQueue(topic, NAMES[addr], 0)
        return {mq: QueueStats(mq, 0, 10, 0)}

    async def subscription_groups(self, addr: str) -> dict[str, SubscriptionGroup]:
        self.asked.append(("groups", addr))
        bound = PARENT if self.lite else None
        return {GROUP: SubscriptionGroup(GROUP, True, False, False, 1, 16, bound)}

    async def topic_route(self, topic: str) -> TopicRoute:
        """The parent topic's route: its queues on `parent_on` (None: the name server does
        not answer)."""
        if self.parent_on is None or topic != PARENT:
            raise RequestTimeout("127.0.0.1:9876", 105, 3.0)
        return TopicRoute(topic, [], [QueueData(b, 2, 2, 6) for b in self.parent_on])

    async def lite_group_info(self, addr: str, group: str, top: int) -> LiteGroupInfo:
        self.asked.append(("lite", addr))
        answer = self.counts[NAMES[addr]]
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def broker_config(self, addr: str) -> dict[str, str]:
        if NAMES[addr] in self.config_fails:
            raise RequestTimeout(addr, 26, 3.0)
        return {"configManagerVersion": "v2" if NAMES[addr] in self.v2 else "v1"}

    async def consumer_connections(self, addr: str, group: str) -> ConsumerConnection:
        if addr == PROXY and self.proxy_clients is not None:
            return self.proxy_clients
        return ConsumerConnection([], None, None, None)

    async def message_request_modes(self, addr: str) -> dict[tuple[str, str], str]:
        self.asked.append(("modes", addr))
        return {}


async def read(fake: FakeLiteCluster, proxies: tuple[str, ...] = ()) -> Any:
    return await ClusterReader(fake, proxies=proxies).group_offsets(GROUP)  # type: ignore[arg-type]


def test_a_brokers_lite_group_answer_is_read_as_it_was_seen() -> None:
    answer = read_body(Command(code=0, body=JSON_STORE_ANSWER))
    assert (answer.group, answer.parent_topic, answer.total_lag) == (GROUP, PARENT, 7)
    assert answer.earliest_unconsumed_ms == -1
    assert answer.by_count == (LiteLagInfo("session-3", 7, 1795880115170),)
    assert answer.by_time == ()


def test_a_lite_group_is_told_by_its_bind_topic_attribute() -> None:
    lite = subscription_group_of(
        GROUP, {"groupName": GROUP, "attributes": {"lite.bind.topic": "x"}}
    )
    assert lite.lite_bind_topic == "x"
    assert subscription_group_of("g", {"groupName": "g", "attributes": {}}).lite_bind_topic is None
    assert subscription_group_of("g", {"groupName": "g"}).lite_bind_topic is None


def test_the_brokers_counts_are_summed_and_their_lists_merged() -> None:
    merged = lite_lag(
        PARENT,
        {
            "broker-a": info(3, ("session-4", 3, 2000)),
            "broker-b": info(
                9, ("session-3", 7, 3000), ("session-2", 2, 1000), by_time=("session-2",)
            ),
        },
        shown=2,
    )
    assert merged.total == 12
    assert merged.counted == (("broker-a", 3), ("broker-b", 9))
    assert [(x.lite_topic, x.broker, x.lag) for x in merged.by_count] == [
        ("session-3", "broker-b", 7),
        ("session-4", "broker-a", 3),
    ]
    # Oldest unconsumed message first, whichever list named the lite topic.
    assert [x.lite_topic for x in merged.by_time] == ["session-2", "session-4"]
    assert merged.oldest_unconsumed_ms == 1000
    # A lite topic asked of a broker that does not hold it comes back as -1: nothing.
    assert lite_lag(PARENT, {"broker-a": info(-1)}, shown=5).total == 0


async def test_a_lite_group_reads_its_lag_from_its_brokers_count() -> None:
    fake = FakeLiteCluster(
        {"broker-a": info(3, ("session-4", 3, 2000)), "broker-b": info(7, ("session-3", 7, 1))},
        proxy_clients=ConsumerConnection(
            [ClientConnection("vm@1", "10.0.0.7:4000", "JAVA", 513)],
            "CONSUME_POP",
            "LITE_SELECTIVE",
            None,
        ),
    )
    o = await read(fake, proxies=(PROXY,))
    assert o.lite is not None
    assert o.lite.parent_topic == PARENT
    assert o.total_lag == 10
    assert not o.partial, o.gaps
    # The proxy calls it POP; its offset moves as it acks: no in-flight part is missing.
    assert o.consumption == Consumption((Kind.LITE,), remoting=False, grpc=True)
    assert fmt.consumption(o.consumption) == "lite/grpc"
    assert o.pop_in_flight == ()
    assert not any(what == "modes" for what, _ in fake.asked)


async def test_a_v2_brokers_zero_is_unknown_never_zero() -> None:
    """On configManagerVersion=v2 the broker counts 0 whatever its lite topics hold: before
    this, such a group read as lag 0 with nothing missing (exit 0)."""
    fake = FakeLiteCluster({"broker-a": info(0), "broker-b": info(0)}, v2=("broker-a", "broker-b"))
    o = await read(fake)
    assert o.partial
    assert [(g.part, g.name, g.why) for g in o.gaps] == [
        (Part.LITE, f"{GROUP} on broker-a", Why.NOT_REPORTED),
        (Part.LITE, f"{GROUP} on broker-b", Why.NOT_REPORTED),
    ]
    assert "configManagerVersion=v2" in o.gaps[0].detail
    assert f"getLiteGroupInfo -p {PARENT} -g {GROUP} -l LITE_TOPIC" in o.gaps[0].detail
    assert o.lite is not None
    assert o.lite.counted == ()


async def test_a_v2_broker_without_the_parent_topic_holds_none_of_its_lite_topics() -> None:
    """A cluster half moved to RocksDB, the parent topic on the JSON broker only: the v2
    broker holds the group but none of its lite topics (a lite topic lives where its parent's
    queue is), so its 0 is believed; unless the parent's route cannot be read."""
    counts = {"broker-a": info(3, ("s", 3, 5)), "broker-b": info(0)}
    o = await read(FakeLiteCluster(counts, v2=("broker-b",), parent_on=("broker-a",)))
    assert not o.partial
    assert o.total_lag == 3
    assert o.lite is not None
    assert o.lite.counted == (("broker-a", 3), ("broker-b", 0))
    unrouted = await read(FakeLiteCluster(counts, v2=("broker-b",), parent_on=None))
    assert unrouted.partial
    assert [(g.name, g.why) for g in unrouted.gaps] == [(f"{GROUP} on broker-b", Why.NOT_REPORTED)]
    # Where the parent topic is on both, broker-b's 0 is unknown.
    both = await read(FakeLiteCluster(counts, v2=("broker-b",)))
    assert [(g.name, g.why) for g in both.gaps] == [(f"{GROUP} on broker-b", Why.NOT_REPORTED)]


async def test_a_broker_that_cannot_count_or_be_checked_is_named() -> None:
    timed_out = RequestTimeout(B, 200078, 3.0)
    o = await read(FakeLiteCluster({"broker-a": info(3, ("s", 3, 5)), "broker-b": timed_out}))
    assert o.total_lag == 3
    assert o.partial
    assert [(g.part, g.name, g.why) for g in o.gaps] == [
        (Part.LITE, f"{GROUP} on broker-b", Why.TIMEOUT)
    ]
    o = await read(
        FakeLiteCluster({"broker-a": info(3), "broker-b": info(0)}, config_fails=("broker-b",))
    )
    assert [(g.name, g.why) for g in o.gaps] == [(f"{GROUP} on broker-b", Why.UNCHECKED)]


async def test_a_broker_without_the_group_counts_nothing() -> None:
    absent = BrokerError(B, 200078, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "not exist")
    o = await read(FakeLiteCluster({"broker-a": info(3, ("s", 3, 5)), "broker-b": absent}))
    assert (o.total_lag, o.partial) == (3, False)


async def test_lite_topic_queues_a_json_store_lists_are_counted_once() -> None:
    """A JSON-store broker lists the lite topics' LMQ queues among the group's consume stats:
    the brokers' count is their lag, not added to it."""
    fake = FakeLiteCluster(
        {"broker-a": info(0), "broker-b": info(7, ("session-3", 7, 1))},
        lmq_rows={"broker-b": ("session-3", 12, 5)},
    )
    o = await read(fake)
    assert o.queues == ()
    assert o.total_lag == 7


async def test_an_ordinary_group_is_not_asked_about_lite_topics() -> None:
    fake = FakeLiteCluster({}, ordinary_rows=True, lite=False)
    o = await read(fake)
    assert o.lite is None
    assert not any(what in ("lite", "groups") for what, _ in fake.asked)


async def test_lag_and_groups_show_the_lite_group_and_its_lite_topics() -> None:
    o = await read(
        FakeLiteCluster(
            {"broker-a": info(3, ("session-4", 3, 2000)), "broker-b": info(7, ("session-3", 7, 1))}
        )
    )
    text = io.StringIO()
    with redirect_stdout(text):
        _print_lag(o)
    out = text.getvalue()
    assert "lite group of parent topic chats: lag 10, as its brokers count it" in out
    assert "MOST LAG BY COUNT" in out
    assert "MOST LAG BY TIME" in out
    assert out.index("session-3") < out.index("session-4")
    assert "TOPIC  BROKER" not in out  # no queue table of its own
    document = json.loads(json.dumps(lag_document(o)))
    assert document["total_lag"] == 10
    assert document["lite"]["counted_by"] == {"broker-a": 3, "broker-b": 7}
    assert [x["lite_topic"] for x in document["lite"]["most_lag_by_count"]] == [
        "session-3",
        "session-4",
    ]
    row = _group_summary(o)
    assert (row["kind"], row["total_lag"]) == ("lite", 10)
    assert _note_cell(row) == "lite, parent chats: most behind session-3 7, session-4 3"


async def test_the_lag_history_keeps_a_lite_groups_total() -> None:
    o = await read(FakeLiteCluster({"broker-a": info(3, ("s", 3, 5)), "broker-b": info(7)}))
    assert LagPoint.of(o, 1).total_lag == 10


async def test_a_lite_groups_time_behind_is_its_oldest_unconsumed_message() -> None:
    o = await read(FakeLiteCluster({"broker-a": info(3, ("s", 3, 2000)), "broker-b": info(0)}))
    assert time_behind_ms(o, {}) == o.taken_at_ms - 2000
    caught_up = await read(FakeLiteCluster({"broker-a": info(0), "broker-b": info(0)}))
    assert time_behind_ms(caught_up, {}) == 0


class GroupsOnly:
    def __init__(self, lite: set[str]) -> None:
        self.lite = lite

    async def groups(self, *, include_system: bool = False) -> dict[str, SubscriptionGroup]:
        return {
            g: SubscriptionGroup(g, True, False, False, 1, 16, PARENT if g in self.lite else None)
            for g in ("orders-sync", GROUP)
        }


async def test_a_plan_names_a_lite_group_and_what_moves_its_lite_topics() -> None:
    spec = ResetSpec(Scope("c", (GROUP,)), ShiftBy(-3))
    with pytest.raises(SpecError) as refused:
        await refuse_lite(GroupsOnly({GROUP}), spec)  # type: ignore[arg-type]
    assert refused.value.where == "scope.groups[0]"
    problem = refused.value.problem
    assert problem.startswith(f"'{GROUP}' is a lite group (RocketMQ 5.5) of parent topic 'chats'")
    assert "mqadmin resetOffsetByTime -g chat-agents -t '%LMQ%$chats$LITE_TOPIC'" in problem
    assert "mqadmin getLiteGroupInfo -p chats -g chat-agents -l LITE_TOPIC" in problem
    copying = ResetSpec(Scope("c", ("orders-sync",)), ToGroup(GROUP))
    with pytest.raises(SpecError) as refused:
        await refuse_lite(GroupsOnly({GROUP}), copying)  # type: ignore[arg-type]
    assert refused.value.where == "strategy.to-group"
    await refuse_lite(GroupsOnly(set()), spec)  # type: ignore[arg-type]


async def test_the_console_lists_a_lite_groups_lag_and_lite_topics() -> None:
    # deferred: Textual, for the console's two screens only
    from console.ui.screens.group import lite_lines
    from console.ui.screens.groups import kind_text, known_lag

    o = await read(
        FakeLiteCluster({"broker-a": info(3, ("session-4", 3, 2000)), "broker-b": info(0)})
    )
    assert (known_lag(o), kind_text(o)) == (3, "lite")
    assert o.lite is not None
    lines = lite_lines(o.lite, partial=False, now_ms=62_000)
    assert lines[0] == (
        "lite group, parent topic chats: lag 3 as its brokers count it (broker-a 3, broker-b 0)"
    )
    assert lines[1:] == [
        "most behind by count: session-4 3 (broker-a, 1m00s behind)",
        "most behind by time: session-4 3 (broker-a, 1m00s behind)",
    ]
    unknown = await read(
        FakeLiteCluster({"broker-a": info(0), "broker-b": info(0)}, v2=("broker-a",))
    )
    assert unknown.lite is not None
    assert lite_lines(unknown.lite, partial=True, now_ms=0)[0].startswith(
        "lite group, parent topic chats: lag ≥0 as its brokers count it (broker-b 0)"
    )
