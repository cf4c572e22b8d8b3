"""The sandbox's RocketMQ 5 parts: the proxy's ports and config (with TLS too), the timer wheel,
the POP, gRPC and lite programs' command lines, the lite topics' broker keys and releases."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from console.domain.lite import lite_queue
from console.rocketmq.admin import AdminClient
from console.sandbox.cache import Distribution, has_lite_topics
from console.sandbox.certs import make_tls_files
from console.sandbox.cli import example_commands
from console.sandbox.cluster import (
    BROKER_NAMES,
    ClusterSetup,
    SandboxCluster,
    SandboxTls,
    broker_properties,
    proxy_config,
)
from console.sandbox.consumers import ConsumerSpec, GrpcConsumerSpec, LiteClientSpec
from console.sandbox.jvm import PROXY_MAIN
from console.sandbox.lite_scenario import (
    GROUP_LITE,
    LITE_BROKER_KEYS,
    SESSIONS,
    TOPIC_CHATS,
    seed_lite,
)
from console.sandbox.pop import CLICKS, GROUP_GRPC, GROUP_POP, TOPIC_CLICKS
from console.sandbox.ports import default_ports, free_ports, port_free, proxy_ports


def test_the_proxy_has_a_remoting_and_a_grpc_port_next_to_it() -> None:
    assert default_ports(BROKER_NAMES).proxy is None
    assert default_ports(BROKER_NAMES).metrics == {}
    stock = default_ports(BROKER_NAMES, proxy=True)
    assert (stock.proxy, stock.proxy_grpc) == (8080, 8081)
    # With the proxy, the brokers export their metrics (a gRPC group's in-flight count).
    assert stock.metrics == {"broker-a": 5557, "broker-b": 5558}
    ports = free_ports(BROKER_NAMES, proxy=True)
    assert ports.proxy is not None
    every = ports.all_ports()
    assert proxy_ports(ports.proxy) == [ports.proxy, ports.proxy + 1]
    assert set(proxy_ports(ports.proxy)) | set(ports.metrics.values()) <= set(every)
    assert len(every) == len(set(every)) == 11
    assert all(port_free(p) for p in every)


def test_brokers_run_the_timer_wheel_as_real_ones_do(tmp_path: Path) -> None:
    props = broker_properties(ClusterSetup(tmp_path, default_ports(BROKER_NAMES)), "broker-a")
    # Without it every POP is refused ("pop message is forbidden because timerWheelEnable is
    # false"), and RocketMQ 5's consumers all pop.
    assert props["timerWheelEnable"] == "true"
    assert int(props["mappedFileSizeTimerLog"]) == 16 * 1024 * 1024
    assert "metricsExporterType" not in props


def test_a_cluster_no_pop_consumer_reaches_runs_no_timer_or_pop_services(tmp_path: Path) -> None:
    setup = ClusterSetup(tmp_path, default_ports(BROKER_NAMES), serves_pop=False)
    props = broker_properties(setup, "broker-a")
    assert (props["timerWheelEnable"], props["popConsumerFSServiceInit"]) == ("false", "false")
    assert "mappedFileSizeTimerLog" not in props
    served = broker_properties(ClusterSetup(tmp_path, setup.ports), "broker-a")
    assert "popConsumerFSServiceInit" not in served


def test_with_the_proxy_the_brokers_export_their_metrics_on_loopback(tmp_path: Path) -> None:
    config = ClusterSetup(tmp_path, default_ports(BROKER_NAMES, proxy=True))
    props = broker_properties(config, "broker-b")
    assert (props["metricsExporterType"], props["metricsPromExporterHost"]) == ("PROM", "127.0.0.1")
    assert props["metricsPromExporterPort"] == "5558"


def test_the_proxy_runs_in_cluster_mode_in_front_of_the_sandbox(tmp_path: Path) -> None:
    config = ClusterSetup(tmp_path, default_ports(BROKER_NAMES, proxy=True))
    conf = proxy_config(config)
    assert conf["proxyMode"] == "cluster"
    assert conf["rocketMQClusterName"] == config.cluster_name
    assert conf["namesrvAddr"] == "127.0.0.1:9876"
    assert (conf["remotingListenPort"], conf["grpcServerPort"]) == (8080, 8081)
    cluster = SandboxCluster(
        Distribution(tmp_path / "rmq"), Path("/jdk/java"), config, Distribution(tmp_path / "px")
    )
    assert (cluster.proxy_addr, cluster.proxy_grpc_addr) == ("127.0.0.1:8080", "127.0.0.1:8081")
    spec = cluster._launch_spec("proxy")
    argv = list(spec.argv)
    assert argv[argv.index("-cp") + 1] == f"{tmp_path / 'px'}/lib/*"
    assert argv[argv.index(PROXY_MAIN) + 1 :][:4] == [
        "-pc",
        str(tmp_path / "proxy" / "rmq-proxy.json"),
        "-pm",
        "cluster",
    ]
    assert json.loads((tmp_path / "proxy" / "rmq-proxy.json").read_text()) == conf


def test_the_pop_and_grpc_consumers_command_lines(tmp_path: Path) -> None:
    pop = ConsumerSpec(GROUP_POP, GROUP_POP, (TOPIC_CLICKS,), pop=True, hold=True)
    args = pop.program_args("127.0.0.1:9876", tmp_path)
    assert args[args.index("--pop") + 1] == "true"
    assert args[args.index("--hold") + 1] == "true"
    assert ConsumerSpec.main_class == "SandboxConsumer"
    grpc = GrpcConsumerSpec(GROUP_GRPC, GROUP_GRPC, TOPIC_CLICKS, "127.0.0.1:8081", hold=9)
    assert grpc.main_class == "GrpcConsumer"
    assert grpc.program_args("ignored", tmp_path) == [
        "--proxy", "127.0.0.1:8081", "--group", GROUP_GRPC, "--topic", TOPIC_CLICKS, "--hold", "9",
        "--ssl", "false",
    ]  # fmt: skip
    # Uneven, as production is: 10, 14 on broker-a; 12, 16 on broker-b.
    assert [CLICKS.messages_in(b, q) for b in (0, 1) for q in (0, 1)] == [10, 14, 12, 16]


def test_a_tls_proxy_names_its_own_pair_and_enforces_what_the_brokers_do(tmp_path: Path) -> None:
    files = make_tls_files(tmp_path / "tls")
    tls = SandboxTls(files, mutual=True)
    config = ClusterSetup(tmp_path, default_ports(BROKER_NAMES, proxy=True), tls=tls)
    conf = proxy_config(config)
    # Its remoting and gRPC servers read these, not tls.server.*: without them, test mode.
    assert (conf["tlsTestModeEnable"], conf["tlsCertPath"], conf["tlsKeyPath"]) == (
        False,
        str(files.server.cert),
        str(files.server.key),
    )
    cluster = SandboxCluster(
        Distribution(tmp_path / "rmq"), Path("/jdk/java"), config, Distribution(tmp_path / "px")
    )
    argv = list(cluster._launch_spec("proxy").argv)
    for key, value in tls.server_properties().items():
        assert f"-D{key}={value}" in argv
    assert "tlsTestModeEnable" not in proxy_config(
        ClusterSetup(tmp_path, default_ports(BROKER_NAMES, proxy=True))
    )


def test_the_lite_client_and_the_lite_scenario(tmp_path: Path) -> None:
    lite = LiteClientSpec(GROUP_LITE, GROUP_LITE, TOPIC_CHATS, "127.0.0.1:8081", ssl=True)
    assert lite.main_class == "LiteClient"
    assert lite.program_args("ignored", tmp_path) == [
        "--proxy", "127.0.0.1:8081", "--group", GROUP_LITE, "--topic", TOPIC_CHATS,
        "--ssl", "true",
    ]  # fmt: skip
    # Without these the broker stores a lite message in the parent topic only.
    assert LITE_BROKER_KEYS == {"enableLmq": "true", "enableMultiDispatch": "true"}
    assert [has_lite_topics(v) for v in ("4.9.7", "5.3.3", "5.4.0", "5.5.0", "5.5.1", "6.0.0")] == [
        False,
        False,
        False,
        True,
        True,
        True,
    ]


def test_the_sandboxs_example_commands_pass_its_proxy_and_metrics() -> None:
    lines = example_commands(
        "127.0.0.1:9876", "127.0.0.1:8080", ("http://127.0.0.1:5557/metrics", "http://b/m")
    )
    assert lines[0] == (
        "rmq-console --namesrv 127.0.0.1:9876 --proxy 127.0.0.1:8080 "
        "--broker-metrics 'http://127.0.0.1:5557/metrics;http://b/m'"
    )
    assert all("--proxy 127.0.0.1:8080" in line for line in lines)
    assert any(line.startswith(f"rmq-console lag -g {GROUP_GRPC} ") for line in lines)
    # Without a proxy there is none to pass.
    assert all("--proxy" not in line for line in example_commands("127.0.0.1:9876", None))


@dataclass
class _LiteBroker:
    """One broker as the lite scenario sees it, its LiteClient folded in: what is sent is
    stored (`twice`: a send the client retried, stored twice), and a subscribed lite topic is
    consumed at once."""

    name: str
    twice: set[str] = field(default_factory=set)
    held: dict[str, int] = field(default_factory=dict)
    committed: dict[str, int] = field(default_factory=dict)
    subscribed: set[str] = field(default_factory=set)

    async def create_topic(self, *args: Any, **kwargs: Any) -> None:
        return None

    async def create_group(self, *args: Any, **kwargs: Any) -> None:
        return None

    async def topic_route(self, topic: str) -> Any:
        return SimpleNamespace(queues=[SimpleNamespace(broker_name=self.name)])

    async def max_offset(self, addr: str, queue: str, queue_id: int) -> int:
        return self.held.get(queue, 0)

    async def query_consumer_offset(
        self, addr: str, group: str, queue: str, queue_id: int
    ) -> int | None:
        return self.committed.get(queue)

    async def command(self, line: str, timeout: float = 0) -> None:
        verb, lite, *n = line.split()
        queue = lite_queue(TOPIC_CHATS, lite)
        if verb == "subscribe":
            self.subscribed.add(lite)
        elif verb == "unsubscribe":
            self.subscribed.discard(lite)
        else:
            stored = int(n[0]) + (1 if lite in self.twice and self.held.get(queue) else 0)
            self.held[queue] = self.held.get(queue, 0) + stored
        for name in self.subscribed:
            at = lite_queue(TOPIC_CHATS, name)
            self.committed[at] = self.held.get(at, 0)


async def test_the_lite_seed_holds_the_lags_it_finds_a_retried_send_stored_twice() -> None:
    """On a loaded machine the lite producer retries a send whose answer was late, and the
    broker keeps both: the seed waits for what the brokers hold, not for what it sent, and
    says the lags found (7 + 1 for session-3), where the scenario's fixed numbers timed out."""
    broker = _LiteBroker("broker-a", twice={"session-3"})

    async def launch() -> _LiteBroker:
        return broker

    seeded = await seed_lite(cast(AdminClient, broker), {"broker-a": "127.0.0.1:1"}, launch, 5)
    assert seeded.lags == {"session-1": 0, "session-2": 0, "session-3": 8, "session-4": 3}
    assert seeded.total_lag == 11
    assert seeded.brokers == {s.name: "broker-a" for s in SESSIONS}
