"""An apply of a many-queue plan cut off the hard way: the operator confirms at the terminal,
broker-b freezes as the writes begin, the console is killed with -9 while broker-a's queues are
verified and broker-b's hang, then broker-b is killed and started again. The journal names
every queue applied and not; the next start offers to resume, `history` shows the apply
interrupted, and `resume` finishes it: every queue at its target, none written twice."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from console.domain.spec import ResetSpec, Scope, ShiftBy
from console.rocketmq.admin import AdminClient
from console.sandbox.runner import Sandbox
from console.sandbox.seed import wait_for_routes
from console.services.apply.offset_writer import OffsetWrite, OffsetWriter
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import Workspace
from console.services.plan.planner import Planner
from tests.integration.faults import broker_answers
from tests.support.sends import indexed
from tests.support.terminal import EXE, console_env, own_terminal, read_until

QUEUES = 64  # per broker
MESSAGES = 6  # per queue; the group stands at 5, the plan moves it to 2
DOWN = "broker-b"
#: Long enough that broker-b's writes are still waiting when the console is killed.
HUNG_TIMEOUT_S = 60
#: The broker writes its consumer offsets to disk every 5 s: a broker killed sooner forgets.
FLUSHED_AFTER_S = 6


async def seed(sandbox: Sandbox) -> tuple[str, str, dict[tuple[str, int], int]]:
    tag = uuid.uuid4().hex[:8]
    topic, group = f"it-kill-{tag}", f"it-kill-{tag}"
    async with AdminClient([sandbox.namesrv_addr], timeout=10) as admin:
        brokers = sandbox.broker_addrs
        gate = asyncio.Semaphore(64)

        async def send(addr: str, q: int) -> None:
            async with gate:
                await admin.send_message(addr, topic, q, b"kill")

        for addr in brokers.values():
            await admin.create_topic(addr, topic, read_queues=QUEUES, write_queues=QUEUES)
            await admin.create_group(addr, group)
        await wait_for_routes(admin, [topic], set(brokers))
        await asyncio.gather(
            *(send(a, q) for a in brokers.values() for q in range(QUEUES) for _ in range(MESSAGES))
        )
        for addr in brokers.values():
            await indexed(admin, addr, topic, dict.fromkeys(range(QUEUES), MESSAGES))
        before = {(b, q): MESSAGES - 1 for b in brokers for q in range(QUEUES)}
        made = await OffsetWriter(admin).write(
            OffsetWrite(brokers[b], group, topic, q, o) for (b, q), o in before.items()
        )
        assert made.ok, made.summary()
    return topic, group, before


async def plan(sandbox: Sandbox, runner: SparkRunner, ws: Path, topic: str, group: str) -> str:
    async with AdminClient([sandbox.namesrv_addr], timeout=10) as admin:
        reader = sandbox.reader(admin)
        planner = Planner(Workspace(ws), runner, reader=reader, cluster="sandbox")
        made = await planner.plan(
            ResetSpec(Scope("sandbox", (group,), topics=(topic,)), ShiftBy(-3))
        )
    return made.uri


async def landed(sandbox: Sandbox, topic: str, group: str) -> dict[tuple[str, int], int | None]:
    async with AdminClient([sandbox.namesrv_addr], timeout=10) as admin:
        return {
            (b, q): await admin.query_consumer_offset(addr, group, topic, q)
            for b, addr in sandbox.broker_addrs.items()
            for q in range(QUEUES)
        }


def wait_for_broker_a(ws: Path) -> dict[str, Any]:
    """The journal once broker-a's queues are verified in it and in the audit log."""
    deadline = time.monotonic() + 60
    while True:
        journal = journal_of(ws)
        states = [q["state"] for q in journal["queues"]] if journal else []
        audit = ws / "audit.log"
        lines = len(audit.read_text().splitlines()) if audit.exists() else 0
        if journal is not None and states.count("verified") == QUEUES and lines == QUEUES:
            return journal
        assert time.monotonic() < deadline, f"broker-a's queues not verified: {states}"
        time.sleep(0.05)


ROOT = Path(__file__).resolve().parents[2]


def at_the_prompt(
    plan_dir: str, group: str, env: dict[str, str], frozen: tuple[int, str]
) -> tuple[subprocess.Popen[bytes], int]:
    """`apply` at a terminal (the operator's): the cluster read, the summary shown, and the
    group name asked for; returns the process and the terminal's other end. Once confirmed,
    the cluster is read again, and the broker `frozen` (its pid and address) stops (SIGSTOP)
    right before the first write addressed to it (tests/integration/frozen_console.py)."""
    pid, addr = frozen
    leader, follower = pty.openpty()
    console = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.frozen_console", str(pid), addr]
        + ["apply", plan_dir, "--timeout", str(HUNG_TIMEOUT_S)],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env={**env, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        close_fds=True,
        preexec_fn=own_terminal,
    )
    os.close(follower)
    read_until(leader, f"type the group name to apply ({group}):", 120)
    return console, leader


def journal_of(ws: Path) -> dict[str, Any] | None:
    files = list((ws / "journal").glob("*.json")) if (ws / "journal").exists() else []
    if not files:
        return None
    try:
        return dict(json.loads(files[0].read_text()))
    except ValueError:
        return None  # caught between its write and its rename


def test_a_console_and_a_broker_killed_mid_apply_resume_without_loss_or_repeat(
    sandbox: Sandbox, plan_runner: SparkRunner, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    topic, group, before = asyncio.run(seed(sandbox))
    plan_dir = asyncio.run(plan(sandbox, plan_runner, ws, topic, group))
    time.sleep(FLUSHED_AFTER_S)  # broker-b has its before-image on disk when it is killed
    env = console_env(sandbox, tmp_path, ws)
    pid = sandbox.pids()[DOWN]
    # broker-b freezes as the writes begin, before a single write reaches it.
    console, leader = at_the_prompt(plan_dir, group, env, (pid, sandbox.broker_addrs[DOWN]))
    try:
        os.write(leader, f"{group}\n".encode())
        journal = wait_for_broker_a(ws)
        console.kill()  # -9, mid-apply
        console.wait(10)
        os.kill(pid, signal.SIGKILL)  # and broker-b dies without a clean shutdown
        gone = time.monotonic() + 10
        while DOWN in sandbox.pids():
            assert time.monotonic() < gone, f"{DOWN} outlived SIGKILL"
            time.sleep(0.05)
    finally:
        os.close(leader)
        if console.poll() is None:
            console.kill()
        if DOWN in sandbox.pids():
            os.kill(pid, signal.SIGCONT)  # the test failed before the kill: let it run on
        asyncio.run(sandbox.start_broker(DOWN))  # whatever happened, the others need it back
        deadline = time.monotonic() + 120
        addr = sandbox.broker_addrs[DOWN]
        while not asyncio.run(broker_answers(sandbox.namesrv_addr, DOWN, addr)):
            assert time.monotonic() < deadline, f"{DOWN} did not answer again within 120 s"
            time.sleep(0.5)

    # What the dead console left: broker-a's queues verified, broker-b's not written.
    assert journal is not None
    apply_id = str(journal["apply_id"])
    queues = journal["queues"]
    assert isinstance(queues, list)
    by_broker = {(q["broker"], q["state"]) for q in queues}
    assert {s for b, s in by_broker if b != DOWN} == {"verified"}
    assert "verified" not in {s for b, s in by_broker if b == DOWN}

    assert asyncio.run(landed(sandbox, topic, group)) == {
        (b, q): (2 if b != DOWN else o) for (b, q), o in before.items()
    }

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [EXE, *args], capture_output=True, text=True, env=env, timeout=300, check=False
        )

    # The next start names the apply a console left part-way, and what to do.
    listed = run("history", "--json")
    assert listed.returncode == 0, listed.stderr
    (entry,) = json.loads(listed.stdout)["applies"]
    assert (entry["apply_id"], entry["status"]) == (apply_id, "interrupted")
    again = run("apply", plan_dir, "--confirm", group)
    assert f"apply {apply_id} on sandbox stopped part-way ({QUEUES} queue(s) not verified): " in (
        again.stderr
    )
    assert f"rmq-console resume {apply_id}, or rmq-console undo {apply_id}" in again.stderr
    assert again.returncode == 2  # and this plan is refused: its queues on broker-a moved

    refused = run("resume", apply_id)  # not confirmed: nothing is written
    assert refused.returncode == 2
    assert "confirm with --confirm" in refused.stderr
    done = run("resume", apply_id, "--json", "--confirm", group)
    assert done.returncode == 0, done.stdout + done.stderr
    finished = json.loads(done.stdout)
    assert finished["status"] == "finished"
    assert {q["state"] for q in finished["queues"]} == {"verified"}
    assert asyncio.run(landed(sandbox, topic, group)) == {k: 2 for k in before}
    audit = [json.loads(line) for line in (ws / "audit.log").read_text().splitlines()]
    verified = sorted((a["broker"], a["queue"]) for a in audit if a["result"] == "verified")
    assert verified == sorted(before)  # every queue verified once, none twice


def test_ctrl_c_mid_apply_stops_the_writes_and_says_where(
    sandbox: Sandbox, plan_runner: SparkRunner, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    topic, group, before = asyncio.run(seed(sandbox))
    plan_dir = asyncio.run(plan(sandbox, plan_runner, ws, topic, group))
    env = console_env(sandbox, tmp_path, ws)
    pid = sandbox.pids()[DOWN]
    console, leader = at_the_prompt(plan_dir, group, env, (pid, sandbox.broker_addrs[DOWN]))
    try:
        os.write(leader, f"{group}\n".encode())
        wait_for_broker_a(ws)
        os.write(leader, b"\x03")  # ctrl-c, typed at its terminal
        # The writes broker-b holds are answered by their timeout before the console stops:
        # what it prints comes up to HUNG_TIMEOUT_S after the ctrl-c.
        said = read_until(leader, "to finish it: rmq-console resume", HUNG_TIMEOUT_S + 60)
        assert console.wait(30) == 1
    finally:
        os.kill(pid, signal.SIGCONT)
        os.close(leader)
        if console.poll() is None:
            console.kill()
    assert "stopped: stopped on request" in said
    journal = journal_of(ws)
    assert journal is not None
    assert (journal["status"], journal["stopped_because"]) == ("stopped", "stopped on request")
    states = {(q["broker"], q["queue_id"]): q["state"] for q in journal["queues"]}
    assert {s for (b, _), s in states.items() if b != DOWN} == {"verified"}
    assert "verified" not in {s for (b, _), s in states.items() if b == DOWN}
    assert len(states) == len(before)
