"""The run directory: one sandbox's configs, stores, logs and pidfile; and control from outside.

`prepare` gives a starting sandbox a fresh directory (killing whatever a crashed earlier run
left there); `status` and `down` let another process (`rmq-console sandbox status|down`) see and
stop a sandbox that runs in a terminal elsewhere.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from console import json_text
from console.processes import pid_alive
from console.sandbox.cache import cache_root
from console.sandbox.errors import StartupError
from console.sandbox.pidfile import PidFile, kill_stale

PIDFILE = "sandbox.pids"
INFO_FILE = "sandbox.json"


def default_run_dir(cache: Path | None = None) -> Path:
    return (cache or cache_root()) / "sandbox"


def prepare(run_dir: Path) -> PidFile:
    """Empty `run_dir` for a new sandbox and claim it; refuse when a live sandbox owns it.

    Only a directory that is empty or was made by a sandbox (it holds the pidfile) is wiped,
    so a mistyped path never deletes someone's data.
    """
    pidfile = PidFile(run_dir / PIDFILE)
    if run_dir.exists() and any(run_dir.iterdir()) and not pidfile.path.exists():
        raise StartupError(f"{run_dir} is not empty and not a sandbox directory; refusing to wipe")
    owner = pidfile.live_owner()
    if owner is not None and owner != os.getpid():
        raise StartupError(
            f"a sandbox (pid {owner}) is already running in {run_dir}; "
            "stop it with `rmq-console sandbox down` first"
        )
    kill_stale(pidfile, marker=str(run_dir))
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    pidfile.claim()
    return pidfile


@dataclass(frozen=True, slots=True)
class SandboxInfo:
    """What a running sandbox publishes about itself in `sandbox.json`."""

    namesrv: str
    cluster: str
    brokers: dict[str, str]  # name -> address


def write_info(run_dir: Path, info: SandboxInfo) -> None:
    body = {"namesrv": info.namesrv, "cluster": info.cluster, "brokers": info.brokers}
    (run_dir / INFO_FILE).write_text(json.dumps(body, indent=2, sort_keys=True))


def read_info(run_dir: Path) -> SandboxInfo | None:
    try:
        body = json_text.loads((run_dir / INFO_FILE).read_text())
        return SandboxInfo(str(body["namesrv"]), str(body["cluster"]), dict(body["brokers"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    run_dir: Path
    owner: int | None  # the interpreter running the sandbox, if alive
    processes: dict[str, tuple[int, bool]]  # name -> (pid, alive)
    info: SandboxInfo | None

    @property
    def running(self) -> bool:
        return self.owner is not None or any(alive for _, alive in self.processes.values())


def status(run_dir: Path | None = None) -> SandboxStatus:
    run_dir = run_dir or default_run_dir()
    pidfile = PidFile(run_dir / PIDFILE)
    procs = {name: (pid, pid_alive(pid)) for name, pid in pidfile.processes().items()}
    return SandboxStatus(run_dir, pidfile.live_owner(), procs, read_info(run_dir))


def down(run_dir: Path | None = None, grace: float = 45.0) -> list[int]:
    """Stop the sandbox in `run_dir` from another process; return the PIDs that were signalled.

    The owner is asked first (SIGTERM) so it tears down in order; whatever it leaves behind,
    or everything when the owner is gone, is killed through the pidfile.
    """
    run_dir = run_dir or default_run_dir()
    pidfile = PidFile(run_dir / PIDFILE)
    signalled: list[int] = []
    owner = pidfile.live_owner()
    if owner is not None and owner != os.getpid():
        os.kill(owner, signal.SIGTERM)
        signalled.append(owner)
        deadline = time.monotonic() + grace
        while pid_alive(owner) and time.monotonic() < deadline:
            time.sleep(0.1)
    signalled += kill_stale(pidfile, marker=str(run_dir))
    return signalled
