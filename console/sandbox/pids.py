"""Facts about processes by PID: alive, command line, memory; signalling whole groups."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from console.processes import pid_alive

_POLL = 0.05


def signal_group(pid: int, sig: signal.Signals) -> None:
    # start_new_session makes the child a session and group leader: its pgid is its pid.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def command_line(pid: int) -> str:
    """The process's argv joined by spaces, or "" when it does not exist."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        return raw.replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        pass
    if sys.platform.startswith("linux"):
        return ""
    try:
        out = subprocess.run(
            ["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True, check=False
        )
    except OSError:
        return ""
    return out.stdout.strip()


def wait_gone(pid: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(_POLL)


def rss_kb(pid: int) -> int | None:
    """Resident set size of a process in KiB (Linux), None when unknown."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None
