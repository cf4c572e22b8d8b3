"""Child processes that cannot outlive the sandbox.

Every JVM the sandbox starts gets several independent safety nets, because any single one can be
bypassed (a SIGKILL skips atexit, a crashed event loop skips teardown, a reused PID fools a naive
pidfile):

1. its own session and process group, so a terminal Ctrl-C does not kill brokers in random order
   and a stop signal reaches anything the JVM itself spawned;
2. PR_SET_PDEATHSIG(SIGTERM) on Linux, so the kernel stops it when its parent dies, even by SIGKILL;
3. a pidfile in the run directory, so the next start in that directory kills what a crash left;
4. an atexit hook that stops whatever is still running when the interpreter exits.

PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, so start processes only from
a thread that lives as long as they should (the main thread or the sandbox's own loop thread).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from console.sandbox.pidfile import PidFile
from console.sandbox.pids import signal_group

PR_SET_PDEATHSIG = 1


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    """How to start one child: argv, environment, working directory, and its output file."""

    name: str
    argv: Sequence[str]
    log: Path
    cwd: Path
    env: Mapping[str, str] = field(default_factory=dict)
    # Give the child a stdin pipe that the sandbox holds open: EOF on it means "stop".
    stdin_pipe: bool = False


class ManagedProcess:
    """One child started with every safety net; stop() is SIGTERM, a grace period, then SIGKILL."""

    def __init__(self, spec: LaunchSpec, pidfile: PidFile | None = None) -> None:
        self.spec = spec
        self._pidfile = pidfile
        self._popen: subprocess.Popen[bytes] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen else None

    @property
    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return self._popen.poll() if self._popen else None

    def start(self) -> None:
        if self.running:
            raise RuntimeError(f"{self.name} is already running")
        self.spec.log.parent.mkdir(parents=True, exist_ok=True)
        with self.spec.log.open("ab") as log:
            self._popen = subprocess.Popen(
                list(self.spec.argv),
                stdin=subprocess.PIPE if self.spec.stdin_pipe else subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.spec.cwd,
                env=dict(self.spec.env),
                start_new_session=True,
                preexec_fn=_child_setup(os.getpid()),
            )
        _register(self)
        if self._pidfile is not None:
            self._pidfile.record(self.name, self._popen.pid)

    def write_line(self, line: str) -> None:
        """One line to the child's stdin pipe (a program that takes commands there)."""
        if self._popen is None or self._popen.stdin is None or self._popen.stdin.closed:
            raise RuntimeError(f"{self.name} has no stdin pipe to write to")
        self._popen.stdin.write(line.encode() + b"\n")
        self._popen.stdin.flush()

    async def stop(self, grace: float = 20.0) -> int | None:
        """Ask politely (stdin EOF, SIGTERM), wait up to `grace` seconds, then SIGKILL."""
        if self._popen is None:
            return None
        self.request_stop()
        with contextlib.suppress(subprocess.TimeoutExpired):
            await asyncio.to_thread(self._popen.wait, grace)
        return self._finish()

    def stop_now(self, grace: float = 5.0) -> int | None:
        """Blocking stop, for atexit and signal handlers where no event loop runs."""
        if self._popen is None:
            return None
        self.request_stop()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(timeout=grace)
        return self._finish()

    def request_stop(self) -> None:
        assert self._popen is not None
        if self._popen.stdin is not None and not self._popen.stdin.closed:
            with contextlib.suppress(OSError):
                self._popen.stdin.close()
        if self._popen.poll() is None:
            signal_group(self._popen.pid, signal.SIGTERM)

    def _finish(self) -> int | None:
        assert self._popen is not None
        if self._popen.poll() is None:
            # Kill the whole group before reaping the leader: once reaped, its PID (= the group
            # ID) may be reused by an unrelated process.
            signal_group(self._popen.pid, signal.SIGKILL)
            self._popen.wait()
        _unregister(self)
        if self._pidfile is not None:
            self._pidfile.forget(self.name)
        return self._popen.returncode


def _child_setup(parent_pid: int) -> Callable[[], None]:
    prctl = _load_prctl()  # resolved before fork: the child must not load libraries

    def setup() -> None:
        if prctl is None:
            return
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        # If the parent died between fork and prctl, no death signal will ever come.
        if os.getppid() != parent_pid:
            os._exit(1)

    return setup


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    prctl: Callable[..., int] = libc.prctl
    return prctl


# --- last resort: the interpreter exits with children still running -------------------------

_LIVE: set[ManagedProcess] = set()
_LIVE_LOCK = threading.Lock()
_ATEXIT_INSTALLED = False


def _register(proc: ManagedProcess) -> None:
    global _ATEXIT_INSTALLED
    with _LIVE_LOCK:
        _LIVE.add(proc)
        if not _ATEXIT_INSTALLED:
            atexit.register(stop_all_now)
            _ATEXIT_INSTALLED = True


def _unregister(proc: ManagedProcess) -> None:
    with _LIVE_LOCK:
        _LIVE.discard(proc)


def live_processes() -> list[ManagedProcess]:
    with _LIVE_LOCK:
        return [p for p in _LIVE if p.running]


def stop_all_now(grace: float = 5.0) -> None:
    """Stop every child this interpreter started and has not stopped (SIGTERM all, then wait)."""
    procs = live_processes()
    for proc in procs:
        proc.request_stop()
    deadline = time.monotonic() + grace
    for proc in procs:
        proc.stop_now(grace=max(0.0, deadline - time.monotonic()))


def log_tail(path: Path, lines: int = 40) -> str:
    """The last lines of a log, for error messages; says so when the file does not exist."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    tail = text.splitlines()[-lines:]
    return f"--- last {len(tail)} lines of {path} ---\n" + "\n".join(tail)
