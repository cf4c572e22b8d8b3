"""`rmq-console walkthrough` against the real sandbox, as a script or a ticket runs it: answers
on the command line, the plan on the warm Spark Connect server (as after `spark up`), the apply
confirmed by `--confirm`, a JSON summary, the report on disk. Bad input is refused before
anything is planned: an unknown walkthrough or group, an answer that cannot be used (a time in
the future), a malformed team walkthrough (named by file and line; the others still run)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from console.cli import main
from console.locations import CACHE_ENV
from console.sandbox.runner import Sandbox
from tests.connect import ConnectServer
from tests.support.groups import fresh_group, offsets_of


@pytest.fixture
def configured(
    sandbox: Sandbox, connect: ConnectServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    config = tmp_path / "config.yaml"
    cluster = sandbox.config_entry("sandbox")
    settings = {"workspace": str(tmp_path / "ws"), "walkthrough_watch": 1}
    config.write_text(yaml.safe_dump({"clusters": [cluster], **settings}))
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config))
    monkeypatch.setenv(CACHE_ENV, str(connect.cache))
    return tmp_path / "ws"


def test_a_walkthrough_from_the_command_line_applies_verifies_and_reports(
    sandbox: Sandbox, configured: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    group, before = fresh_group(sandbox)
    since_ms = int(time.time() * 1000) - 120_000
    argv = ["walkthrough", "replay-since", "-g", group, "--cluster", "sandbox"]
    code = main([*argv, "--answer", f"since={since_ms}", "--confirm", group, "--json"])
    out, err = capfd.readouterr()
    assert code == 0, err
    summary = json.loads(out)
    assert summary["verified"] == summary["queues"] == len(before)
    assert summary["status"] == "finished"
    assert "The time, queue by queue" in err  # the evidence, on stderr beside the JSON
    assert "mqadmin resetOffsetByTime" in err
    report = Path(summary["report"]).read_text()
    assert report.startswith(f"# Replay since an incident: {group} on sandbox")
    assert summary["apply"] in report
    assert "Verified: all" in report
    held = offsets_of(sandbox, group)
    assert all(held[q] is not None and held[q] < before[q] for q in before)  # type: ignore[operator]


def test_bad_input_is_refused_before_anything_is_planned(
    sandbox: Sandbox, configured: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    group, before = fresh_group(sandbox)
    assert main(["walkthrough", "--list"]) == 0
    assert "drain-flood" in capfd.readouterr().out

    base = ["--cluster", "sandbox"]
    assert main(["walkthrough", "no-such-walkthrough", "-g", group, *base]) == 2
    assert "no walkthrough 'no-such-walkthrough'" in capfd.readouterr().err
    assert main(["walkthrough", "drain-flood", "-g", "no-such-group", *base]) == 2
    assert "not found" in capfd.readouterr().err
    future = "2099-01-01T00:00:00Z"
    code = main(["walkthrough", "replay-since", "-g", group, *base, "--answer", f"since={future}"])
    assert code == 2
    err = capfd.readouterr().err
    assert "in the future" in err
    assert "nothing was planned" in err
    assert not (configured / "plans").exists()
    assert offsets_of(sandbox, group) == before


def test_a_malformed_team_walkthrough_is_named_and_the_others_run(
    sandbox: Sandbox, configured: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "walkthroughs"
    folder.mkdir()
    (folder / "ours.yaml").write_text("name: ours\ntitle: Ours\nsteps:\n  - id: x\n    kind: ?\n")
    group, before = fresh_group(sandbox)
    argv = ["walkthrough", "drain-flood", "-g", group, "--cluster", "sandbox", "--dry-run"]
    assert main(argv) == 0
    out, err = capfd.readouterr()
    assert f"walkthrough not loaded: {folder / 'ours.yaml'}:" in err
    assert "dry run" in out
    assert offsets_of(sandbox, group) == before
