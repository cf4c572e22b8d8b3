"""RocketMQ 5's consumers, read right (fixture `proxy_cluster`: two brokers with a proxy in
front and console.sandbox.pop's two groups on `clicks`, each holding every message it was
handed).

Under POP the brokers' committed offsets are at the max on every queue: their consume stats say
lag 0. `click-counter` (remoting, POP) reports what it popped and did not ack in its running
info: the console counts it in the lag, complete (exit 0). `click-audit` (a gRPC SimpleConsumer
through the proxy) cannot be asked: the console lists it with its proxy and takes what it popped
and did not ack from the brokers' metrics, or, without them, marks that part unknown (partial,
exit 1), never lag 0 exit 0; so it does for a gRPC group whose clients stopped, while the
brokers still list it (10 minutes), and with each broker's metrics given an option of its own.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from console.rocketmq.admin import AdminClient
from console.rocketmq.running_info import consumer_running_info
from console.sandbox.pop import GROUP_GRPC, GROUP_POP, TOPIC_CLICKS
from console.sandbox.runner import Sandbox
from console.sandbox.seed import commit_offsets
from console.services.apply.offset_writer import OffsetWrite
from console.services.read.broker_metrics import scrape
from tests.support.pop import popped_everything
from tests.support.terminal import Tmux


def rmq_console(*args: str, config: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("rmq-console")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RMQ_CONSOLE_CONFIG": str(config)}
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pop") / "config.yaml"
    path.write_text("{}\n")
    return path


def lag(sb: Sandbox, group: str, config: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return rmq_console("lag", "-g", group, "--namesrv", sb.namesrv_addr, *extra, config=config)


async def wait_ack_count(sb: Sandbox, group: str) -> int:
    """What the group's clients say they popped and did not ack (their running info)."""
    async with sb.admin(timeout=8.0) as admin:
        addr = next(iter(sb.broker_addrs.values()))
        clients = (await admin.consumer_connections(addr, group)).clients
        assert clients, f"{group} has no client online"
        total = 0
        for c in clients:
            info = await consumer_running_info(admin, addr, group, c.client_id, timeout=8.0)
            total += sum(info.pop_wait_ack.values())
        return total


async def broker_lag(admin: AdminClient, sb: Sandbox, group: str) -> int:
    """max - committed over the group's topic as the brokers' consume stats say."""
    total = 0
    for addr in sb.broker_addrs.values():
        stats = await admin.consume_stats(addr, group, TOPIC_CLICKS)
        total += sum(q.broker_offset - q.consumer_offset for q in stats.queues.values())
    return total


async def test_a_remoting_pop_group_counts_what_it_popped_and_did_not_ack(
    proxy_cluster: Sandbox, config: Path
) -> None:
    sb = proxy_cluster
    assert sb.pop is not None
    async with sb.admin() as admin:
        # What mqadmin and the console used to show: every message consumed.
        assert await broker_lag(admin, sb, GROUP_POP) == 0
    proxy = ("--proxy", sb.proxy_addr or "")
    # Held messages are revived (and popped again) every 5 minutes: compare with the
    # client's own count taken just before and just after the console's read.
    for _ in range(3):
        before = await wait_ack_count(sb, GROUP_POP)
        result = lag(sb, GROUP_POP, config, "--json", *proxy)
        after = await wait_ack_count(sb, GROUP_POP)
        if before == after:
            break
    assert before == after
    assert before >= sb.pop.messages  # it popped the whole topic and acked none
    assert (result.returncode, result.stderr) == (0, "")  # complete: its client answered
    doc: dict[str, Any] = json.loads(result.stdout)
    assert doc["partial"] is False
    assert doc["consumption"]["kinds"] == ["POP"]
    assert (doc["consumption"]["remoting"], doc["consumption"]["grpc"]) == (True, False)
    assert doc["popped_unacked"] == before
    assert {p["source"] for p in doc["pop_in_flight"]} == {"clients' running info (waitAckCount)"}
    unpopped = sum(q["lag"] for q in doc["queues"] if q["topic"] == TOPIC_CLICKS)
    assert doc["total_lag"] == unpopped + before
    assert [c["proxy"] for c in doc["clients"]] == [None]

    text = lag(sb, GROUP_POP, config, *proxy)
    assert text.returncode == 0
    assert "consumption POP, remoting" in text.stdout
    assert f"POP: popped and not acked {before}" in text.stdout

    # The brokers' own metric is blind to it: the broker takes a group with remoting clients
    # for a push group, and counts nothing in flight (which is why it is not used for one).
    metrics = [s for u in sb.cluster.metrics_urls.values() for s in await scrape(u, 10.0)]
    ours = [s for s in metrics if s.group == GROUP_POP and s.topic == TOPIC_CLICKS]
    assert ours
    assert all(s.messages == 0 for s in ours)


async def test_a_grpc_group_is_listed_with_its_proxy_and_its_lag_is_never_a_silent_zero(
    proxy_cluster: Sandbox, config: Path
) -> None:
    sb = proxy_cluster
    assert sb.proxy_addr is not None
    async with sb.admin() as admin:
        assert await broker_lag(admin, sb, GROUP_GRPC) == 0  # everything popped
        for addr in sb.broker_addrs.values():  # the brokers do not know its client
            assert (await admin.consumer_connections(addr, GROUP_GRPC)).clients == []

    result = lag(sb, GROUP_GRPC, config, "--json", "--proxy", sb.proxy_addr)
    assert result.returncode == 1  # partial: what it popped and did not ack is unknown
    doc: dict[str, Any] = json.loads(result.stdout)
    assert doc["partial"] is True
    assert [(m["part"], m["name"], m["why"]) for m in doc["missing"]] == [
        ("in-flight", GROUP_GRPC, "not reported")
    ]
    (client,) = doc["clients"]
    assert client["proxy"] == sb.proxy_addr
    assert client["language"] == "JAVA"
    assert doc["consumption"]["kinds"] == ["POP"]
    assert (doc["consumption"]["remoting"], doc["consumption"]["grpc"]) == (False, True)
    assert doc["online"] is True
    assert "in-flight" in result.stderr

    # With the brokers' metrics, what it popped and did not ack is known: complete.
    urls = ";".join(sb.cluster.metrics_urls.values())
    result = lag(
        sb, GROUP_GRPC, config, "--json", "--proxy", sb.proxy_addr, "--broker-metrics", urls
    )
    assert (result.returncode, result.stderr) == (0, "")
    doc = json.loads(result.stdout)
    assert doc["partial"] is False
    assert sb.pop is not None
    assert doc["popped_unacked"] == sb.pop.messages == doc["total_lag"]
    assert {p["source"] for p in doc["pop_in_flight"]} == {
        "brokers' metrics (rocketmq_consumer_inflight_messages)"
    }
    assert {p["broker"]: p["messages"] for p in doc["pop_in_flight"]} == {
        b: sum(m for mq, m in sb.pop.max_offsets.items() if mq.broker_name == b)
        for b in sb.broker_addrs
    }

    # Without the proxy the brokers still show the cluster has one: unknown, not OFFLINE 0.
    bare = lag(sb, GROUP_GRPC, config, "--json")
    assert bare.returncode == 1
    doc = json.loads(bare.stdout)
    assert doc["clients"] == []
    assert [(m["part"], m["why"]) for m in doc["missing"]] == [("clients", "not reported")]
    assert "none was asked" in doc["missing"][0]["detail"]

    groups = rmq_console(
        "groups", "--json", "--namesrv", sb.namesrv_addr, "--proxy", sb.proxy_addr, config=config
    )
    assert groups.returncode == 1
    rows = {r["group"]: r for r in json.loads(groups.stdout)["groups"]}
    assert rows[GROUP_GRPC]["partial"] is True
    assert rows[GROUP_GRPC]["consumption"] == "POP, gRPC via proxy"
    assert rows[GROUP_POP]["consumption"] == "POP, remoting"
    assert rows[GROUP_POP]["partial"] is False
    assert rows[GROUP_POP]["popped_unacked"] >= sb.pop.messages if sb.pop else False
    # The proxy's own group is the brokers', not an operator's.
    assert "CID_DefaultHeartBeatSyncerTopic" not in rows


def test_each_brokers_metrics_given_an_option_of_its_own_are_all_read(
    proxy_cluster: Sandbox, config: Path
) -> None:
    # As an operator gives them: one --broker-metrics per broker. The option kept the last one
    # only: broker-b's part counted, broker-a's "not among the endpoints", "≥28, partial".
    sb = proxy_cluster
    assert sb.proxy_addr is not None
    assert sb.pop is not None
    each = [arg for url in sb.cluster.metrics_urls.values() for arg in ("--broker-metrics", url)]
    result = lag(sb, GROUP_GRPC, config, "--json", "--proxy", sb.proxy_addr, *each)
    assert (result.returncode, result.stderr) == (0, "")
    doc = json.loads(result.stdout)
    assert doc["popped_unacked"] == sb.pop.messages == doc["total_lag"]


async def test_a_grpc_group_whose_client_stopped_still_counts_what_it_held(
    proxy_cluster: Sandbox, config: Path
) -> None:
    # A SimpleConsumer holds every message of `clicks`, then stops: its messages stay popped
    # and unacked (invisible for an hour), the committed offsets at the max. No client is
    # listed anywhere now; the brokers' metrics still count the group's in-flight (for 10
    # minutes after its last pop). It read "OFFLINE, total lag 0", exit 0.
    sb = proxy_cluster
    assert sb.proxy_addr is not None
    assert sb.pop is not None
    group = f"audit-stopped-{uuid.uuid4().hex[:6]}"
    async with sb.admin(timeout=10) as admin:
        for addr in sb.broker_addrs.values():
            await admin.create_group(addr, group)
        writes = (
            OffsetWrite(sb.broker_addrs[mq.broker_name], group, mq.topic, mq.queue_id, 0)
            for mq in sb.pop.max_offsets
        )
        await commit_offsets(admin, writes)  # from the first message, as click-audit
        consumer = await sb.start_grpc_consumer(group, TOPIC_CLICKS, hold=1_000_000)
        await popped_everything(sb, group, TOPIC_CLICKS)
        await consumer.stop()
        await no_client_of(admin, sb.proxy_addr, group)
    urls = ";".join(sb.cluster.metrics_urls.values())
    result = lag(sb, group, config, "--json", "--proxy", sb.proxy_addr, "--broker-metrics", urls)
    assert (result.returncode, result.stderr) == (0, "")
    doc = json.loads(result.stdout)
    assert (doc["online"], doc["clients"], doc["consumption"]["kinds"]) == (False, [], ["POP"])
    assert doc["popped_unacked"] == sb.pop.messages == doc["total_lag"]


async def no_client_of(admin: AdminClient, proxy: str, group: str, timeout: float = 30.0) -> None:
    """Until the proxy lists no client of `group` (a stopped SimpleConsumer unregisters)."""
    deadline = time.monotonic() + timeout
    while (await admin.consumer_connections(proxy, group)).clients:
        assert time.monotonic() < deadline, f"the proxy still lists a client of {group}"
        await asyncio.sleep(0.2)


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    session = Tmux(f"rmqc-pop-{uuid.uuid4().hex[:8]}")
    yield session
    session.kill()


def test_the_console_at_80x24_shows_the_brokers_whole_and_a_grpc_group_with_its_proxy(
    proxy_cluster: Sandbox, tmux: Tmux, tmp_path: Path
) -> None:
    sb = proxy_cluster
    config = tmp_path / "config.yaml"
    config.write_text(f"workspace: {tmp_path / 'ws'}\n")
    console = Path(sys.executable).with_name("rmq-console")
    tmux.start(
        f"env RMQ_CONSOLE_CONFIG={shlex.quote(str(config))} NO_COLOR=1 "
        f"{shlex.quote(str(console))} --namesrv {sb.namesrv_addr} --proxy {sb.proxy_addr}"
    )
    screen = tmux.wait_for(
        lambda s: "broker-a" in s and "broker-b" in s and "UP" in s, "the cluster overview"
    )
    # The broker table fits 80 columns: every column's header, every broker's address.
    (header,) = [line for line in screen.splitlines() if "BROKER" in line and "ROLE" in line]
    assert header.split() == [
        "BROKER", "ROLE", "ADDRESS", "STATE", "VERSION", "IN", "OUT", "SEEN", "NOTE"
    ]  # fmt: skip
    for name, addr in sb.broker_addrs.items():
        (row,) = [line for line in screen.splitlines() if line.strip().startswith(name)]
        assert row.split()[:4] == [name, "MASTER", addr, "UP"], row

    tmux.keys("g")
    tmux.wait_for(lambda s: GROUP_GRPC in s and "refreshed" in s, "the group list")
    tmux.keys("/")
    tmux.text(GROUP_GRPC)
    tmux.wait_for(lambda s: re.search(r"groups · 1/\d+", s) is not None, "the filtered list")
    tmux.keys("Enter", "Enter")
    screen = tmux.wait_for(
        lambda s: f"› {GROUP_GRPC}" in s and "refreshed" in s and "grpc" in s, "the group"
    )
    assert "clu pop/grpc" in screen.replace("\xa0", " ")  # the headline: model and consumption
    assert "in-flight" in screen  # what is unknown, and why
    (client,) = [line for line in screen.splitlines() if f"grpc {sb.proxy_addr}" in line]
    assert "JAVA" in client
    tmux.keys("q")
