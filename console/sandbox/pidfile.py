"""The run directory's pidfile: who owns the sandbox and which children it started."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from console import json_text
from console.processes import pid_alive
from console.sandbox.pids import command_line, signal_group, wait_gone

_POLL = 0.05


class PidFile:
    """`{"owner": pid, "processes": {name: pid}}` in the run directory, rewritten atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def claim(self) -> None:
        """Record this interpreter as the owner of the run directory.

        The owner's command line is stored too, so a PID reused after a crash or reboot is not
        mistaken for a live owner.
        """
        with self._lock:
            me = os.getpid()
            self._write({"owner": me, "owner_cmdline": command_line(me), "processes": {}})

    def release(self) -> None:
        with self._lock:
            data = self._read()
            data.pop("owner", None)
            data.pop("owner_cmdline", None)
            self._write(data)

    def record(self, name: str, pid: int) -> None:
        with self._lock:
            data = self._read()
            data.setdefault("processes", {})[name] = pid
            self._write(data)

    def forget(self, name: str) -> None:
        with self._lock:
            data = self._read()
            data.get("processes", {}).pop(name, None)
            self._write(data)

    def live_owner(self) -> int | None:
        """PID of the interpreter that owns the run directory, if it is still running."""
        data = self._read()
        owner = data.get("owner")
        if not isinstance(owner, int) or not pid_alive(owner):
            return None
        return owner if command_line(owner) == data.get("owner_cmdline") else None

    def processes(self) -> dict[str, int]:
        procs = self._read().get("processes", {})
        return {str(k): v for k, v in procs.items() if isinstance(v, int)}

    def _read(self) -> dict[str, Any]:
        try:
            data = json_text.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, data: object) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
        tmp.replace(self.path)


def kill_stale(pidfile: PidFile, marker: str, grace: float = 15.0) -> list[int]:
    """Stop the processes a pidfile lists whose command line still contains `marker`.

    The marker (the run directory's path) guards against killing an unrelated process that
    reused a PID after a reboot. Returns the PIDs that were signalled.
    """
    victims = [pid for pid in pidfile.processes().values() if marker in command_line(pid)]
    for pid in victims:
        signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while any(pid_alive(p) for p in victims) and time.monotonic() < deadline:
        time.sleep(_POLL)
    for pid in victims:
        if pid_alive(pid):
            signal_group(pid, signal.SIGKILL)
    for pid in victims:
        wait_gone(pid, 5.0)
    return victims
