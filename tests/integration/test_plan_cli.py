"""`rmq-console plan` drives the same reset flow as the preview, against the sandbox: a
spec plans and exports CSV, the CSV imports back as a new plan of the same targets, bad input is
exit 2 naming the field, and none of it writes to the cluster."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path

import pytest
import yaml

from console.cli import main
from console.sandbox import scenario
from console.sandbox.runner import Sandbox
from console.services.infra.workspace import Workspace
from tests.connect import ConnectServer

GROUP = scenario.GROUP_OFFLINE
TOPIC = scenario.TOPIC_ORDERS


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


def spec_file(tmp_path: Path, strategy: object, group: str = GROUP) -> Path:
    path = tmp_path / "spec.yaml"
    scope = {"cluster": "sandbox", "groups": [group], "topics": [TOPIC]}
    path.write_text(yaml.safe_dump({"scope": scope, "strategy": strategy}))
    return path


async def committed(sandbox: Sandbox) -> dict[tuple[str, int], int | None]:
    async with sandbox.admin() as admin:
        return {
            (broker, q): await admin.query_consumer_offset(addr, GROUP, TOPIC, q)
            for broker, addr in sandbox.broker_addrs.items()
            for q in range(scenario.topic_plan(TOPIC).queues_per_broker)
        }


def test_spec_csv_and_import_through_the_walkthrough(
    sandbox: Sandbox, config: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    before = asyncio.run(committed(sandbox))
    exported = tmp_path / "plan.csv"
    spec = spec_file(tmp_path, {"shift-by": -3})
    args = ["plan", "--cluster", "sandbox", "--spec", str(spec), "--csv", str(exported)]
    assert main([*args, "--boundary"]) == 0
    out = capfd.readouterr().out
    assert "shift-by -3" in out
    assert "dry run: the cluster was not changed" in out
    # Every changed queue with the message its group consumes first after the reset.
    assert "boundaries (first message consumed after the reset" in out
    for (broker, q), offset in before.items():
        assert offset is not None
        assert f"{TOPIC}/{broker}/{q}  {offset} -> {offset - 3}\n  first    @{offset - 3}  " in out
    with exported.open() as f:
        rows = list(csv.DictReader(f))
    assert {(r["broker"], int(r["queue_id"])): int(r["target"]) for r in rows} == {
        k: v - 3 for k, v in before.items() if v is not None
    }

    imported_plan = ["plan", "--cluster", "sandbox", "--import", str(exported), "--json"]
    assert main([*imported_plan, "--boundary"]) == 0
    printed = json.loads(capfd.readouterr().out)
    boundaries = printed["boundaries"]
    assert len(boundaries) == len(before)
    for b in boundaries:
        assert b["first"]["queue_offset"] == b["target"] == before[(b["broker"], b["queue_id"])] - 3
        assert b["first"]["topic"] == TOPIC
        assert b["first_note"] is None
        assert b["last_skipped"] is None  # a replay skips nothing
    header = printed["plan"]
    assert header["spec"]["strategy"]["from-file"] == str(exported)
    imported = Workspace(str(tmp_path / "ws")).read_header(printed["dir"])
    assert imported.imported_from == str(exported)
    assert imported.group_totals()[0].re_consume == 3 * len(before)
    assert asyncio.run(committed(sandbox)) == before  # dry runs both


def test_bad_input_is_exit_2_and_names_the_field(
    sandbox: Sandbox, config: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    spec = spec_file(tmp_path, {"shift-by": -3}, group="no-such-group")
    assert main(["plan", "--cluster", "sandbox", "--spec", str(spec)]) == 2
    err = capfd.readouterr().err
    assert err.startswith("rmq-console: error: scope.groups[0]: no consumer group 'no-such-group'")
    assert not (tmp_path / "ws" / "plans").exists()
