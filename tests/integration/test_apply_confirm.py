"""What an operator confirms at the command line is what gets written, on the sandbox's 5.3.3
brokers, each on a group of the test's own (offline, on `orders`):

- `apply` at a terminal asks for the group name and waits; a second writer moves one queue
  meanwhile. Typing the name reads the cluster again: the move is named, and nothing is written
  (the queue keeps the second writer's value, no journal, no audit line), exit 2. The command
  once wrote the check it had read before its prompt, over the second writer's value;
- an apply cut off part-way (broker-b stops answering as its writes begin) is resumed only when
  confirmed: `resume` from a non-terminal without `--confirm` writes nothing and exits 2; with
  `--confirm` it finishes the apply, none of its queues written twice. It once wrote unasked.
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import select
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from console.domain.journal import ApplyStatus, QueueState
from console.rocketmq.admin import AdminClient
from console.sandbox.runner import Sandbox
from console.sandbox.scenario import TOPIC_ORDERS
from console.services.apply.intents import ApplyPlan
from console.services.apply.session import ApplySession
from console.services.apply.write_check import Confirmation, WriteCheck
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import Workspace
from tests.integration.faults import FreezeOnWrite, FreezingAdmin, broker_answers
from tests.support.groups import committed, new_group, shift_plan
from tests.support.terminal import EXE, console_env, own_terminal, read_until
from tests.support.writes import write_access

Queue = tuple[str, int]  # broker name, queue id
#: The second writer's value: far from anything the plan or the group's commits hold.
MOVED_TO = 7
HUNG = "broker-b"
#: Requests of the cut-off apply wait this long for an answer (broker-b's write never gets one):
#: long enough for broker-a's answers on a loaded 2-core machine, where 3 s was not.
QUICK_TIMEOUT_S = 8.0


@pytest.fixture
async def admin(sandbox: Sandbox) -> AsyncIterator[AdminClient]:
    async with sandbox.admin(timeout=10) as client:
        yield client


def read_to_the_end(fd: int, timeout: float) -> str:
    """What the terminal shows until the program on it exits (its side of the pty closes)."""
    seen = ""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        assert left > 0, f"still running; the terminal showed:\n{seen}"
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: nobody holds the other side any more
            return seen
        if not chunk:
            return seen
        seen += chunk.decode(errors="replace")


def test_a_queue_moved_while_the_prompt_waits_is_refused_and_nothing_is_written(
    sandbox: Sandbox, plan_runner: SparkRunner, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"

    async def setup() -> tuple[str, dict[Queue, int], str]:
        async with sandbox.admin(timeout=10) as admin:
            group, before = await new_group(sandbox, admin)
            plan = await shift_plan(sandbox, admin, plan_runner, Workspace(ws), group)
        return group, before, plan.header.plan_id

    async def second_writer(queue: Queue) -> None:
        broker, queue_id = queue
        async with sandbox.admin(timeout=10) as admin:
            addr = sandbox.broker_addrs[broker]
            await admin.update_consumer_offset(addr, group, TOPIC_ORDERS, queue_id, MOVED_TO)

    async def offsets() -> dict[Queue, int | None]:
        async with sandbox.admin(timeout=10) as admin:
            return await committed(sandbox, admin, group)

    group, before, plan_id = asyncio.run(setup())
    leader, follower = pty.openpty()
    console = subprocess.Popen(
        [EXE, "apply", plan_id],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=console_env(sandbox, tmp_path, ws),
        close_fds=True,
        preexec_fn=own_terminal,
    )
    os.close(follower)
    try:
        shown = read_until(leader, f"type the group name to apply ({group}):", 120)
        assert "server-side reset" in shown  # the check, read before the prompt
        # A second writer commits one queue while the operator reads the check.
        moved = sorted(before)[0]
        asyncio.run(second_writer(moved))
        os.write(leader, f"{group}\n".encode())
        said = read_to_the_end(leader, 120)
        code = console.wait(30)
    finally:
        os.close(leader)
        if console.poll() is None:
            console.kill()
            console.wait(10)

    assert code == 2, said
    assert "the cluster moved while the apply waited for its confirmation" in said
    broker, queue_id = moved
    name = f"{group} {TOPIC_ORDERS}/{broker}/{queue_id}"
    assert f"{name}: offset: {before[moved]} when confirmed, {MOVED_TO} now" in said
    assert "nothing was written" in said
    assert asyncio.run(offsets()) == {**before, moved: MOVED_TO}
    assert not (ws / "journal").exists() or list((ws / "journal").iterdir()) == []
    assert not (ws / "audit.log").exists()


async def test_resume_writes_only_when_confirmed(
    sandbox: Sandbox, admin: AdminClient, plan_runner: SparkRunner, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    group, before = await new_group(sandbox, admin)
    plan = await shift_plan(sandbox, admin, plan_runner, Workspace(ws), group)
    targets = {k: v - 3 for k, v in before.items()}
    pid, addr = sandbox.pids()[HUNG], sandbox.broker_addrs[HUNG]

    async def typed(check: WriteCheck) -> Confirmation:
        return Confirmation((group,))

    # broker-b answers the check and the re-check, then stops answering as its writes begin.
    freeze = FreezeOnWrite(pid, addr)
    async with sandbox.admin(timeout=QUICK_TIMEOUT_S) as quick:
        freezing = FreezingAdmin(quick, freeze)
        access = write_access(sandbox.reader(freezing), ws, "sandbox")
        try:
            cut = await ApplySession(access, ApplyPlan(plan.header.plan_id)).run(typed)
        finally:
            if freeze.frozen:
                os.kill(pid, signal.SIGCONT)
    deadline = time.monotonic() + 120
    while not await broker_answers(sandbox.namesrv_addr, HUNG, addr):
        assert time.monotonic() < deadline, f"{HUNG} did not answer again within 120 s"
        await asyncio.sleep(0.5)
    assert freeze.frozen, "no write went to broker-b"
    assert cut.journal is not None, cut.refused
    assert cut.exit_code == 1
    states = {(q.broker, q.queue_id): q.state for q in cut.journal.queues}
    assert {s for (b, _), s in states.items() if b != HUNG} == {QueueState.VERIFIED}
    assert QueueState.VERIFIED not in {s for (b, _), s in states.items() if b == HUNG}
    apply_id = cut.journal.apply_id
    journal_file = ws / "journal" / f"{apply_id}.json"
    kept = (journal_file.read_bytes(), (ws / "audit.log").read_bytes())
    # The write broker-b took in as it ran again landed; its other queues were never sent.
    stood = await committed(sandbox, admin, group)
    assert {k: v for k, v in stood.items() if k[0] != HUNG} == {
        k: v for k, v in targets.items() if k[0] != HUNG
    }
    hung = {k: (before[k], targets[k], stood[k], states[k]) for k in sorted(before) if k[0] == HUNG}
    # (before, target, holds, journal state) of each of broker-b's queues
    assert any(held == was for was, _, held, _ in hung.values()), hung

    def resume(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [EXE, "resume", apply_id, *args],
            stdin=subprocess.DEVNULL,  # not a terminal: nobody to ask
            capture_output=True,
            text=True,
            env=console_env(sandbox, tmp_path, ws),
            timeout=300,
            check=False,
        )

    unconfirmed = await asyncio.to_thread(resume)
    assert unconfirmed.returncode == 2, unconfirmed.stdout + unconfirmed.stderr
    assert f"confirm with --confirm {group} (no terminal to ask on)" in unconfirmed.stderr
    assert "nothing was written" in unconfirmed.stderr
    assert await committed(sandbox, admin, group) == stood
    assert (journal_file.read_bytes(), (ws / "audit.log").read_bytes()) == kept

    done = await asyncio.to_thread(resume, "--confirm", group, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    finished = json.loads(done.stdout)
    assert (finished["apply_id"], finished["status"]) == (apply_id, str(ApplyStatus.FINISHED))
    assert {q["state"] for q in finished["queues"]} == {str(QueueState.VERIFIED)}
    assert await committed(sandbox, admin, group) == targets
    audit = [json.loads(line) for line in (ws / "audit.log").read_text().splitlines()]
    verified = sorted((a["broker"], a["queue"]) for a in audit if a["result"] == "verified")
    assert verified == sorted(before)  # every queue verified once, none twice
