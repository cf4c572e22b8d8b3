"""Child processes cannot outlive the sandbox: stop, escalation, pidfile, parent death."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from console.processes import pid_alive
from console.sandbox.pidfile import PidFile, kill_stale
from console.sandbox.pids import command_line
from console.sandbox.proc import LaunchSpec, ManagedProcess, live_processes, log_tail

SLEEPER = "import time\ntime.sleep(120)"
# Ignores SIGTERM, like a JVM stuck in a shutdown hook; says so on stdout once it does.
STUBBORN = (
    "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ignoring', flush=True)\ntime.sleep(120)"
)
# Exits when its stdin reaches EOF, like SandboxConsumer.
READS_STDIN = "import sys\nsys.stdin.read()\nprint('eof')"


def spec(tmp_path: Path, code: str, name: str = "child", stdin_pipe: bool = False) -> LaunchSpec:
    return LaunchSpec(
        name=name,
        argv=[sys.executable, "-c", code, str(tmp_path)],  # the path marks the command line
        log=tmp_path / f"{name}.log",
        cwd=tmp_path,
        env=dict(os.environ),
        stdin_pipe=stdin_pipe,
    )


def wait_dead(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not pid_alive(pid)


async def test_stop_terminates_and_forgets(tmp_path: Path) -> None:
    pidfile = PidFile(tmp_path / "sandbox.pids")
    proc = ManagedProcess(spec(tmp_path, SLEEPER), pidfile)
    proc.start()
    assert proc.pid is not None
    assert pidfile.processes() == {"child": proc.pid}
    assert proc in live_processes()
    # Its own session: a terminal's Ctrl-C does not reach it.
    assert os.getsid(proc.pid) == proc.pid
    code = await proc.stop(grace=5)
    assert code == -signal.SIGTERM
    assert not pid_alive(proc.pid)
    assert pidfile.processes() == {}
    assert proc not in live_processes()


def test_stop_escalates_to_sigkill(tmp_path: Path) -> None:
    proc = ManagedProcess(spec(tmp_path, STUBBORN))
    proc.start()
    while "ignoring" not in log_tail(proc.spec.log):
        time.sleep(0.05)
    started = time.monotonic()
    code = asyncio.run(proc.stop(grace=0.5))
    assert code == -signal.SIGKILL
    assert time.monotonic() - started < 5


async def test_stdin_eof_is_the_polite_stop(tmp_path: Path) -> None:
    proc = ManagedProcess(spec(tmp_path, READS_STDIN, stdin_pipe=True))
    proc.start()
    assert proc.pid is not None
    code = await proc.stop(grace=5)
    assert code in (0, -signal.SIGTERM)  # EOF usually wins the race with SIGTERM
    assert not pid_alive(proc.pid)


def test_stop_now_without_event_loop(tmp_path: Path) -> None:
    proc = ManagedProcess(spec(tmp_path, SLEEPER))
    proc.start()
    assert proc.pid is not None
    proc.stop_now(grace=5)
    assert not pid_alive(proc.pid)


def test_kill_stale_only_kills_marked_processes(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    pidfile = PidFile(run_dir / "sandbox.pids")
    ours = subprocess.Popen([sys.executable, "-c", SLEEPER, str(run_dir)], start_new_session=True)
    # A PID that was reused by an unrelated process after a crash: not ours to kill.
    stranger = subprocess.Popen([sys.executable, "-c", SLEEPER], start_new_session=True)
    try:
        # A child just forked shows this process's command line until it has exec'd its own:
        # read then, ours would not carry the marker yet.
        _until_execd(ours.pid, str(run_dir))
        _until_execd(stranger.pid, SLEEPER)
        pidfile.record("broker-a", ours.pid)
        pidfile.record("broker-b", stranger.pid)
        assert kill_stale(pidfile, marker=str(run_dir), grace=5) == [ours.pid]
        assert ours.wait(5) is not None
        assert stranger.poll() is None
    finally:
        stranger.kill()
        ours.kill()
        stranger.wait()
        ours.wait()


def _until_execd(pid: int, word: str, within: float = 30.0) -> None:
    """Until process `pid`'s command line holds `word`."""
    deadline = time.monotonic() + within
    cmdline = Path(f"/proc/{pid}/cmdline")
    while word not in cmdline.read_bytes().decode(errors="replace"):
        assert time.monotonic() < deadline, f"process {pid} has not exec'd yet"
        time.sleep(0.01)


def test_owner_is_recognised_by_pid_and_command_line(tmp_path: Path) -> None:
    pidfile = PidFile(tmp_path / "sandbox.pids")
    assert pidfile.live_owner() is None
    pidfile.claim()
    assert pidfile.live_owner() == os.getpid()
    pidfile.release()
    assert pidfile.live_owner() is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_child_dies_when_its_parent_is_killed(tmp_path: Path) -> None:
    """The kernel stops a sandbox child even when its parent gets SIGKILL (no cleanup runs)."""
    parent_code = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from console.sandbox.proc import LaunchSpec, ManagedProcess
        p = ManagedProcess(LaunchSpec("grandchild", [sys.executable, "-c", {SLEEPER!r}],
                                      Path({str(tmp_path / "g.log")!r}), Path({str(tmp_path)!r})))
        p.start()
        print(p.pid, flush=True)
        time.sleep(120)
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", parent_code],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    assert parent.stdout is not None
    grandchild = int(parent.stdout.readline())
    assert pid_alive(grandchild)
    parent.kill()
    parent.wait()
    assert wait_dead(grandchild), "grandchild outlived its SIGKILLed parent"


def test_command_line_and_log_tail(tmp_path: Path) -> None:
    assert "pytest" in command_line(os.getpid())
    assert command_line(2**22 + 7) == ""
    log = tmp_path / "x.log"
    log.write_text("\n".join(f"line {i}" for i in range(100)))
    tail = log_tail(log, lines=3)
    assert tail.endswith("line 97\nline 98\nline 99")
    assert "no log" in log_tail(tmp_path / "missing.log")


# Answers each line on stdin as LiteClient.java does: "OK <line>", or "FAILED <line>: why".
OBEYS = (
    "import sys\n"
    "for line in sys.stdin:\n"
    "    line = line.strip()\n"
    "    print(('FAILED ' + line + ': no such lite topic') if 'nope' in line else 'OK ' + line,"
    " flush=True)\n"
)


async def test_a_program_is_told_what_to_do_on_its_stdin(tmp_path: Path) -> None:
    # deferred: the consumers' module, for this test only
    from console.sandbox.consumers import JavaConsumer, LiteClientSpec
    from console.sandbox.errors import StartupError

    program = LiteClientSpec("lite", "g", "chats", "127.0.0.1:8081")
    consumer = JavaConsumer(program, java=Path("java"), classpath="", namesrv="", run_dir=tmp_path)
    consumer.process = ManagedProcess(spec(tmp_path, OBEYS, stdin_pipe=True))
    consumer.log = consumer.process.spec.log
    consumer.process.start()
    try:
        await consumer.command("subscribe session-1", timeout=10)
        await consumer.command("send session-1 3", timeout=10)
        with pytest.raises(StartupError, match="FAILED unsubscribe nope: no such lite topic"):
            await consumer.command("unsubscribe nope", timeout=10)
    finally:
        await consumer.stop(grace=5)
    with pytest.raises(RuntimeError, match="no stdin pipe"):
        ManagedProcess(spec(tmp_path, SLEEPER)).write_line("send x 1")
