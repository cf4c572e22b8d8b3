"""The JVMs of a sandbox cluster started one by one under a run directory (a name server, a
controller, a broker's replicas or DLedger peers): each its own work directory, log, and line
in the run's pidfile, so a crashed run's leftovers are found and stopped."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from console.sandbox import rundir
from console.sandbox.cache import Distribution
from console.sandbox.cluster import render_properties
from console.sandbox.errors import StartupError
from console.sandbox.jvm import JvmOptions, java_argv, jvm_env
from console.sandbox.pidfile import PidFile
from console.sandbox.pids import signal_group
from console.sandbox.proc import LaunchSpec, ManagedProcess, log_tail


class ProcessSet:
    """Named processes of one run directory; `_launch_spec(name)` says how each starts."""

    def __init__(self, dist: Distribution, java: Path, run_dir: Path) -> None:
        self.dist = dist
        self.java = java
        self.pidfile = PidFile(run_dir / rundir.PIDFILE)
        self._run_dir = run_dir
        self._procs: dict[str, ManagedProcess] = {}

    def log_path(self, name: str) -> Path:
        return self._run_dir / name / f"{name}.out"

    def pids(self) -> dict[str, int]:
        """PIDs of the cluster's processes that are running now."""
        return {n: p.pid for n, p in self._procs.items() if p.running and p.pid is not None}

    def running(self, name: str) -> bool:
        proc = self._procs.get(name)
        return proc is not None and proc.running

    async def stop(self, grace: float = 30.0) -> None:
        await asyncio.gather(*(p.stop(grace) for p in self._procs.values()))

    def stop_now(self, grace: float = 10.0) -> None:
        for proc in self._procs.values():
            if proc.running:
                proc.request_stop()
        deadline = time.monotonic() + grace
        for proc in self._procs.values():
            proc.stop_now(max(0.0, deadline - time.monotonic()))

    def kill(self, name: str) -> None:
        """SIGKILL one process, as `kill -9` does: no shutdown hook, its connections reset."""
        proc = self._running(name)
        assert proc.pid is not None
        signal_group(proc.pid, signal.SIGKILL)
        proc.stop_now(0.0)  # reaped, and off the pidfile

    def _running(self, name: str) -> ManagedProcess:
        proc = self._procs.get(name)
        if proc is None or not proc.running or proc.pid is None:
            raise KeyError(f"{name!r} is not running in this sandbox")
        return proc

    def _check_alive(self, names: Iterable[str]) -> None:
        for name in names:
            proc = self._procs.get(name)
            if proc is not None and not proc.running:
                raise StartupError(
                    f"{name} exited with code {proc.returncode}\n" + log_tail(self.log_path(name))
                )

    def _spawn(self, name: str) -> None:
        proc = ManagedProcess(self._launch_spec(name), self.pidfile)
        proc.start()
        self._procs[name] = proc

    def _launch_spec(self, name: str) -> LaunchSpec:
        raise NotImplementedError

    def _java_spec(
        self, name: str, props: Mapping[str, str], main: str, jvm: JvmOptions, home: Path
    ) -> LaunchSpec:
        """`main` of the cluster's jars run as `name` with `props` as its config file, in
        `name`'s work directory; `home` the RocketMQ home (its logging config)."""
        workdir = self._run_dir / name
        workdir.mkdir(parents=True, exist_ok=True)
        conf = workdir / f"{name}.conf"
        conf.write_text(render_properties(props))
        argv = java_argv(
            self.java, self.dist.classpath, main, ["-c", str(conf)], options=jvm,
            home=workdir / "home",
        )  # fmt: skip
        return LaunchSpec(
            name=name, argv=argv, log=self.log_path(name), cwd=workdir, env=jvm_env(home)
        )
