"""Reads RocketMQ 5 can fool, against a fake cluster that answers as the real one was seen to
(tests/integration/test_pop_reads.py and test_master_slave.py run the same on real brokers):

- a POP group's brokers say lag 0 on every queue; its remoting client's running info says what
  it popped and did not ack (`mqPopTable`, waitAckCount per broker and topic): in the lag;
- a gRPC group is listed by the proxy only, and nobody reports what it popped: unknown;
- a broker listing one client on several connections is named;
- a slave read while its master is down is checked: a queue it has no offset for, a committed
  offset beyond its max, a group it has not copied, are unknown with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import pytest

from console.domain.gaps import Part, Why
from console.domain.lag import LagPoint
from console.domain.offsets import Consumption, Kind
from console.rocketmq.codes import ResponseCode
from console.rocketmq.errors import BrokerError, ConnectError
from console.rocketmq.models import (
    Broker,
    ClientConnection,
    ClusterInfo,
    ConsumerConnection,
    ConsumeStats,
    HaStatus,
    MessageQueue,
    QueueConsumeStats,
    QueueData,
    QueueStats,
    SubscriptionGroup,
    TopicRoute,
)
from console.rocketmq.reach import DIRECT
from console.rocketmq.running_info import parse_running_info
from console.services.read.group_clients import PROXY_GROUP, ghosts
from console.services.read.reader import ClusterReader
from console.ui import format as fmt

A, B, SLAVE_A, PROXY = "10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.1:10921", "10.0.0.5:8080"
TOPIC = "clicks"
GET_CONSUMER_RUNNING_INFO = 307

#: A Java POP client's running info, as fastjson writes it (MessageQueue keys).
POP_RUNNING_INFO = (
    b'{"mqPopTable":{{"brokerName":"broker-a","queueId":-1,"topic":"clicks"}:'
    b'{"droped":false,"lastPopTimestamp":1795650461111,"waitAckCount":24},'
    b'{"brokerName":"broker-b","queueId":-1,"topic":"clicks"}:'
    b'{"droped":false,"lastPopTimestamp":1795650461185,"waitAckCount":28}},'
    b'"mqTable":{},"properties":{"PROP_CLIENT_VERSION":"V5_3_3"}}'
)


def connection(*clients: tuple[str, str], consume_type: str = "CONSUME_PASSIVELY") -> Any:
    return ConsumerConnection(
        [ClientConnection(cid, addr, "JAVA", 479) for cid, addr in clients],
        consume_type if clients else None,
        "CLUSTERING" if clients else None,
        None,
    )


class FakeCluster:
    """Two brokers (broker-a may be down with its slave up), a proxy, one group."""

    def __init__(
        self,
        *,
        group: str = "g",
        committed: Mapping[str, list[int]] | None = None,
        maxes: Mapping[str, list[int]] | None = None,
        broker_clients: Mapping[str, ConsumerConnection] | None = None,
        proxy_clients: ConsumerConnection | None = None,
        pop_mode: bool = False,
        running_info: bytes = POP_RUNNING_INFO,
        master_a_down: bool = False,
        slave_offsets: Mapping[int, int] | None = None,
        slave_maxes: Mapping[int, int] | None = None,
        slave_knows_group: bool = True,
        proxies_listed: bool = False,
        a_elected_after: int | None = None,
    ) -> None:
        self.group = group
        self.committed = committed or {"broker-a": [10, 14], "broker-b": [12, 16]}
        self.maxes = maxes or {"broker-a": [10, 14], "broker-b": [12, 16]}
        self.broker_clients = broker_clients or {}
        self.proxy_clients = proxy_clients
        self.pop_mode = pop_mode
        self.running_info = running_info
        self.master_a_down = master_a_down
        self.slave_offsets = slave_offsets
        self.slave_maxes = slave_maxes or {}
        self.slave_knows_group = slave_knows_group
        self.proxies_listed = proxies_listed
        #: broker-a's master killed: the name server's answers from this one on list its
        #: slave elected master (controller mode), and the old master refuses connections.
        self.a_elected_after = a_elected_after
        self.cluster_infos = 0
        self.server_versions: dict[str, int] = {}
        self.timeout = 3.0
        self.tls = None
        self.reach = DIRECT
        self.asked: list[tuple[str, str]] = []

    def name_of(self, addr: str) -> str:
        return {A: "broker-a", SLAVE_A: "broker-a", B: "broker-b"}[addr]

    @property
    def a_elected(self) -> bool:
        return self.a_elected_after is not None and self.cluster_infos > self.a_elected_after

    async def cluster_info(self) -> ClusterInfo:
        self.cluster_infos += 1
        a = {1: SLAVE_A} if self.master_a_down else {0: A, 1: SLAVE_A}
        if self.a_elected:
            a = {0: SLAVE_A}
        brokers = {
            "broker-a": Broker("broker-a", "C", a),
            "broker-b": Broker("broker-b", "C", {0: B}),
        }
        return ClusterInfo(brokers, {"C": ["broker-a", "broker-b"]})

    async def consume_stats(self, addr: str, group: str, topic: str | None = None) -> ConsumeStats:
        self.asked.append(("stats", addr))
        if addr == A and self.a_elected_after is not None:
            raise ConnectError(A, "Connection refused")
        name = self.name_of(addr)
        if addr == SLAVE_A:
            held = self.slave_offsets if self.slave_offsets is not None else {}
            rows = {q: (self.slave_maxes.get(q, self.maxes[name][q]), c) for q, c in held.items()}
        else:
            rows = {q: (m, self.committed[name][q]) for q, m in enumerate(self.maxes[name])}
        queues = {
            MessageQueue(TOPIC, name, q): QueueConsumeStats(
                MessageQueue(TOPIC, name, q), m, c, c, 0
            )
            for q, (m, c) in rows.items()
        }
        return ConsumeStats(queues, 0.0)

    async def topic_stats(self, addr: str, topic: str) -> dict[MessageQueue, QueueStats]:
        if topic != TOPIC:
            raise BrokerError(addr, 202, ResponseCode.TOPIC_NOT_EXIST, "no topic")
        name = self.name_of(addr)
        return {
            MessageQueue(TOPIC, name, q): QueueStats(MessageQueue(TOPIC, name, q), 0, m, 0)
            for q, m in enumerate(self.maxes[name])
        }

    async def query_consumer_offset(self, addr: str, group: str, topic: str, q: int) -> int:
        raise AssertionError("no queue reads 0 here")

    async def subscription_groups(self, addr: str) -> dict[str, SubscriptionGroup]:
        if addr == SLAVE_A and not self.slave_knows_group:
            return {}
        return {self.group: SubscriptionGroup(self.group, True, True, False, 1, 16)}

    async def consumer_connections(self, addr: str, group: str) -> ConsumerConnection:
        self.asked.append(("connections", addr))
        if group == PROXY_GROUP:
            if self.proxies_listed:
                return connection(("10.0.0.5@DEFAULT", "10.0.0.5:40000"))
            return connection()
        if addr == PROXY:
            return self.proxy_clients or connection()
        return self.broker_clients.get(self.name_of(addr), connection())

    async def message_request_modes(self, addr: str) -> dict[tuple[str, str], str]:
        return {(TOPIC, self.group): "POP"} if self.pop_mode else {}

    async def topic_route(self, topic: str) -> TopicRoute:
        return TopicRoute(
            topic,
            [],
            [QueueData(n, len(m), len(m), 6) for n, m in sorted(self.maxes.items())],
        )

    async def broker_config(self, addr: str) -> dict[str, str]:
        return {"brokerRole": "SLAVE"}

    async def ha_status(self, addr: str) -> HaStatus:
        assert addr == SLAVE_A
        return HaStatus(False, max_offset=1000, master_flush_offset=1500, last_read_ms=0)

    async def call(self, addr: str, code: int, fields: dict[str, Any], **kw: Any) -> Any:
        assert code == GET_CONSUMER_RUNNING_INFO
        self.asked.append(("running info", str(fields["clientId"])))
        return SimpleNamespace(body=self.running_info)


async def read(fake: FakeCluster, proxies: tuple[str, ...] = (), group: str = "g") -> Any:
    return await ClusterReader(fake, proxies=proxies).group_offsets(group)  # type: ignore[arg-type]


def test_a_pop_clients_running_info_says_what_it_holds_per_broker() -> None:
    info = parse_running_info("c1", POP_RUNNING_INFO)
    assert info.pop_wait_ack == {
        MessageQueue(TOPIC, "broker-a", -1): 24,
        MessageQueue(TOPIC, "broker-b", -1): 28,
    }


async def test_a_remoting_pop_group_counts_its_popped_unacked_messages_in_its_lag() -> None:
    client = connection(("10.0.0.9@counter", "10.0.0.9:5000"))
    fake = FakeCluster(broker_clients={"broker-a": client, "broker-b": client}, pop_mode=True)
    o = await read(fake)
    # The brokers' own numbers: every queue committed at its max.
    assert sum(q.lag or 0 for q in o.topic_queues) == 0
    assert o.consumption == Consumption((Kind.POP,), remoting=True, grpc=False)
    assert o.popped_unacked == 52
    assert o.total_lag == 52
    assert not o.partial
    assert [(p.broker, p.messages) for p in o.pop_in_flight] == [("broker-a", 24), ("broker-b", 28)]
    # The lag history keeps the same total.
    assert LagPoint.of(o, 1).total_lag == 52


async def test_a_push_group_is_not_asked_for_running_info() -> None:
    client = connection(("10.0.0.9@shipping", "10.0.0.9:5000"))
    fake = FakeCluster(broker_clients={"broker-a": client, "broker-b": client})
    o = await read(fake)
    assert o.consumption == Consumption((Kind.PUSH,), remoting=True, grpc=False)
    assert o.pop_in_flight == ()
    assert not any(what == "running info" for what, _ in fake.asked)
    assert fmt.consumption(o.consumption) == "push"


async def test_a_grpc_group_is_listed_by_its_proxy_and_its_in_flight_is_unknown() -> None:
    grpc = connection(("vm@1@0@x", "10.0.0.7:47448"), consume_type="CONSUME_ACTIVELY")
    o = await read(FakeCluster(proxy_clients=grpc), proxies=(PROXY,))
    (client,) = o.clients
    assert (client.client_id, client.proxy, client.transport) == (
        "vm@1@0@x",
        PROXY,
        f"gRPC via proxy {PROXY}",
    )
    assert o.consumption == Consumption((Kind.POP,), remoting=False, grpc=True)
    assert o.partial
    (g,) = o.gaps
    assert (g.part, g.name, g.why) == (Part.IN_FLIGHT, "g", Why.NOT_REPORTED)
    assert o.total_lag == 0  # a lower bound, shown as ≥0
    assert fmt.consumption(o.consumption) == "pop/grpc"


async def test_a_proxy_that_does_not_answer_is_a_gap_for_the_clients() -> None:
    class Silent(FakeCluster):
        async def consumer_connections(self, addr: str, group: str) -> ConsumerConnection:
            if addr == PROXY:
                raise ConnectError(addr, "refused")
            return await super().consumer_connections(addr, group)

    o = await read(Silent(), proxies=(PROXY,))
    assert [(g.part, g.name, g.why) for g in o.gaps] == [(Part.CLIENTS, f"proxy {PROXY}", Why.DOWN)]


async def test_proxies_nobody_asked_leave_a_group_without_clients_unknown() -> None:
    o = await read(FakeCluster(proxies_listed=True))
    (g,) = o.gaps
    assert (g.part, g.why) == (Part.CLIENTS, Why.NOT_REPORTED)
    assert "1 proxy(ies) (at 10.0.0.5)" in g.detail
    # Asked, or none listed: no such gap.
    assert not (await read(FakeCluster(proxies_listed=False))).gaps
    assert not (await read(FakeCluster(proxies_listed=True), proxies=(PROXY,))).gaps


async def test_a_client_listed_on_several_connections_is_named() -> None:
    twice = connection(("10.0.0.9@s", "10.0.0.9:5000"), ("10.0.0.9@s", "10.0.0.9:5001"))
    once = connection(("10.0.0.9@s", "10.0.0.9:5002"))
    o = await read(FakeCluster(broker_clients={"broker-a": once, "broker-b": twice}))
    (ghost,) = o.ghosts
    assert (ghost.broker, ghost.client_id, ghost.connections) == ("broker-b", "10.0.0.9@s", 2)
    assert "rebalances as if it had 1 more consumer" in ghost.line()
    assert len(o.clients) == 1  # one client, however many connections
    assert ghosts({"broker-a": once}) == ()


async def test_a_caught_up_slave_reads_complete() -> None:
    fake = FakeCluster(master_a_down=True, slave_offsets={0: 10, 1: 14})
    o = await read(fake)
    assert o.from_slave == ("broker-a",)
    assert not o.partial
    (lag,) = o.slave_lag
    assert (lag.broker, lag.slave_addr, lag.behind_bytes) == ("broker-a", SLAVE_A, 500)
    assert "500 bytes of commit log behind" in lag.line(0)


async def test_a_master_gone_is_read_at_the_master_the_name_server_names_now() -> None:
    # The routes were read while broker-a's master lived; it is killed and its slave elected
    # (controller mode): the elected replica is read as the master at once, not marked as a
    # slave until the kept routes expire.
    fake = FakeCluster(a_elected_after=1, slave_offsets={0: 10, 1: 14})
    reader = ClusterReader(fake, routes_ttl=60.0)  # type: ignore[arg-type]
    await reader.routes()
    o = await reader.group_offsets("g")
    assert (o.from_slave, o.gaps) == ((), ())
    assert {q.key: q.committed for q in o.queues if q.broker == "broker-a"} == {
        (TOPIC, "broker-a", 0): 10,
        (TOPIC, "broker-a", 1): 14,
    }
    assert ("stats", SLAVE_A) in fake.asked


async def test_a_slave_missing_a_queue_or_behind_on_messages_reads_partial_with_the_reason() -> (
    None
):
    # Queue 0: offsets not synced yet (the slave holds none); queue 1: committed 14 but the
    # slave has only 3 of its messages (not replicated yet).
    fake = FakeCluster(master_a_down=True, slave_offsets={1: 14}, slave_maxes={1: 3})
    o = await read(fake)
    assert o.partial
    found = {(g.part, g.name, g.why) for g in o.gaps}
    assert found == {
        (Part.QUEUE, f"{TOPIC}/broker-a/0", Why.NOT_SYNCED),
        (Part.QUEUE, f"{TOPIC}/broker-a/1", Why.NOT_REPLICATED),
    }
    (q1,) = [q for q in o.queues if q.key == (TOPIC, "broker-a", 1)]
    assert q1.committed is None  # never "lag 0"
    assert q1.lag is None


async def test_a_slave_that_has_not_copied_the_group_is_not_read_as_not_found() -> None:
    fake = FakeCluster(
        master_a_down=True,
        slave_offsets={},
        slave_knows_group=False,
        maxes={"broker-a": [10, 14], "broker-b": []},
        committed={"broker-a": [10, 14], "broker-b": []},
    )
    o = await read(fake)
    assert o.partial
    (g,) = o.gaps
    assert (g.part, g.name, g.why) == (Part.BROKER, "broker-a", Why.NOT_SYNCED)
    assert "has not copied the group" in g.detail


@pytest.mark.parametrize(
    ("consumption", "text"),
    [
        (Consumption(), "?"),
        (Consumption((Kind.PUSH,), remoting=True), "push, remoting"),
        (Consumption((Kind.POP,), grpc=True), "POP, gRPC via proxy"),
        (Consumption((Kind.POP,), remoting=True, grpc=True), "POP, remoting + gRPC via proxy"),
    ],
)
def test_consumption_is_said_in_words(consumption: Consumption, text: str) -> None:
    assert consumption.label() == text


def test_proxies_come_from_the_config_or_the_command_line(tmp_path: Any) -> None:
    import argparse

    from console.cli.arguments import add_target_arguments
    from console.cli.target import resolve_target
    from console.config import load_config

    path = tmp_path / "config.yaml"
    path.write_text(
        "clusters:\n  - name: prod\n    namesrv: 10.0.0.1:9876\n"
        "    proxies: [10.0.0.5:8080, 10.0.0.6:8080]\n"
    )
    (cluster,) = load_config(path).clusters
    assert cluster.proxies == ("10.0.0.5:8080", "10.0.0.6:8080")
    parser = argparse.ArgumentParser()
    add_target_arguments(parser)
    args = parser.parse_args(["--config", str(path), "--proxy", "10.0.0.7:8080;10.0.0.8:8080"])
    assert resolve_target(args).cluster.proxies == ("10.0.0.7:8080", "10.0.0.8:8080")
    args = parser.parse_args(["--config", str(path)])
    assert resolve_target(args).cluster.proxies == ("10.0.0.5:8080", "10.0.0.6:8080")


@pytest.mark.parametrize("suppress", [False, True])
def test_an_option_given_once_per_broker_or_proxy_keeps_every_one(suppress: bool) -> None:
    # `--broker-metrics A --broker-metrics B` read A's broker as unknown: the option kept B.
    import argparse

    from console.cli.arguments import add_target_arguments
    from console.cli.target import resolve_target

    parser = argparse.ArgumentParser()
    add_target_arguments(parser, suppress=suppress)
    args = parser.parse_args(
        ["--namesrv", "10.0.0.1:9876", "--proxy", "10.0.0.5:8080", "--proxy", "10.0.0.6:8080"]
        + ["--broker-metrics", "http://a:5557/metrics;http://b:5557/metrics"]
        + ["--broker-metrics", "http://c:5557/metrics"]
    )
    cluster = resolve_target(args).cluster
    assert cluster.proxies == ("10.0.0.5:8080", "10.0.0.6:8080")
    assert cluster.broker_metrics == (
        "http://a:5557/metrics",
        "http://b:5557/metrics",
        "http://c:5557/metrics",
    )


async def test_a_pop_groups_verdict_names_what_it_popped_and_did_not_ack() -> None:
    from console.domain import readings, triage

    client = connection(("10.0.0.9@counter", "10.0.0.9:5000"))
    o = await read(FakeCluster(broker_clients={"broker-a": client}, pop_mode=True))
    verdict = triage.evaluate([readings.Sample.of(o)], min_samples=1)
    assert verdict.reason.endswith("; 52 popped and not acked (POP)")


def test_a_partial_verdict_tells_a_silent_broker_from_a_missing_part() -> None:
    from console.domain.triage import partial_note

    assert partial_note(["broker-b"]) == "no answer from broker-b"
    assert partial_note(["in-flight g"]) == "missing in-flight g"
    assert partial_note(["broker-b", "in-flight g"]) == (
        "no answer from broker-b; missing in-flight g"
    )


METRICS = """# TYPE rocketmq_consumer_inflight_messages gauge
rocketmq_consumer_inflight_messages{otel_scope_name="broker-meter",cluster="C",consumer_group="g",is_retry="false",is_system="false",node_id="broker-a",node_type="broker",topic="clicks"} 24.0 1795654079887
rocketmq_consumer_inflight_messages{otel_scope_name="broker-meter",cluster="C",consumer_group="g",is_retry="true",is_system="false",node_id="broker-a",node_type="broker",topic="clicks"} 1.0 1795654079887
rocketmq_consumer_inflight_messages{otel_scope_name="broker-meter",cluster="C",consumer_group="other",is_retry="false",is_system="false",node_id="broker-a",node_type="broker",topic="clicks"} 5.0 1795654079887
rocketmq_consumer_lag_messages{otel_scope_name="broker-meter",cluster="C",consumer_group="g",is_retry="false",is_system="false",node_id="broker-a",node_type="broker",topic="clicks"} 24.0 1795654079887
"""  # noqa: E501


def test_the_brokers_in_flight_metric_is_read_per_broker_and_topic() -> None:
    from console.services.read.broker_metrics import in_flight_by_broker, parse_inflight

    samples = parse_inflight(METRICS)
    assert [(s.broker, s.group, s.retry, s.messages) for s in samples] == [
        ("broker-a", "g", False, 24),
        ("broker-a", "g", True, 1),
        ("broker-a", "other", False, 5),
    ]
    (said,) = in_flight_by_broker(samples, "g", [TOPIC]).values()
    assert (said.counted, said.unlisted, said.not_counts) == ({TOPIC: 25}, [], {})
    # A topic the broker lists no sample of the group for is not 0: it says nothing of it.
    (said,) = in_flight_by_broker(samples, "g", ["orders"]).values()
    assert (said.counted, said.unlisted) == ({}, ["orders"])


async def test_a_grpc_groups_in_flight_comes_from_the_brokers_metrics_where_exported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from console.services.read import batch, broker_metrics

    async def scrape(
        url: str, timeout: float, tls: object = None, reach: object = None
    ) -> list[broker_metrics.Inflight]:
        if url.endswith("/b"):
            raise broker_metrics.MetricsUnavailable(f"{url}: refused")
        return broker_metrics.parse_inflight(METRICS)

    monkeypatch.setattr(batch, "scrape", scrape)
    grpc = connection(("vm@1@0@x", "10.0.0.7:47448"), consume_type="CONSUME_ACTIVELY")
    reader = ClusterReader(
        FakeCluster(proxy_clients=grpc),  # type: ignore[arg-type]
        proxies=(PROXY,),
        metrics=("http://a/metrics", "http://b"),
    )
    o = await reader.group_offsets("g")
    assert [(p.broker, p.messages, p.source) for p in o.pop_in_flight] == [
        ("broker-a", 25, "brokers' metrics (rocketmq_consumer_inflight_messages)")
    ]
    assert o.total_lag == 25
    # broker-b's metrics did not answer: its part is unknown, named.
    (g,) = o.gaps
    assert (g.part, g.name, g.why) == (Part.IN_FLIGHT, "g on broker-b", Why.NOT_REPORTED)
    assert "http://b: refused" in g.detail


class MetricsRead:
    """A gRPC group read with the brokers' metrics: `text` by URL (an endpoint not there does
    not answer), the admin client's TLS `tls`; what each scrape was handed is kept."""

    def __init__(
        self, monkeypatch: pytest.MonkeyPatch, text: Mapping[str, str], tls: object = None
    ) -> None:
        from console.services.read import batch

        self.text = text
        self.scraped: list[tuple[str, object]] = []
        monkeypatch.setattr(batch, "scrape", self.scrape)
        grpc = connection(("vm@1@0@x", "10.0.0.7:47448"), consume_type="CONSUME_ACTIVELY")
        fake = FakeCluster(proxy_clients=grpc)
        fake.tls = tls  # type: ignore[assignment]
        self.reader = ClusterReader(fake, proxies=(PROXY,), metrics=tuple(text))  # type: ignore[arg-type]

    async def scrape(
        self, url: str, timeout: float, tls: object = None, reach: object = None
    ) -> list[Any]:
        from console.services.read import broker_metrics

        self.scraped.append((url, tls))
        if url not in self.text:
            raise broker_metrics.MetricsUnavailable(f"{url}: refused")
        return broker_metrics.parse_inflight(self.text[url])


OTHER_GROUP = METRICS.replace('consumer_group="g"', 'consumer_group="other"').replace(
    "broker-a", "broker-b"
)


async def test_a_metric_that_is_not_a_count_leaves_that_brokers_in_flight_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inf = METRICS.replace("broker-a", "broker-b").replace("24.0", "+Inf")
    read = MetricsRead(monkeypatch, {"http://a": METRICS, "http://b": inf})
    o = await read.reader.group_offsets("g")
    assert [(p.broker, p.messages) for p in o.pop_in_flight] == [("broker-a", 25)]
    assert o.total_lag == 25  # a lower bound: broker-b's part is unknown, not 0
    (g,) = o.gaps
    assert (g.part, g.name, g.why) == (Part.IN_FLIGHT, "g on broker-b", Why.NOT_REPORTED)
    assert "on clicks they say +Inf, not a count" in g.detail


async def test_a_broker_whose_metrics_list_no_sample_of_the_group_is_not_read_as_0(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # broker-b answers, for another group only (it forgot this one, or restarted).
    read = MetricsRead(monkeypatch, {"http://a": METRICS, "http://b": OTHER_GROUP})
    o = await read.reader.group_offsets("g")
    assert [(p.broker, p.messages) for p in o.pop_in_flight] == [("broker-a", 25)]
    (g,) = o.gaps
    assert (g.part, g.name, g.why) == (Part.IN_FLIGHT, "g on broker-b", Why.NOT_REPORTED)
    assert "list no rocketmq_consumer_inflight_messages of it on clicks" in g.detail
    assert "10 minutes after its last pop there" in g.detail


async def test_a_broker_no_endpoint_was_given_for_names_whose_endpoints_were(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    o = await MetricsRead(monkeypatch, {"http://a": METRICS}).reader.group_offsets("g")
    (g,) = o.gaps
    assert g.name == "g on broker-b"
    assert "not among the endpoints given, which are broker-a's" in g.detail


async def test_the_metrics_are_scraped_with_the_clusters_tls_and_a_refusal_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from console.services.read import broker_metrics

    tls = object()
    read = MetricsRead(monkeypatch, {"https://a": METRICS}, tls=tls)
    await read.reader.group_offsets("g")
    assert read.scraped == [("https://a", tls)]

    refusal = "https://a: 10.0.0.1:5557: TLS certificate for 10.0.0.1 not trusted (unknown CA)"

    async def refused(
        url: str, timeout: float, tls: object = None, reach: object = None
    ) -> list[Any]:
        raise broker_metrics.MetricsUnavailable(refusal, tls=True)

    monkeypatch.setattr("console.services.read.batch.scrape", refused)
    o = await read.reader.group_offsets("g")
    assert [(g.name, g.why) for g in o.gaps] == [
        ("g on broker-a", Why.TLS),
        ("g on broker-b", Why.TLS),
    ]
    assert all(f"({refusal})" in g.detail for g in o.gaps)


async def test_when_the_brokers_cannot_say_whether_a_group_pops_its_clients_do() -> None:
    from console.rocketmq.errors import RequestTimeout

    class Silent(FakeCluster):
        async def message_request_modes(self, addr: str) -> dict[tuple[str, str], str]:
            raise RequestTimeout(addr, 402, 3.0)

    client = connection(("10.0.0.9@counter", "10.0.0.9:5000"))
    o = await read(Silent(broker_clients={"broker-a": client}))
    assert o.consumption == Consumption((Kind.POP,), remoting=True, grpc=False)
    assert o.popped_unacked == 52

    # A push client says it holds nothing popped: a push group still.
    push = Silent(broker_clients={"broker-a": client}, running_info=b'{"mqTable":{}}')
    o = await read(push)
    assert o.consumption == Consumption((Kind.PUSH,), remoting=True, grpc=False)
    assert o.pop_in_flight == ()
