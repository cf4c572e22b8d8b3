"""`rmq-console history -g G --lag`: the stored series as text and JSON, partial and unknown
samples never read as whole or zero, the evaluation with its rule, the applies of the window,
and the exit codes (README "Lag history"). The workspace only: no cluster is asked."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from console.cli import main
from console.domain.gaps import Gap, Part, Why
from console.domain.journal import ApplyStatus, Journal, JournalQueue, QueueState
from console.domain.offsets import Client, GroupOffsets, QueueOffsets
from console.services.infra.journal_store import JournalStore, new_apply_id
from console.services.read.lag_history import MINUTE_MS, LagHistory

ONLINE = (Client("c1", "10.0.0.1:1", "JAVA", 479),)


def read(lag_a: int, *, b_down: bool = False, nothing: bool = False) -> GroupOffsets:
    # orders@broker-a:0 lag_a behind, its committed offset moving on as the lag grows
    qs = [QueueOffsets("orders", "broker-a", 0, 0, 1000 + 2 * lag_a, 1000 + lag_a)]
    if not b_down:
        qs.append(QueueOffsets("orders", "broker-b", 0, 0, 50, 40))
    g = GroupOffsets("billing", 0, tuple(qs), clients=ONLINE)
    if b_down:
        g = replace(g, gaps=(Gap(Part.BROKER, "broker-b", Why.TIMEOUT, "timed out"),))
    if nothing:
        g = replace(g, queues=(), answered=False, unreachable_brokers=("broker-a", "broker-b"))
    return g


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    config = tmp_path / "config.yaml"
    config.write_text(f"workspace: {ws}\nclusters:\n  - name: prod\n    namesrv: [127.0.0.1:1]\n")
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config))
    return ws


def record(ws: Path, *reads: tuple[int, GroupOffsets]) -> int:
    """Each read `minutes` ago; returns now."""
    now = int(time.time() * 1000)
    history = LagHistory(ws)
    for minutes, g in reads:
        history.record("prod", [g], now - minutes * MINUTE_MS)
    return now


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["history", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_text_marks_partial_and_unknown_and_names_the_rule(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record(
        workspace,
        (90, read(1)),  # before the window
        (40, read(100)),
        (30, read(100, b_down=True)),
        (20, read(100, nothing=True)),
        (10, read(100)),
        (1, read(100)),
    )
    code, out, err = run(capsys, "-g", "billing", "--lag")
    assert code == 0, err
    lines = out.splitlines()
    assert "5 samples, 1 partial, 1 unknown" in lines[0]
    assert lines[1].startswith("STALL  orders@broker-a:0 committed 1100 unchanged for 39m")
    assert lines[2].startswith("rule: clients online, lag above 0, committed offset unchanged")
    rows = [line.split() for line in lines[4:]]
    assert [r[2] for r in rows] == ["110", "≥100", "unknown", "110", "110"]
    assert rows[1][4] == "broker-b"  # MISSING


def test_the_newest_sample_partial_exits_1_and_json_keeps_every_queue(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now = record(workspace, (3, read(7)), (2, read(8)), (1, read(9, b_down=True)))
    code, out, _ = run(capsys, "-g", "billing", "--lag", "--json", "--since", "90m")
    assert code == 1
    doc = json.loads(out)
    assert doc["until_ms"] - doc["since_ms"] == 90 * MINUTE_MS
    assert doc["until_ms"] >= now
    assert doc["partial"] is True
    assert [(p["total_lag"], p["partial"], p["missing"]) for p in doc["points"]] == [
        (17, False, []),
        (18, False, []),
        (9, True, ["broker-b"]),
    ]
    assert doc["points"][0]["queues"] == [
        {
            "topic": "orders",
            "broker": "broker-a",
            "queue": 0,
            "committed": 1007,
            "max": 1014,
            "lag": 7,
        },
        {
            "topic": "orders",
            "broker": "broker-b",
            "queue": 0,
            "committed": 40,
            "max": 50,
            "lag": 10,
        },
    ]
    assert doc["evaluation"]["status"] == "WARN"
    assert doc["evaluation"]["partial"] is True
    assert doc["evaluation"]["queue"] == {"topic": "orders", "broker": "broker-a", "queue": 0}


def test_applies_of_the_window_are_listed(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now = record(workspace, (5, read(10)), (1, read(13)))
    at = now - 3 * MINUTE_MS
    queue = JournalQueue("billing", "orders", "broker-a", "h:1", 0, 990, 987)
    JournalStore(workspace).write(
        Journal(
            apply_id=new_apply_id(at, "billing", "apply", "t"),
            kind="apply",
            plan_id="p",
            plan_hash="h",
            cluster="prod",
            paths={"billing": "direct commit"},
            who="ops@host",
            started_at_ms=at,
            queues=(replace(queue, state=QueueState.VERIFIED, stored=987),),
            status=ApplyStatus.FINISHED,
        )
    )
    code, out, _ = run(capsys, "-g", "billing", "--lag", "--json")
    assert code == 0
    (mark,) = json.loads(out)["marks"]
    assert (mark["kind"], mark["at_ms"], mark["status"], mark["verified"]) == (
        "apply",
        at,
        "finished",
        1,
    )
    code, out, _ = run(capsys, "-g", "billing", "--lag")
    assert "apply" in out.split("APPLIED", 1)[1]
    code, out, _ = run(capsys, "-g", "billing")  # without --lag: the group's applies
    assert mark["apply_id"] in out
    code, out, _ = run(capsys, "-g", "audit")
    assert mark["apply_id"] not in out


def test_no_sample_bad_input_and_unreadable_lines(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "-g", "billing", "--lag")
    assert code == 2
    assert "no lag history of group billing on prod" in err
    assert run(capsys, "--lag")[0] == 2
    assert run(capsys, "--since", "1h")[0] == 2
    with pytest.raises(SystemExit) as bad:
        main(["history", "-g", "billing", "--lag", "--since", "yesterday"])
    assert bad.value.code == 2

    record(workspace, (1, read(5)))
    with LagHistory(workspace).path("prod", "billing").open("ab") as f:
        f.write(b'{"v":1,"t":12')  # a console killed mid-write
    code, out, err = run(capsys, "-g", "billing", "--lag", "--json")
    assert code == 0
    assert json.loads(out)["skipped_lines"] == 1
    assert "1 line(s) of the lag history of billing could not be read" in err
