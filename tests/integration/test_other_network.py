"""A cluster on another network (console.sandbox.far: its broker binds 127.0.0.1 and registers
127.0.0.77, where nothing listens), through the real CLI: without a way there the registered
address is named with both ways out; with `--map-address`, with `address_map:` in the config
and with `--socks` (a SOCKS5 server of the test that reaches 127.0.0.77 on its side) the read,
the fleet scan, the plan by timestamp (its lookups in the Spark Connect server's workers), the
apply with its read-back, the undo and a walkthrough all work, and so does the console."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from console.cli import main
from console.config import load_config
from console.remote.proxy import remote_sources
from console.rocketmq.models import BoundaryType
from console.sandbox.far import FAR_BROKER, FAR_GROUP, FAR_HOST, FAR_TOPIC, FarSandbox
from console.sandbox.ports import LOOPBACK
from console.ui.app import make_app
from console.ui.themes import PROJECT_THEMES
from tests.connect import ConnectServer
from tests.support.socks5 import Socks5Server, socks5
from tests.ui.helpers import banner, screen_lines, settle, shown, status


def _config(tmp_path: Path, far: FarSandbox, **cluster: Any) -> Path:
    path = tmp_path / "config.yaml"
    entry = {"name": "far", "namesrv": [far.namesrv_addr], **cluster}
    path.write_text(
        yaml.safe_dump(
            {"clusters": [entry], "workspace": str(tmp_path / "ws"), "spark_master": "local[2]"}
        )
    )
    return path


def _run(capfd: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capfd.readouterr()
    return code, out, err


async def _committed(far: FarSandbox) -> dict[int, int | None]:
    async with far.admin() as admin:
        return {
            q: await admin.query_consumer_offset(far.broker_addr, FAR_GROUP, FAR_TOPIC, q)
            for q in range(4)
        }


async def _at_time(far: FarSandbox, ts_ms: int) -> dict[int, int]:
    async with far.admin() as admin:
        return {
            q: await admin.search_offset(far.broker_addr, FAR_TOPIC, q, ts_ms, BoundaryType.LOWER)
            for q in range(4)
        }


def test_the_registered_address_is_named_with_both_ways_out(
    far_cluster: FarSandbox, capfd: pytest.CaptureFixture[str]
) -> None:
    addr = far_cluster.broker_addr
    args = ("--namesrv", far_cluster.namesrv_addr, "--timeout", "2")
    code, out, err = _run(capfd, "lag", "-g", FAR_GROUP, *args)
    assert code == 2, out + err
    assert (
        f"cannot connect to {addr}, the address {FAR_BROKER} registered with the name server" in err
    )
    assert f"--map-address {addr}=HOST:PORT" in err
    assert "--socks HOST:PORT" in err
    code, out, err = _run(capfd, "brokers", *args, "--json")
    assert code == 1
    (row,) = json.loads(out)
    assert (row["addr"], row["status"]) == (addr, "DOWN")
    assert f"the address {FAR_BROKER} registered with the name server" in row["error"]


@pytest.fixture
def through_socks() -> Iterator[Socks5Server]:
    # The bastion's side of the network: there the registered host is the broker's.
    with socks5({FAR_HOST: LOOPBACK}) as server:
        yield server


@pytest.mark.parametrize("way", ["--map-address", "address_map", "--socks"])
def test_read_plan_apply_verify_and_undo_reach_the_broker(
    far_cluster: FarSandbox,
    warm_cli: ConnectServer,
    through_socks: Socks5Server,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    way: str,
) -> None:
    far = far_cluster
    assert far.seed is not None
    setting = {"address_map": {FAR_HOST: LOOPBACK}} if way == "address_map" else {}
    config = _config(tmp_path, far, **setting)
    reach = {
        "--map-address": ("--map-address", f"{FAR_HOST}={LOOPBACK}"),
        "address_map": (),
        "--socks": ("--socks", through_socks.addr),
    }[way]
    target = ("--config", str(config), "--cluster", "far", *reach)

    code, out, err = _run(capfd, "brokers", *target, "--json")
    assert code == 0, err
    (row,) = json.loads(out)
    reached = far.listen_addr if way != "--socks" else far.broker_addr
    assert (row["addr"], row["reached_addr"], row["status"]) == (far.broker_addr, reached, "UP")

    code, out, err = _run(capfd, "groups", *target, "--json")
    assert code == 0, err
    assert [g["group"] for g in json.loads(out)["groups"]] == [FAR_GROUP]

    code, out, err = _run(capfd, "lag", "-g", FAR_GROUP, *target, "--json")
    assert code == 0, err
    lag = json.loads(out)
    assert {q["queue_id"]: q["committed"] for q in lag["queues"]} == {
        mq.queue_id: o for mq, o in far.seed.committed.items()
    }

    before = asyncio.run(_committed(far))
    first, second = far.seed.batches[1], far.seed.batches[2]
    ts = (first.finished_ms + second.started_ms) // 2
    spec = tmp_path / "spec.yaml"
    scope = {"cluster": "far", "groups": [FAR_GROUP], "topics": [FAR_TOPIC]}
    spec.write_text(yaml.safe_dump({"scope": scope, "strategy": {"to-timestamp": ts}}))
    code, out, err = _run(capfd, "plan", *target, "--spec", str(spec), "--json")
    assert code == 0, err
    plan_id = json.loads(out)["plan"]["id"]
    targets = asyncio.run(_at_time(far, ts))
    assert all(before[q] != t for q, t in targets.items())  # every queue moves

    code, out, err = _run(capfd, "apply", plan_id, *target, "--confirm", FAR_GROUP, "--json")
    assert code == 0, err
    journal = json.loads(out)
    assert {q["state"] for q in journal["queues"]} == {"verified"}
    assert asyncio.run(_committed(far)) == targets

    code, out, err = _run(
        capfd, "undo", journal["apply_id"], *target, "--confirm", FAR_GROUP, "--json"
    )
    assert code == 0, err
    assert asyncio.run(_committed(far)) == before
    if way == "--socks":
        # A walkthrough too: everything before the first message, applied, then undone.
        since = far.seed.batches[0].started_ms - 60_000
        argv = ("walkthrough", "replay-since", "-g", FAR_GROUP, "--answer", f"since={since}")
        code, out, err = _run(capfd, *argv, *target, "--confirm", FAR_GROUP, "--json")
        assert code == 0, out + err
        summary = json.loads(out)
        assert summary["verified"] == summary["queues"] == 4
        assert asyncio.run(_committed(far)) == dict.fromkeys(range(4), 0)
        code, out, err = _run(capfd, "undo", summary["apply"], *target, "--confirm", FAR_GROUP)
        assert code == 0, out + err
        assert asyncio.run(_committed(far)) == before
        # Every connection went through the proxy: the name server's and the broker's.
        assert set(through_socks.asked) == {far.namesrv_addr, far.broker_addr}
    else:
        assert through_socks.asked == []


async def test_the_console_reads_the_far_cluster_through_its_map(
    far_cluster: FarSandbox, tmp_path: Path
) -> None:
    config_path = _config(tmp_path, far_cluster, address_map={FAR_HOST: LOOPBACK})
    config = load_config(config_path)
    cluster = config.cluster("far")
    app = make_app(config, remote_sources(config), cluster=cluster, theme_paths=[PROJECT_THEMES])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "addresses mapped" in banner(app)
        rows = {r["broker"]: r for r in shown(app)}
        assert rows[FAR_BROKER]["state"] == "UP", status(app)
        assert rows[FAR_BROKER]["addr"] == f"{far_cluster.broker_addr} → {far_cluster.listen_addr}"
        await pilot.press("g")
        await settle(pilot)
        screen = "\n".join(screen_lines(app))
        assert FAR_GROUP in screen, status(app)
        assert "DOWN" not in status(app)
