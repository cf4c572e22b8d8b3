"""Reaching a cluster's registered addresses: the address map (config and `--map-address`), a
SOCKS5 proxy (`socks:`, `--socks`), and a registered address that cannot be reached named with
both ways out. Against in-process servers on loopback: 127.0.0.77 stands for an address of
another network (nothing listens there)."""

from __future__ import annotations

import argparse
import asyncio
import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.cli.arguments import add_target_arguments
from console.cli.target import resolve_target
from console.config import ClusterConfig, ConfigError, load_config
from console.domain.gaps import Part, Why, gap
from console.rocketmq import frame
from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import FLAG_RESPONSE
from console.rocketmq.errors import ConnectError, UnreachableAddress
from console.rocketmq.frame import Command
from console.rocketmq.reach import Reach, map_error
from console.services.infra.access import open_admin
from console.services.read.broker_metrics import MetricsUnavailable, scrape
from tests.support.servers import serve
from tests.support.socks5 import socks5

ELSEWHERE = "127.0.0.77"


async def _offset_7(cmd: Command, writer: asyncio.StreamWriter) -> None:
    reply = Command(code=0, opaque=cmd.opaque, flag=FLAG_RESPONSE, ext_fields={"offset": "7"})
    writer.write(frame.encode(reply))


def _registered(addr: str) -> str:
    """`addr` (a server on 127.0.0.1) as a broker on another network would register it."""
    return f"{ELSEWHERE}:{addr.rpartition(':')[2]}"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---- the map itself ------------------------------------------------------------------------


def test_a_host_keeps_the_port_and_a_host_port_maps_that_port_only() -> None:
    reach = Reach.of([("10.1.2.3", "127.0.0.1"), ("10.1.2.4:10911", "127.0.0.1:30911")])
    assert reach.target("10.1.2.3:10911") == "127.0.0.1:10911"
    assert reach.target("10.1.2.3:10921") == "127.0.0.1:10921"
    assert reach.target("10.1.2.4:10911") == "127.0.0.1:30911"
    assert reach.target("10.1.2.4:10921") == "10.1.2.4:10921"  # not mapped
    assert reach.route("10.1.2.4:10911") == "mapped to 127.0.0.1:30911"
    assert reach.route("10.1.2.4:10921") is None
    # One port's entry wins over its host's.
    both = Reach.of([("10.1.2.3", "127.0.0.2"), ("10.1.2.3:10911", "127.0.0.3")])
    assert both.target("10.1.2.3:10911") == "127.0.0.3:10911"
    assert both.target("10.1.2.3:10912") == "127.0.0.2:10912"
    socks = Reach.of([("10.1.2.3", "127.0.0.1")], "127.0.0.1:1080")
    assert socks.route("10.1.2.3:1") == "mapped to 127.0.0.1:1, through SOCKS 127.0.0.1:1080"


@pytest.mark.parametrize(
    ("source", "target", "named"),
    [
        ("10.1.2.3", "127.0.0.1:30911", "maps every port of the host"),
        ("10.1.2.3:port", "127.0.0.1", "not a host or host:port"),
        ("10.1.2.3:10911", "127.0.0.1:0", "not a host or host:port"),
        ("", "127.0.0.1", "expected FROM=TO"),
    ],
)
def test_entries_that_are_not_maps_say_why(source: str, target: str, named: str) -> None:
    why = map_error(source, target)
    assert why is not None
    assert named in why


def test_the_config_takes_a_map_socks_and_the_proxy_port(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "clusters:\n"
        "  - name: far\n"
        "    namesrv: 127.0.0.1:9876\n"
        "    address_map:\n"
        '      "10.1.2.3": "127.0.0.1"\n'
        '      "10.1.2.4:10911": "127.0.0.1:30911"\n'
        "    socks: 127.0.0.1:1080\n"
        "    proxy_port: 18080\n"
    )
    far = load_config(path).cluster("far")
    assert far.address_map == (("10.1.2.3", "127.0.0.1"), ("10.1.2.4:10911", "127.0.0.1:30911"))
    assert (far.socks, far.proxy_port) == ("127.0.0.1:1080", 18080)
    assert far.reach_note == "via SOCKS 127.0.0.1:1080, addresses mapped"
    assert ClusterConfig("near", ("h:1",)).reach_note is None


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        (
            '    address_map:\n      "10.1.2.3": "127.0.0.1:1"\n',
            ":6: clusters.0.address_map.10.1.2.3",
        ),
        ("    address_map: [10.1.2.3]\n", ":5: clusters.0.address_map: expected a mapping"),
        ("    socks: bastion\n", ":5: clusters.0.socks: not a host:port"),
        ("    proxy_port: 0\n", ":5: clusters.0.proxy_port: must be at least 1"),
    ],
)
def test_a_bad_setting_names_the_file_and_line(tmp_path: Path, setting: str, named: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("clusters:\n  - name: far\n    namesrv: 127.0.0.1:9876\n" + "\n" + setting)
    with pytest.raises(ConfigError, match=f"{path}{named}"):
        load_config(path)


def _target(*argv: str) -> ClusterConfig:
    parser = argparse.ArgumentParser()
    add_target_arguments(parser)
    return resolve_target(parser.parse_args(["--namesrv", "127.0.0.1:9876", *argv])).cluster


def test_map_address_repeats_and_socks_replaces() -> None:
    cluster = _target(
        "--map-address",
        "10.1.2.3=127.0.0.1",
        "--map-address",
        "10.1.2.4:10911=127.0.0.1:30911",
        "--socks",
        "127.0.0.1:1080",
    )
    assert cluster.address_map == (
        ("10.1.2.3", "127.0.0.1"),
        ("10.1.2.4:10911", "127.0.0.1:30911"),
    )
    assert cluster.socks == "127.0.0.1:1080"
    with pytest.raises(ConfigError, match="--map-address: '10.1.2.3=127.0.0.1:1': .* maps every"):
        _target("--map-address", "10.1.2.3=127.0.0.1:1")
    with pytest.raises(ConfigError, match="--socks: not a host:port address: 'bastion'"):
        _target("--socks", "bastion")


# ---- the wire client -----------------------------------------------------------------------


def _far_cluster(namesrv: str, **kw: object) -> ClusterConfig:
    return ClusterConfig("far", (namesrv,), **kw)  # type: ignore[arg-type]


async def test_a_mapped_address_is_asked_at_the_address_it_maps_to() -> None:
    async with serve(_offset_7) as addr:
        registered = _registered(addr)
        async with AdminClient(addr, timeout=2) as direct:
            with pytest.raises(ConnectError):
                await direct.max_offset(registered, "T", 0)
        cluster = _far_cluster(addr, address_map=((ELSEWHERE, "127.0.0.1"),))
        async with open_admin(cluster) as admin:
            assert await admin.max_offset(registered, "T", 0) == 7


async def test_a_registered_address_nobody_reaches_is_named_with_both_ways_out() -> None:
    port = _closed_port()
    registered = f"{ELSEWHERE}:{port}"
    async with AdminClient("127.0.0.1:1", timeout=2) as admin:
        admin.broker_roles[registered] = ("broker-a", 0)  # as the name server listed it
        started = asyncio.get_running_loop().time()
        with pytest.raises(UnreachableAddress) as raised:
            await admin.max_offset(registered, "T", 0)
        assert asyncio.get_running_loop().time() - started < 2
    line = str(raised.value)
    assert line.startswith(
        f"cannot connect to {registered}, the address broker-a registered with the name server ("
    )
    assert f"--map-address {registered}=HOST:PORT" in line
    assert "--socks HOST:PORT" in line
    assert "\n" not in line
    # It is a broker down (a slave may answer instead), its line said once.
    missing = gap(Part.BROKER, "broker-a", raised.value)
    assert missing.why is Why.DOWN
    assert missing.line() == f"broker broker-a: {line}"


async def test_an_address_mapped_or_through_socks_that_fails_names_the_way_taken() -> None:
    port = _closed_port()
    registered = f"{ELSEWHERE}:{port}"
    cluster = _far_cluster("127.0.0.1:1", address_map=((ELSEWHERE, "127.0.0.1"),))
    async with open_admin(cluster, timeout=2) as admin:
        admin.broker_roles[registered] = ("broker-a", 0)
        with pytest.raises(ConnectError) as raised:
            await admin.max_offset(registered, "T", 0)
    assert type(raised.value) is ConnectError
    assert str(raised.value).startswith(
        f"cannot connect to {registered} (mapped to 127.0.0.1:{port}): "
    )
    with socks5() as proxy:
        through = _far_cluster("127.0.0.1:1", socks=proxy.addr)
        async with open_admin(through, timeout=2) as admin:
            with pytest.raises(ConnectError) as raised:
                await admin.max_offset(registered, "T", 0)
    assert str(raised.value).startswith(
        f"cannot connect to {registered} (through SOCKS {proxy.addr}): the SOCKS proxy could not"
    )
    dead = f"127.0.0.1:{_closed_port()}"
    async with open_admin(_far_cluster("127.0.0.1:1", socks=dead), timeout=2) as admin:
        with pytest.raises(ConnectError, match=f"the SOCKS proxy {dead} cannot be reached"):
            await admin.max_offset(registered, "T", 0)


async def test_through_socks_the_address_is_asked_of_the_proxy() -> None:
    async with serve(_offset_7) as addr:
        registered = _registered(addr)
        with socks5({ELSEWHERE: "127.0.0.1"}) as proxy:
            async with open_admin(_far_cluster(addr, socks=proxy.addr)) as admin:
                assert await admin.max_offset(registered, "T", 0) == 7
                assert await admin.max_offset(registered, "T", 1) == 7
    # One connection, opened by the proxy to the registered address itself.
    assert proxy.asked == [registered]


# ---- the brokers' metrics ------------------------------------------------------------------

METRICS = (
    'rocketmq_consumer_inflight_messages{node_id="broker-a",consumer_group="G",topic="T",'
    'is_retry="false"} 3.0\n'
)


@pytest.fixture
def metrics_endpoint() -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = METRICS.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


async def test_metrics_are_scraped_where_the_map_or_socks_reaches(metrics_endpoint: str) -> None:
    url = f"http://{_registered(metrics_endpoint)}/metrics"
    with pytest.raises(MetricsUnavailable):
        await scrape(url, 2.0)
    mapped = await scrape(url, 2.0, reach=Reach.of([(ELSEWHERE, "127.0.0.1")]))
    assert [(s.broker, s.messages) for s in mapped] == [("broker-a", 3)]
    with socks5({ELSEWHERE: "127.0.0.1"}) as proxy:
        through = await scrape(url, 2.0, reach=Reach.of(socks=proxy.addr))
    assert [(s.broker, s.messages) for s in through] == [("broker-a", 3)]
    assert proxy.asked == [_registered(metrics_endpoint)]
    nobody = f"http://{ELSEWHERE}:{_closed_port()}/metrics"
    with pytest.raises(MetricsUnavailable, match=r"\(mapped to 127\.0\.0\.1:\d+\)"):
        await scrape(nobody, 2.0, reach=Reach.of([(ELSEWHERE, "127.0.0.1")]))
