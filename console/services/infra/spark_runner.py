"""The console's side of the warm Spark session: a child process (`jobs.host`) that owns the
SparkSession, spoken to with the console's RPC (console.services.infra.rpc).

The console never imports pyspark and never shares its terminal with the JVM: the child's stdout
and stderr go to a log file, it runs in its own session (a ctrl-c in the console does not reach
it), and it stops when the console closes the socket or exits.

Jobs are submitted with `SparkRunner.submit`; progress comes back as frozen `JobProgress`
snapshots on a callback (called from the runner's reader thread), the result through the
returned `JobHandle`, synchronously (`result()`) or from asyncio (`await wait()`).
"""

from __future__ import annotations

import atexit
import functools
import itertools
import os
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Protocol, cast

from console.services.infra.rpc import (
    Call,
    CallCancelled,
    ChildExited,
    ChildProcess,
    Peer,
    Pending,
    RemoteError,
)
from console.services.infra.spark_jobs import (
    JobCancelled,
    JobFailed,
    JobInputError,
    JobProgress,
    JobState,
    ProgressCallback,
)


@dataclass(frozen=True, slots=True)
class HostInfo:
    master: str
    spark_version: str


class JobHandle(Pending[str]):
    """One submitted job. A runner reports progress and settles it exactly once (from any
    thread); callers wait on it: `result(timeout)` returns the job's JSON result or raises
    JobInputError, JobCancelled or JobFailed; `await wait()` does the same from asyncio, and
    cancelling the awaiting task cancels the job."""

    def __init__(
        self,
        job_id: str,
        on_progress: ProgressCallback | None = None,
        cancel: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(cancel, what=f"job {job_id}")
        self.job_id = job_id
        self._on_progress = on_progress

    def report(self, progress: JobProgress) -> None:
        if self._on_progress is not None:
            self._on_progress(progress)


class JobRunner(Protocol):
    """What the planning service needs: submit a job, get a handle."""

    def submit(
        self, job: str, request: str, on_progress: ProgressCallback | None = None
    ) -> JobHandle: ...


@dataclass(frozen=True, slots=True)
class HostOptions:
    """What the host starts its session with (sent over the socket, never on its command line:
    a conf value may be a credential)."""

    master: str
    conf: Mapping[str, str]
    warm_up: bool


class SparkRunner:
    """A long-lived child process (`host_module`, jobs.host) holding a SparkSession on `master`,
    spoken to with the console's RPC (console.services.infra.rpc): a `ready` call answered once the
    session is up, and one `run` call per job."""

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
        self._host: Peer | None = None
        self._ready: Call | None = None
        self._info: HostInfo | None = None
        self._fatal: str | None = None
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Spawn the host; the session warms up in the background. Idempotent."""
        with self._lock:
            if self._host is not None:
                return
            self._info, self._fatal = None, None
            self._host = self._open()
            self._ready = ready = self._host.call("ready")
            ready.add_done_callback(functools.partial(self._settle_ready, self._host, ready))

    def _open(self) -> Peer:
        """The host to speak to: a child of ours, started here."""
        env = dict(os.environ if self.env is None else self.env)
        # Executors (python workers) must run the same interpreter as the host, not `python3`.
        env.setdefault("PYSPARK_PYTHON", self.python)
        env.setdefault("PYSPARK_DRIVER_PYTHON", self.python)
        # Its own session: a ctrl-c in the console's terminal does not reach the JVM. Its
        # output goes to the log: the JVM never writes on the terminal Textual draws on.
        return ChildProcess(
            self.host_module,
            name="the Spark host",
            hello=HostOptions(self.master, self.conf, self.warm_up),
            log=self.log_path,
            python=self.python,
            env=env,
            new_session=True,
        )

    def _settle_ready(self, host: Peer, ready: Call) -> None:
        try:
            self._info = ready.result(0)
        except RemoteError as exc:
            self._fatal = str(exc)
            host.stop()  # a host without a session has nothing left to serve

    def wait_ready(self, timeout: float | None = None) -> HostInfo:
        """Block until the session is up; raises JobFailed if it could not start."""
        self.start()
        assert self._ready is not None
        try:
            info = self._ready.result(timeout)
        except TimeoutError:
            raise TimeoutError(
                f"Spark did not start within {timeout}s (log: {self.log_path})"
            ) from None
        except RemoteError as exc:
            raise JobFailed(f"Spark could not start: {exc}", self.log_path) from None
        return cast(HostInfo, info)

    @property
    def ready(self) -> bool:
        return self._info is not None

    @property
    def failed(self) -> bool:
        """The host could not start its session, or is gone."""
        return self._fatal is not None or (self._host is not None and self._host.exited is not None)

    def close(self, timeout: float = 30.0) -> None:
        """Ask the host to stop, wait for it, and kill it if it does not. A host still opening
        its session is stopped at once: nothing of ours ran there yet, and a command that failed
        early (a spec error, a cluster that does not answer) waited 15-30 s for a JVM to finish
        starting only to stop it."""
        with self._lock:
            host, self._host = self._host, None
            starting = self._info is None and self._fatal is None
        if host is None:
            return
        if starting:
            host.abort()
        else:
            host.close(timeout)

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
        host = self._host
        assert host is not None
        job_id = f"rmq-{os.getpid()}-{next(self._ids)}"
        call: Call | None = None

        def cancel() -> None:
            if call is not None:
                call.cancel()

        def running(step: str, stage: str | None, *tasks: int) -> None:
            handle.report(JobProgress(job_id, JobState.RUNNING, step, stage, *tasks))

        if self._fatal is not None:
            raise JobFailed(f"cannot run {job}: {self._fatal}", self.log_path)
        handle = JobHandle(job_id, on_progress, cancel)
        handle.report(JobProgress(job_id, JobState.QUEUED, step="starting Spark"))
        try:
            sent = host.call("run", job_id, job, request, on_progress=running)
        except RemoteError as exc:  # the host is gone
            raise JobFailed(f"cannot run {job}: {self._fatal or exc}", self.log_path) from None
        call = sent
        sent.add_done_callback(functools.partial(self._finish, handle, sent))
        return handle

    def _finish(self, handle: JobHandle, call: Call) -> None:
        """The host answered (or went away): report the job's last state and settle it."""
        try:
            result = cast(str, call.result(0))
        except JobInputError as exc:
            handle.report(JobProgress(handle.job_id, JobState.FAILED, step=str(exc)))
            handle.settle(None, exc)
        except CallCancelled:
            handle.report(JobProgress(handle.job_id, JobState.CANCELLED, step="cancelled"))
            handle.settle(None, JobCancelled(f"job {handle.job_id} was cancelled"))
        except Exception as exc:  # whatever else failed in the host, or the host itself
            message = self._fatal if isinstance(exc, ChildExited) and self._fatal else str(exc)
            handle.report(JobProgress(handle.job_id, JobState.FAILED, step=message))
            handle.settle(None, JobFailed(message, self.log_path))
        else:
            handle.report(JobProgress(handle.job_id, JobState.SUCCEEDED, step="done"))
            handle.settle(result, None)


# ---- the console's one warm session --------------------------------------------------------

_shared: SparkRunner | None = None
#: What `_shared` was asked to add to this process's environment (a server's token).
_shared_env: dict[str, str] | None = None
_shared_lock = threading.Lock()


def shared_runner(
    master: str,
    log_path: Path,
    conf: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> SparkRunner:
    """The console process's warm session, started on first use and kept for every preview.
    Asking for another master, or for a host with another environment (a server's token),
    replaces it. Stopped at exit (the host also stops by itself when the console's end of the
    socket closes)."""
    global _shared, _shared_env
    wanted = dict(env) if env else None
    with _shared_lock:
        if _shared is not None and (
            _shared.master != master or _shared.failed or _shared_env != wanted
        ):
            _shared.close()
            _shared = None
        if _shared is None:
            host_env = None if wanted is None else {**os.environ, **wanted}
            _shared = SparkRunner(master, log_path=log_path, conf=conf, env=host_env)
            _shared_env = wanted
            _shared.start()
            atexit.register(close_shared_runner)
        return _shared


def close_shared_runner() -> None:
    global _shared
    with _shared_lock:
        if _shared is not None:
            _shared.close()
            _shared = None
