"""A RocketMQ 5 cluster with a proxy, configured as an operator configures it (`proxies:` naming
the proxy's remoting address): an offline group of the test's own is planned, applied, verified
and undone through every door, the command line, a walkthrough and the console. Each door
builds the cluster's reader from the config (console/services/read/open_reader.py), so each asks
the proxy who consumes the group: none reads it as partial ("proxies nobody asked"), and the
plan says the path the apply takes.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from textual.pilot import Pilot
from textual.widgets import DataTable

from console.cli import main
from console.config import load_config
from console.locations import CACHE_ENV
from console.remote.proxy import remote_sources
from console.rocketmq.codes import RequestCode
from console.rocketmq.connection import ConnectionPool
from console.rocketmq.frame import Command
from console.sandbox.pop import GROUP_GRPC, TOPIC_CLICKS
from console.sandbox.runner import Sandbox
from console.services.infra.spark_runner import SparkRunner
from console.ui.app import make_app
from console.ui.screens.apply import ApplyResultDialog, ConfirmApplyDialog
from console.ui.screens.history import HistoryScreen
from console.ui.themes import PROJECT_THEMES
from tests.connect import ConnectServer
from tests.support.console_keys import open_group, preview_shift_by, settled
from tests.support.groups import Queue, fresh_group, offsets_of
from tests.ui.helpers import asked, screen_lines, status

NAME = "proxied"
STEP_TIMEOUT_S = 600.0


@pytest.fixture
def configured(
    proxy_cluster: Sandbox,
    connect: ConnectServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """The config file: the cluster with its proxy named; the CLI plans on the shared warm
    Spark Connect server (as after `spark up`)."""
    assert proxy_cluster.proxy_addr is not None
    entry = proxy_cluster.config_entry(NAME)
    settings = {"workspace": str(tmp_path / "ws"), "walkthrough_watch": 1}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"clusters": [entry], **settings}))
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(path))
    monkeypatch.setenv(CACHE_ENV, str(connect.cache))
    return path


def offline_group(sb: Sandbox) -> tuple[str, dict[Queue, int]]:
    return fresh_group(sb, TOPIC_CLICKS)


def clicks_of(sb: Sandbox, group: str) -> dict[Queue, int | None]:
    return offsets_of(sb, group, TOPIC_CLICKS)


def run(capfd: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--cluster", NAME])
    out, err = capfd.readouterr()
    return code, out, err


def undone(capfd: pytest.CaptureFixture[str], apply_id: str, group: str) -> None:
    code, out, err = run(capfd, "undo", apply_id, "--confirm", group)
    assert code == 0, out + err
    assert "not reported" not in err


def test_the_command_line_plans_applies_and_undoes_an_offline_group(
    proxy_cluster: Sandbox, configured: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    group, before = offline_group(proxy_cluster)
    spec = tmp_path / "reset.yaml"
    spec.write_text(
        yaml.safe_dump({"scope": {"cluster": NAME, "group": group}, "strategy": {"earliest": {}}})
    )
    code, out, err = run(capfd, "lag", "-g", group)
    assert code == 0, out + err
    assert "OFFLINE" in out

    code, out, err = run(capfd, "plan", "--spec", str(spec), "--json")
    assert code == 0, out + err
    assert "partial" not in err
    planned = json.loads(out)
    assert (planned["partial"], planned["missing"]) == (False, [])
    path = planned["plan"]["reset_paths"][group]
    assert (path["kind"], path["blocker"]) == ("server-side reset", None)

    code, out, err = run(capfd, "apply", planned["plan"]["id"], "--confirm", group, "--json")
    assert code == 0, out + err
    journal = json.loads(out)
    assert {q["state"] for q in journal["queues"]} == {"verified"}
    assert clicks_of(proxy_cluster, group) == dict.fromkeys(before, 0)

    undone(capfd, journal["apply_id"], group)
    assert clicks_of(proxy_cluster, group) == before


def test_a_walkthrough_plans_and_applies_an_offline_group(
    proxy_cluster: Sandbox, configured: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    group, before = offline_group(proxy_cluster)
    since_ms = int(time.time() * 1000) - 24 * 3600 * 1000  # before every message of the topic
    argv = ("walkthrough", "replay-since", "-g", group, "--answer", f"since={since_ms}")
    code, out, err = run(capfd, *argv, "--confirm", group, "--json")
    assert code == 0, out + err
    assert "not reported" not in err
    summary = json.loads(out)
    assert summary["verified"] == summary["queues"] == len(before)
    assert clicks_of(proxy_cluster, group) == dict.fromkeys(before, 0)

    undone(capfd, summary["apply"], group)
    assert clicks_of(proxy_cluster, group) == before


def test_a_grpc_group_is_not_written_while_the_proxies_nobody_asked_may_list_it(
    proxy_cluster: Sandbox,
    connect: ConnectServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """Without `proxies:` the brokers list no client of a gRPC group (its consumers talk to the
    proxy only): who consumes it is unknown, so the plan's path is blocked and the apply refused
    before anything is written, never a direct write under the consumers' pops."""
    config = tmp_path / "config.yaml"
    # No proxies: the operator did not name them, and none answers where they are looked for.
    entry = {**proxy_cluster.config_entry(NAME, proxies=False), "proxy_port": closed_port()}
    config.write_text(yaml.safe_dump({"clusters": [entry], "workspace": str(tmp_path / "ws")}))
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config))
    monkeypatch.setenv(CACHE_ENV, str(connect.cache))
    spec = tmp_path / "reset.yaml"
    spec.write_text(
        yaml.safe_dump(
            {"scope": {"cluster": NAME, "group": GROUP_GRPC}, "strategy": {"earliest": {}}}
        )
    )
    before = clicks_of(proxy_cluster, GROUP_GRPC)

    code, out, err = run(capfd, "plan", "--spec", str(spec), "--json")
    assert code == 1, out + err  # partial: its clients, and what they popped, are unknown
    planned = json.loads(out)
    blocker = planned["plan"]["reset_paths"][GROUP_GRPC]["blocker"]
    assert blocker.startswith("could not tell who is online: ")
    assert f"none was asked (none answered at 127.0.0.1:{entry['proxy_port']}: " in blocker

    code, out, err = run(capfd, "apply", planned["plan"]["id"], "--confirm", GROUP_GRPC)
    assert code == 2, out + err
    assert f"refused: group {GROUP_GRPC}: " in err
    assert "could not tell who is online" in err
    assert "nothing was written" in err
    assert clicks_of(proxy_cluster, GROUP_GRPC) == before
    assert not (tmp_path / "ws" / "journal").exists()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def unnamed(
    proxy_cluster: Sandbox, connect: ConnectServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """The config file without `proxies:`: the proxy is looked for on the hosts the brokers
    list, on the port `proxy_port:` says (the sandbox's proxy is not on the default 8080)."""
    assert proxy_cluster.proxy_addr is not None
    port = int(proxy_cluster.proxy_addr.rpartition(":")[2])
    entry = {**proxy_cluster.config_entry(NAME, proxies=False), "proxy_port": port}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"clusters": [entry], "workspace": str(tmp_path / "ws")}))
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(path))
    monkeypatch.setenv(CACHE_ENV, str(connect.cache))
    return path


def test_the_proxy_the_brokers_list_is_found_by_groups_lag_and_plan(
    proxy_cluster: Sandbox, unnamed: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    proxy = proxy_cluster.proxy_addr
    found = f"rmq-console: proxy {proxy} found"
    code, out, err = run(capfd, "groups", "--json")
    assert code in (0, 1), out + err
    rows = {g["group"]: g for g in json.loads(out)["groups"]}
    assert rows[GROUP_GRPC]["consumption"] == "POP, gRPC via proxy"
    assert "via proxies" not in err
    assert found in err

    code, out, err = run(capfd, "lag", "-g", GROUP_GRPC, "--json")
    doc = json.loads(out)
    assert {c["proxy"] for c in doc["clients"]} == {proxy}, err
    assert doc["proxies"] == [proxy]
    assert "via proxies" not in err
    assert found in err

    group, _ = offline_group(proxy_cluster)
    spec = tmp_path / "reset.yaml"
    spec.write_text(
        yaml.safe_dump({"scope": {"cluster": NAME, "group": group}, "strategy": {"earliest": {}}})
    )
    code, out, err = run(capfd, "plan", "--spec", str(spec), "--json")
    assert code == 0, out + err
    planned = json.loads(out)
    assert (planned["partial"], planned["missing"]) == (False, [])
    path = planned["plan"]["reset_paths"][group]
    assert (path["kind"], path["blocker"]) == ("server-side reset", None)


def test_a_scan_asks_each_server_once_for_a_group_and_only_the_proxy_after_the_brokers(
    proxy_cluster: Sandbox,
    unnamed: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A group no broker lists a client for is asked of the proxy found, not of the brokers
    # again: a fleet's groups are mostly such, and each was a request more.
    asked: Counter[tuple[str, str]] = Counter()
    request = ConnectionPool.request

    async def counted(
        self: ConnectionPool,
        addr: str,
        code: int,
        fields: dict[str, str] | None,
        body: bytes,
        timeout: float,
    ) -> Command:
        if code == RequestCode.GET_CONSUMER_CONNECTION_LIST:
            asked[(addr, (fields or {})["consumerGroup"])] += 1
        return await request(self, addr, code, fields, body, timeout)

    monkeypatch.setattr(ConnectionPool, "request", counted)
    code, out, err = run(capfd, "groups", "--json")
    assert code in (0, 1), out + err
    rows = {g["group"]: g for g in json.loads(out)["groups"]}
    assert rows[GROUP_GRPC]["consumption"] == "POP, gRPC via proxy"
    proxy = proxy_cluster.proxy_addr
    assert asked[(proxy, GROUP_GRPC)] == 1
    assert [(where, n) for where, n in asked.items() if n > 1] == []
    by_group = Counter(group for addr, group in asked if addr != proxy)
    assert by_group[GROUP_GRPC] == 1  # one broker, once: the listing asks the first that answers


async def test_the_console_finds_the_proxy_and_says_so(
    proxy_cluster: Sandbox, unnamed: Path
) -> None:
    config = load_config(unnamed)
    cluster = config.cluster(NAME)
    app = make_app(config, remote_sources(config), cluster=cluster, theme_paths=[PROJECT_THEMES])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_group(pilot, app, GROUP_GRPC)
        await pilot.press("r")
        await settled(pilot)
        shown = "\n".join(screen_lines(app))
        # Its gRPC client is listed with the proxy it came through.
        assert f"grpc {proxy_cluster.proxy_addr}" in shown.replace("\xa0", " "), shown
        assert f"proxy {proxy_cluster.proxy_addr} found" in status(app)


async def confirmed(pilot: Pilot[int], group: str) -> ApplyResultDialog:
    """The confirm dialog answered with the group's name; the result shown after the write."""
    await asked(pilot, timeout_s=STEP_TIMEOUT_S)
    app = pilot.app
    assert isinstance(app.screen, ConfirmApplyDialog), status(app)
    await pilot.click("#confirm-group")
    await pilot.press(*group, "enter")
    await settled(pilot)
    result = app.screen
    assert isinstance(result, ApplyResultDialog), "\n".join(screen_lines(app))
    table = result.query_one("#apply-queues", DataTable)
    assert {table.get_row_at(i)[0] for i in range(table.row_count)} == {"verified"}
    return result


async def test_the_console_previews_applies_and_undoes_an_offline_group(
    proxy_cluster: Sandbox, configured: Path, plan_runner: SparkRunner
) -> None:
    group, before = await asyncio.to_thread(offline_group, proxy_cluster)
    config = load_config(configured)
    cluster = config.cluster(NAME)
    app = make_app(config, remote_sources(config), cluster=cluster, theme_paths=[PROJECT_THEMES])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_group(pilot, app, group)
        assert "not reported" not in "\n".join(screen_lines(app))
        await preview_shift_by(pilot, app, -2)
        shown = "\n".join(screen_lines(app))
        assert "server-side reset" in shown
        assert "partial" not in shown.lower()
        await pilot.press("a")
        applied = await confirmed(pilot, group)
        assert await asyncio.to_thread(clicks_of, proxy_cluster, group) == {
            q: v - 2 for q, v in before.items()
        }

        await pilot.press("escape")
        await settled(pilot)
        await pilot.press("H")
        await settled(pilot)
        assert isinstance(app.screen, HistoryScreen), status(app)
        await pilot.press("u")
        back = await confirmed(pilot, group)
        assert back.journal.undo_of == applied.journal.apply_id
    assert await asyncio.to_thread(clicks_of, proxy_cluster, group) == before
