"""The read commands' exit codes (README): 0 when all is well, 1 when a broker is down, 2 on bad
input or an unreachable cluster, with one line on stderr naming what was wrong (for the reads
of offsets, one line per missing piece: tests/integration/test_partial_reads.py). The real program
in a process, against the sandbox.

"A broker down" here is a broker the name server lists that does not answer: its JVM is paused
(SIGSTOP), as a hung broker, a long GC pause or a network partition looks. A broker stopped
cleanly unregisters and the name server stops naming it at once, so a command that starts
afterwards sees a smaller cluster, not a broken one (the console, which remembers the brokers it
has seen, names it down: tests/integration/test_ui_broker_down.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.sandbox import scenario
from console.sandbox.runner import Sandbox
from tests.integration.faults import broker_answers

DOWN = "broker-b"
COMMANDS = {
    "clusters": ["clusters"],
    "brokers": ["brokers"],
    "topics": ["topics"],
    "groups": ["groups"],
    "lag": ["lag", "-g", scenario.GROUP_OFFLINE],
}
MODES = {"text": [], "json": ["--json"]}
CASES = [(c, m) for c in COMMANDS for m in MODES]


def rmq_console(*args: str, config: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("rmq-console")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RMQ_CONSOLE_CONFIG": str(config)}
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty config file of the tests' own: a developer's clusters never leak in."""
    path = tmp_path_factory.mktemp("cli") / "config.yaml"
    path.write_text("{}\n")
    return path


def run(command: str, mode: str, *target: str, config: Path) -> subprocess.CompletedProcess[str]:
    return rmq_console(*COMMANDS[command], *MODES[mode], *target, config=config)


def one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("rmq-console"), stderr
    return lines[0]


@pytest.mark.parametrize(("command", "mode"), CASES)
def test_all_well_is_0(sandbox: Sandbox, config: Path, command: str, mode: str) -> None:
    result = run(command, mode, "--namesrv", sandbox.namesrv_addr, config=config)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.strip()
    if mode == "json":
        json.loads(result.stdout)
    if command in ("clusters", "brokers"):
        assert DOWN in result.stdout


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


BAD_INPUT = {
    # argument -> what the one line on stderr must name
    "option value": (["--timeout", "soon"], "'soon'"),
    "unknown cluster": (["--cluster", "no-such-cluster"], "no-such-cluster"),
    "not host:port": (["--namesrv", "namesrv-without-port"], "namesrv-without-port"),
    "bad port": (["--namesrv", "127.0.0.1:port"], "127.0.0.1:port"),
}


@pytest.mark.parametrize(("command", "mode"), CASES)
@pytest.mark.parametrize("case", BAD_INPUT)
def test_bad_input_is_2(config: Path, command: str, mode: str, case: str) -> None:
    args, named = BAD_INPUT[case]
    result = run(command, mode, *args, config=config)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    assert named in one_line(result.stderr)


@pytest.mark.parametrize(("command", "mode"), CASES)
def test_an_unreachable_name_server_is_2(config: Path, command: str, mode: str) -> None:
    addr = f"127.0.0.1:{_closed_port()}"
    result = run(command, mode, "--namesrv", addr, "--timeout", "2", config=config)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    assert f"cannot connect to {addr}" in one_line(result.stderr)


@pytest.fixture(scope="module")
def broker_paused(sandbox: Sandbox) -> Iterator[str]:
    """broker-b's JVM paused (still registered, answering nothing) for the module's down tests;
    resumed afterwards, and waited for until it answers again so later tests see the whole
    cluster. The name server drops a silent broker after 120 s: the tests take far less."""
    pid = sandbox.pids()[DOWN]
    addr = sandbox.broker_addrs[DOWN]
    os.kill(pid, signal.SIGSTOP)
    try:
        yield addr
    finally:
        os.kill(pid, signal.SIGCONT)
        deadline = time.monotonic() + 120
        while not asyncio.run(broker_answers(sandbox.namesrv_addr, DOWN, addr)):
            assert time.monotonic() < deadline, f"{DOWN} did not answer again within 120 s"
            time.sleep(0.5)


@pytest.mark.parametrize(("command", "mode"), CASES)
def test_a_broker_down_is_1(
    sandbox: Sandbox, config: Path, broker_paused: str, command: str, mode: str
) -> None:
    result = run(command, mode, "--namesrv", sandbox.namesrv_addr, "--timeout", "1", config=config)
    assert result.returncode == 1, result.stdout + result.stderr
    if command in ("lag", "groups"):
        # A read that lacks a piece names it, once however many groups lacked it.
        line = one_line(result.stderr)
        assert line.startswith(f"rmq-console: broker {DOWN} timed out: {DOWN} at {broker_paused}")
    else:
        line = one_line(result.stderr)
        assert f"broker down: {DOWN}" in line
        assert broker_paused in line
    assert "broker-a" not in line
    # What the other broker said is still printed, the same way as ever.
    assert result.stdout.strip()
    if mode == "json":
        document = json.loads(result.stdout)
        if command == "brokers":
            status = {row["broker"]: row["status"] for row in document}
            assert status == {"broker-a": "UP", DOWN: "DOWN"}
        if command == "lag":
            assert document["unreachable_brokers"] == [DOWN]
            assert {q["broker"] for q in document["queues"]} == {"broker-a"}
            assert document["partial"] is True
            assert [(m["part"], m["name"], m["why"]) for m in document["missing"]] == [
                ("broker", DOWN, "timed out")
            ]
