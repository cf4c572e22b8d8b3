"""Against the sandbox: a BROADCASTING group is named client-local by `lag`, `groups`, `snapshot`
and `plan`; a to-timestamp in the future is refused without --allow-future and warned with it; a
plan CSV written with a bare --namesrv imports back the same way."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
import yaml

from console.cli import main
from console.domain.offsets import CLIENT_LOCAL_NOTE
from console.sandbox import scenario
from console.sandbox.runner import Sandbox
from tests.connect import ConnectServer

BROADCAST = scenario.GROUP_BROADCAST
OFFLINE = scenario.GROUP_OFFLINE
STOPPED = scenario.GROUP_RETRY  # committed on every queue of the stable topic
TOPIC = scenario.TOPIC_ORDERS
STABLE = scenario.TOPIC_PAYMENTS


@pytest.fixture
def config(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, warm_cli: ConnectServer
) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "clusters": [{"name": "sandbox", "namesrv": [sandbox.namesrv_addr]}],
                "workspace": str(tmp_path / "ws"),
                "spark_master": "local[2]",
            }
        )
    )
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(path))
    return path


def spec_file(tmp_path: Path, group: str, topic: str, strategy: object) -> Path:
    path = tmp_path / f"spec-{group}.yaml"
    scope = {"cluster": "sandbox", "groups": [group], "topics": [topic]}
    path.write_text(yaml.safe_dump({"scope": scope, "strategy": strategy}))
    return path


def plans(tmp_path: Path) -> list[Path]:
    root = tmp_path / "ws" / "plans"
    return sorted(root.iterdir()) if root.exists() else []


def test_lag_names_a_broadcasting_group_client_local(
    sandbox: Sandbox, config: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    assert main(["lag", "--cluster", "sandbox", "-g", BROADCAST, "--json"]) == 0
    doc = json.loads(capfd.readouterr().out)
    assert doc["message_model"] == "BROADCASTING"
    assert doc["online"]
    assert doc["client_local"] is True
    assert doc["total_lag"] is None  # not 0: the lag is on the consumer hosts
    assert doc["queues"] == []

    assert main(["lag", "--cluster", "sandbox", "-g", BROADCAST]) == 0
    text = capfd.readouterr().out
    assert CLIENT_LOCAL_NOTE in text
    assert "total lag unknown (client-local)" in text
    assert "total lag 0" not in text

    assert main(["lag", "--cluster", "sandbox", "-g", OFFLINE, "--json"]) == 0
    assert json.loads(capfd.readouterr().out)["client_local"] is False


def test_groups_names_a_broadcasting_group_client_local_never_lag_0(
    sandbox: Sandbox, config: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    assert main(["groups", "--cluster", "sandbox", "--json"]) == 0
    rows = {r["group"]: r for r in json.loads(capfd.readouterr().out)["groups"]}
    broadcast = rows[BROADCAST]
    assert (broadcast["message_model"], broadcast["client_local"]) == ("BROADCASTING", True)
    assert broadcast["total_lag"] is None  # unknown: the lag is on the consumer hosts
    assert broadcast["partial"] is False
    assert (rows[OFFLINE]["client_local"], rows[OFFLINE]["total_lag"] > 0) == (False, True)

    assert main(["groups", "--cluster", "sandbox"]) == 0
    header, *body = capfd.readouterr().out.splitlines()
    lag = header.split().index("LAG")
    (line,) = [row for row in body if row.split()[0] == BROADCAST]
    assert line.split()[lag] == "client-local"
    assert "offsets on each consumer host (offsets.json), none on the brokers" in line


def test_snapshot_names_every_group_asked_for(
    sandbox: Sandbox, config: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    argv = ["snapshot", "--cluster", "sandbox", "-g", OFFLINE, "-g", BROADCAST, "--no-times"]
    assert main(argv) == 0
    out = capfd.readouterr().out.splitlines()
    assert re.match(rf"snapshot \S+: [1-9]\d* queues of {OFFLINE}, {BROADCAST} -> ", out[0])
    assert out[1] == f"{BROADCAST}: {CLIENT_LOCAL_NOTE}"

    assert main([*argv, "--json"]) == 0
    doc = json.loads(capfd.readouterr().out)
    assert doc["groups"] == [OFFLINE, BROADCAST]
    assert doc["client_local"] == [BROADCAST]


def test_plan_explains_the_broadcasting_reset_path(
    sandbox: Sandbox, config: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    spec = spec_file(tmp_path, BROADCAST, TOPIC, "earliest")
    assert main(["plan", "--cluster", "sandbox", "--spec", str(spec)]) == 2
    err = capfd.readouterr().err
    assert err.startswith(f"rmq-console: error: scope.groups[0]: '{BROADCAST}' is a BROADCASTING")
    # This config names no directory of the sandbox's client: where to act instead.
    assert f"none of {BROADCAST} was found here (looked in ~/.rocketmq_offsets)" in err
    assert (
        f"stop the client and edit ~/.rocketmq_offsets/<clientId>/{BROADCAST}/offsets.json" in err
    )
    assert "has no offsets in snapshot" not in err
    assert plans(tmp_path) == []


def test_a_future_time_is_refused_then_warned(
    sandbox: Sandbox, config: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    an_hour_ahead = int(time.time() * 1000) + 3_600_000
    spec = spec_file(tmp_path, STOPPED, STABLE, {"to-timestamp": an_hour_ahead})
    argv = ["plan", "--cluster", "sandbox", "--spec", str(spec)]
    assert main(argv) == 2
    err = capfd.readouterr().err
    assert err.startswith("rmq-console: error: strategy.to-timestamp: ")
    assert "in the future" in err
    assert "--allow-future" in err
    assert plans(tmp_path) == []

    assert main([*argv, "--allow-future", "--json"]) == 0
    doc = json.loads(capfd.readouterr().out)
    queues = 2 * scenario.topic_plan(STABLE).queues_per_broker
    assert doc["plan"]["rows"] == queues
    assert {w["code"]: w["queues"] for w in doc["warnings"]}["after_newest"] == queues
    after = next(w for w in doc["warnings"] if w["code"] == "after_newest")
    assert after["text"].startswith("the time is after the newest message of the queue")


def test_a_csv_written_with_a_bare_namesrv_imports_back(
    sandbox: Sandbox, config: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    exported = tmp_path / "plan.csv"
    spec = spec_file(tmp_path, OFFLINE, TOPIC, {"shift-by": -2})
    bare = ["plan", "--namesrv", sandbox.namesrv_addr]
    assert main([*bare, "--spec", str(spec), "--csv", str(exported)]) == 0
    capfd.readouterr()
    assert main([*bare, "--import", str(exported), "--json"]) == 0, capfd.readouterr().err
    header = json.loads(capfd.readouterr().out)["plan"]
    assert header["spec"]["scope"]["cluster"] == "sandbox"
    assert header["snapshot"]["cluster"] == "sandbox"
