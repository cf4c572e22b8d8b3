"""A broker that stops answering in the middle of an apply (SIGSTOP as the writes begin): the
apply ends within its request timeout, names the broker, and never says it verified what it did
not; the journal is left stopped, `history` lists it so and the next start offers to resume it.
Once the broker answers again, `resume` finishes it and `undo` puts every queue back where it
stood before the apply, as read back from the brokers."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from console.cli import main
from console.locations import CACHE_ENV
from console.sandbox.runner import Sandbox
from console.sandbox.scenario import TOPIC_ORDERS
from console.services.apply.history import read_history
from console.services.infra.journal_store import unfinished_lines
from console.services.infra.workspace import Workspace
from tests.connect import ConnectServer
from tests.integration.faults import broker_answers
from tests.support.groups import fresh_group, offsets_of
from tests.support.processes import processes

DOWN = "broker-b"
#: The frozen apply's request timeout (--timeout): how long a write waits for broker-b.
TIMEOUT_S = 2.0
#: From broker-b's freeze to the apply's exit: one request timeout (broker-b's first write; the
#: rest of its queues are not sent, and a queue that failed is not read back), broker-a's
#: read-backs and the journal's last write, with room for a loaded machine. Not the 45 s the
#: read-back may wait for a write that was answered, nor the minutes of a write left waiting.
ENDED_WITHIN_S = TIMEOUT_S + 10
#: How long broker-b may take to answer the name server and the console again once let go.
BACK_S = 60.0
ROOT = Path(__file__).resolve().parents[2]


def stopped(pid: int) -> bool:
    return any(p.pid == pid and p.state == "T" for p in processes())


def frozen_apply(
    sandbox: Sandbox, plan_id: str, group: str, env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], float]:
    """`apply PLAN --confirm GROUP` in a process of its own that freezes broker-b right before
    the first write addressed to it (tests/integration/frozen_console.py); the command's output
    and the seconds from the freeze to its exit. Broker-b is let go (SIGCONT) whatever
    happens, and the test waits until it answers again: the tests after this one share it."""
    pid = sandbox.pids()[DOWN]
    addr = sandbox.broker_addrs[DOWN]
    args = ["apply", plan_id, "--confirm", group, "--timeout", f"{TIMEOUT_S:g}"]
    console = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.frozen_console", str(pid), addr, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**env, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    try:
        frozen_at = None
        deadline = time.monotonic() + 120
        while console.poll() is None and frozen_at is None:
            assert time.monotonic() < deadline, f"{DOWN} was never frozen"
            if stopped(pid):
                frozen_at = time.monotonic()
            time.sleep(0.02)  # a poll interval: what is polled is the broker's state
        if frozen_at is None:
            out, err = console.communicate()
            raise AssertionError(f"the apply ended before {DOWN} froze:\n{out}{err}")
        try:
            # Past the bound the apply is stopped here: broker-b is not left frozen for it.
            out, err = console.communicate(timeout=ENDED_WITHIN_S)
        except subprocess.TimeoutExpired:
            console.kill()
            out, err = console.communicate()
        took = time.monotonic() - frozen_at
    finally:
        os.kill(pid, signal.SIGCONT)
        if console.poll() is None:
            console.kill()
            console.wait()
        back = time.monotonic() + BACK_S
        while not asyncio.run(broker_answers(sandbox.namesrv_addr, DOWN, addr)):
            assert time.monotonic() < back, f"{DOWN} did not answer within {BACK_S:.0f}s"
            time.sleep(0.2)
    return subprocess.CompletedProcess(console.args, console.returncode, out, err), took


def test_a_broker_frozen_mid_apply_stops_it_in_time_and_resume_and_undo_finish_it(
    sandbox: Sandbox,
    connect: ConnectServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    group, before = fresh_group(sandbox)
    assert {b for b, _ in before} == set(sandbox.broker_addrs)  # queues on both brokers
    ws = tmp_path / "ws"
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump({"clusters": [sandbox.config_entry("sandbox")], "workspace": str(ws)})
    )
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RMQ_CONSOLE_CONFIG": str(config)}
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config))
    # `plan` and `undo` plan on the session's warm Spark Connect server.
    monkeypatch.setenv(CACHE_ENV, str(connect.cache))
    spec = tmp_path / "spec.yaml"
    scope = {"cluster": "sandbox", "groups": [group], "topics": [TOPIC_ORDERS]}
    spec.write_text(yaml.safe_dump({"scope": scope, "strategy": {"shift-by": -3}}))
    assert main(["plan", "--spec", str(spec), "--json"]) == 0
    plan_id = json.loads(capfd.readouterr().out)["plan"]["id"]
    target = {k: v - 3 for k, v in before.items()}

    applied, took = frozen_apply(sandbox, plan_id, group, env)

    said = applied.stdout + applied.stderr
    assert took < ENDED_WITHIN_S, f"the apply took {took:.1f}s after {DOWN} froze:\n{said}"
    assert applied.returncode == 1, said
    (journal_file,) = (ws / "journal").glob("*.json")
    journal = json.loads(journal_file.read_text())
    apply_id = journal["apply_id"]
    states = {(q["broker"], q["queue_id"]): q["state"] for q in journal["queues"]}
    assert {s for (b, _), s in states.items() if b != DOWN} == {"verified"}, said
    assert "verified" not in {s for (b, _), s in states.items() if b == DOWN}, said
    assert journal["status"] == "stopped", said
    assert DOWN in journal["stopped_because"]
    assert f"stopped: {journal['stopped_because']}" in applied.stdout
    assert f"apply {apply_id}: stopped - " in applied.stdout
    assert f"to finish it: rmq-console resume {apply_id}" in applied.stdout

    # What the workspace says of it: stopped, half verified, to resume or undo.
    assert main(["history", "--json"]) == 0
    (listed,) = json.loads(capfd.readouterr().out)["applies"]
    assert (listed["apply_id"], listed["status"]) == (apply_id, "stopped")
    assert listed["verified"] == len(before) - sum(1 for b, _ in before if b == DOWN)
    (shown,) = [e for e in read_history(Workspace(ws)).entries if e.ref == apply_id]
    assert shown.resumable
    assert f"rmq-console resume {apply_id} --cluster sandbox" in shown.commands
    assert [line for line in unfinished_lines(ws, "sandbox") if apply_id in line] == [
        f"apply {apply_id} on sandbox stopped part-way "
        f"({sum(1 for s in states.values() if s != 'verified')} queue(s) not verified): "
        f"rmq-console resume {apply_id}, or rmq-console undo {apply_id}"
    ]

    # Broker-b answers again: resume finishes the apply, every queue at its target.
    assert main(["resume", apply_id, "--confirm", group, "--json"]) == 0
    resumed = json.loads(capfd.readouterr().out)
    assert (resumed["apply_id"], resumed["status"]) == (apply_id, "finished")
    assert {q["state"] for q in resumed["queues"]} == {"verified"}
    assert offsets_of(sandbox, group) == target

    # And undo puts back every queue's before-image, as read from the brokers.
    assert main(["undo", apply_id, "--confirm", group]) == 0
    out = capfd.readouterr().out
    assert f"undo of {apply_id}: {len(before)} queue(s) back to their before-image" in out
    assert offsets_of(sandbox, group) == before
