"""The console's side of the warm Spark session: a child process (`jobs.host`) that owns the
SparkSession, spoken to over a socket pair.

The console never imports pyspark and never shares its terminal with the JVM: the child's stdout
and stderr go to a log file, it runs in its own session (a ctrl-c in the console does not reach
it), and it stops when the console closes the socket or exits.

Jobs are submitted with `SparkRunner.submit`; progress comes back as frozen `JobProgress`
snapshots on a callback (called from the runner's reader thread), the result through the
returned `JobHandle`, synchronously (`result()`) or from asyncio (`await wait()`).
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from multiprocessing.connection import Connection
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol


class JobState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class JobProgress:
    """Where a job is: the job's own step, the Spark stage running, and task counts."""

    job_id: str
    state: JobState
    step: str = ""
    stage: str | None = None
    done: int = 0
    total: int = 0
    active: int = 0
    failed: int = 0

    @property
    def fraction(self) -> float | None:
        """Tasks done over tasks known; None before Spark has planned any."""
        return self.done / self.total if self.total else None


ProgressCallback = Callable[[JobProgress], None]


class JobError(Exception):
    """A job did not produce its result."""


class JobInputError(JobError):
    """The request was wrong (a spec naming an unknown group, a bad line in a file, …);
    the message names the field or line. Nothing was written."""


class JobCancelled(JobError):
    pass


class JobFailed(JobError):
    def __init__(self, message: str, log: Path | None = None) -> None:
        super().__init__(f"{message} (Spark log: {log})" if log else message)
        self.log = log


@dataclass(frozen=True, slots=True)
class HostInfo:
    master: str
    spark_version: str


class JobHandle:
    """One submitted job. A runner reports progress and settles it exactly once (from any
    thread); callers wait on it."""

    def __init__(
        self,
        job_id: str,
        on_progress: ProgressCallback | None = None,
        cancel: Callable[[], None] | None = None,
    ) -> None:
        self.job_id = job_id
        self._on_progress = on_progress
        self._cancel = cancel
        self._done = threading.Event()
        self._result: str | None = None
        self._error: JobError | None = None
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def done(self) -> bool:
        return self._done.is_set()

    def cancel(self) -> None:
        if not self.done() and self._cancel is not None:
            self._cancel()

    def result(self, timeout: float | None = None) -> str:
        """The job's JSON result; raises JobInputError, JobCancelled or JobFailed."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"job {self.job_id} still running after {timeout}s")
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    async def wait(self) -> str:
        """Await the result; cancelling the awaiting task cancels the Spark job too."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()

        def settle() -> None:
            if not future.done():
                future.set_result(None)

        def wake() -> None:
            try:
                loop.call_soon_threadsafe(settle)
            except RuntimeError:
                pass  # the loop is closed: nobody is waiting any more

        self._add_callback(wake)
        try:
            await future
        except asyncio.CancelledError:
            self.cancel()
            raise
        return self.result(0)

    def _add_callback(self, fn: Callable[[], None]) -> None:
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(fn)
                return
        fn()

    def report(self, progress: JobProgress) -> None:
        if self._on_progress is not None:
            self._on_progress(progress)

    def settle(self, result: str | None, error: JobError | None) -> None:
        with self._lock:
            if self._done.is_set():
                return
            self._result, self._error = result, error
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            fn()


class JobRunner(Protocol):
    """What the planning service needs: submit a job, get a handle."""

    def submit(
        self, job: str, request: str, on_progress: ProgressCallback | None = None
    ) -> JobHandle: ...


class SparkRunner:
    """A long-lived child process holding a SparkSession on `master`."""

    def __init__(
        self,
        master: str = "local[*]",
        *,
        log_path: Path,
        conf: Mapping[str, str] | None = None,
        python: str | None = None,
        env: Mapping[str, str] | None = None,
        warm_up: bool = True,
        host_module: str = "jobs.host",
    ) -> None:
        self.master = master
        self.warm_up = warm_up
        self.host_module = host_module
        self.log_path = log_path
        self.conf = dict(conf or {})
        self.python = python or sys.executable
        self.env = dict(env) if env is not None else None
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._send_lock = threading.Lock()
        self._jobs: dict[str, JobHandle] = {}
        self._jobs_lock = threading.Lock()  # the reader's last sweep vs. a late submit
        self._gone = False
        self._ready = threading.Event()
        self._info: HostInfo | None = None
        self._fatal: str | None = None
        self._ids = itertools.count(1)
        self._reader: threading.Thread | None = None

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Spawn the host; the session warms up in the background. Idempotent."""
        if self._proc is not None:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        ours, theirs = socket.socketpair()
        env = dict(os.environ if self.env is None else self.env)
        # Executors (python workers) must run the same interpreter as the host, not `python3`.
        env.setdefault("PYSPARK_PYTHON", self.python)
        env.setdefault("PYSPARK_DRIVER_PYTHON", self.python)
        argv = [self.python, "-m", self.host_module, "--fd", str(theirs.fileno())]
        argv += ["--master", self.master]
        if not self.warm_up:
            argv.append("--no-warm-up")
        for key, value in sorted(self.conf.items()):
            argv += ["--conf", f"{key}={value}"]
        with self.log_path.open("ab") as log:
            log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(argv)}\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
                env=env,
            )
        theirs.close()
        self._conn = Connection(ours.detach())
        self._reader = threading.Thread(target=self._read, name="spark-runner", daemon=True)
        self._reader.start()

    def wait_ready(self, timeout: float | None = None) -> HostInfo:
        """Block until the session is up; raises JobFailed if it could not start."""
        self.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"Spark did not start within {timeout}s (log: {self.log_path})")
        if self._info is None:
            raise JobFailed(f"Spark could not start: {self._fatal}", self.log_path)
        return self._info

    @property
    def ready(self) -> bool:
        return self._info is not None

    def close(self, timeout: float = 30.0) -> None:
        """Ask the host to stop, wait for it, and kill it if it does not."""
        proc, conn = self._proc, self._conn
        if proc is None or conn is None:
            return
        try:
            self._send({"op": "stop"})
        except JobFailed:
            pass  # already gone
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        conn.close()
        if self._reader is not None:
            self._reader.join(timeout)
        self._proc = None

    def __enter__(self) -> SparkRunner:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ---- jobs ------------------------------------------------------------------------------

    def submit(
        self, job: str, request: str, on_progress: ProgressCallback | None = None
    ) -> JobHandle:
        """Queue a job ("plan" or "impact") with its JSON request; runs once the session is up."""
        self.start()
        job_id = f"rmq-{os.getpid()}-{next(self._ids)}"
        handle = JobHandle(
            job_id, on_progress, cancel=lambda: self._send({"op": "cancel", "id": job_id})
        )
        with self._jobs_lock:
            if self._gone:
                raise JobFailed(f"cannot run {job}: {self._fatal}", self.log_path)
            self._jobs[job_id] = handle
        handle.report(JobProgress(job_id, JobState.QUEUED, step="starting Spark"))
        self._send({"op": "run", "id": job_id, "job": job, "request": request})
        return handle

    def _send(self, message: dict[str, Any]) -> None:
        if self._conn is None:
            raise JobFailed("the Spark host is not running", self.log_path)
        try:
            with self._send_lock:
                self._conn.send_bytes(json.dumps(message).encode())
        except OSError as exc:
            raise JobFailed(f"the Spark host is gone ({exc})", self.log_path) from None

    # ---- reader thread ---------------------------------------------------------------------

    def _read(self) -> None:
        assert self._conn is not None
        while True:
            try:
                message = json.loads(self._conn.recv_bytes())
            except (EOFError, OSError):
                break
            self._dispatch(message)
        # The host exited (or was closed): nothing pending can finish any more.
        self._fatal = self._fatal or "the Spark host exited"
        self._ready.set()
        with self._jobs_lock:
            self._gone = True
            pending, self._jobs = list(self._jobs.values()), {}
        for handle in pending:
            handle.settle(None, JobFailed(self._fatal, self.log_path))

    def _dispatch(self, m: dict[str, Any]) -> None:
        event = m.get("event")
        if event == "ready":
            self._info = HostInfo(str(m["master"]), str(m["spark_version"]))
            self._ready.set()
            return
        if event == "fatal":
            self._fatal = str(m.get("message"))
            self._ready.set()
            return
        handle = self._jobs.get(str(m.get("id")))
        if handle is None:
            return
        if event == "progress":
            handle.report(
                JobProgress(
                    job_id=handle.job_id,
                    state=JobState.RUNNING,
                    step=str(m.get("step") or ""),
                    stage=m.get("stage"),
                    done=int(m.get("done") or 0),
                    total=int(m.get("total") or 0),
                    active=int(m.get("active") or 0),
                    failed=int(m.get("failed") or 0),
                )
            )
        elif event == "done":
            self._jobs.pop(handle.job_id, None)
            handle.report(JobProgress(handle.job_id, JobState.SUCCEEDED, step="done"))
            handle.settle(str(m["result"]), None)
        elif event == "failed":
            self._jobs.pop(handle.job_id, None)
            kind, message = m.get("kind"), str(m.get("message"))
            error: JobError
            if kind == "input":
                error, state = JobInputError(message), JobState.FAILED
            elif kind == "cancelled":
                error, state = (
                    JobCancelled(f"job {handle.job_id} was cancelled"),
                    JobState.CANCELLED,
                )
            else:
                error, state = JobFailed(message, self.log_path), JobState.FAILED
            handle.report(JobProgress(handle.job_id, state, step=message))
            handle.settle(None, error)


# ---- the console's one warm session --------------------------------------------------------

_shared: SparkRunner | None = None
_shared_lock = threading.Lock()


def shared_runner(
    master: str, log_path: Path, conf: Mapping[str, str] | None = None
) -> SparkRunner:
    """The console process's warm session, started on first use and kept for every preview.
    Asking for another master replaces it. Stopped at exit (the host also stops by itself
    when the console's end of the socket closes)."""
    global _shared
    with _shared_lock:
        if _shared is not None and (_shared.master != master or _shared._fatal is not None):
            _shared.close()
            _shared = None
        if _shared is None:
            _shared = SparkRunner(master, log_path=log_path, conf=conf)
            _shared.start()
            atexit.register(close_shared_runner)
        return _shared


def close_shared_runner() -> None:
    global _shared
    with _shared_lock:
        if _shared is not None:
            _shared.close()
            _shared = None
