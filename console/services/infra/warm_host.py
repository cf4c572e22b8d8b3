"""A warm job host beside the Spark Connect server of `rmq-console spark up`.

A `rmq-console plan` that starts its own job host pays, every time, for a fresh Python process
importing the Connect client (pandas, pyarrow, grpc, pyspark.sql: ~0.7 s of CPU) and opening a
session. `spark up` therefore also starts one host that stays (`python -m jobs.host --listen`):
the client imported, a session open on the server and warmed by one small plan. It serves the
console's job RPC on a Unix socket in the server's private folder (mode 0700, the socket 0600,
and a peer of another user is refused by the kernel's word), so a plan command sends its request
there and only waits for the job.

Its record (host.json) says which server it belongs to and which interpreter and code it runs. A
command trusts it only when all of that still holds, the process is alive and the socket answers
a `ready` call at once; otherwise the command starts its own host, as without `spark up`. The
host stops by itself when its server's process is gone or its session stops answering, and
`spark down` stops it first.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import console
from console import json_text
from console.processes import pid_alive
from console.services.infra.connect_server import (
    STOP_TIMEOUT_S,
    ServerHome,
    ServerRecord,
    log_tail,
    terminate,
)
from console.services.infra.record_files import read_record, write_record
from console.services.infra.rpc import Peer, RemoteError, SocketPeer
from console.services.infra.spark_runner import HostOptions, SparkRunner

HOST_MODULE = "jobs.host"
LISTEN_FLAG = "--listen"
NAME = "the warm Spark host"
#: A warm host answers `ready` at once; one that does not is not trusted with a plan.
ATTACH_TIMEOUT_S = 2.0
#: Longest path a Unix socket can be bound to on Linux (sun_path, with its terminating NUL).
SOCKET_PATH_MAX = 107


class WarmHostError(Exception):
    """The warm host could not be started; the message says why (and where its log is)."""


@dataclass(frozen=True, slots=True)
class ListenOptions:
    """What `jobs.host --listen` reads from its stdin: its session, where to serve, and the
    server whose end is its own."""

    host: HostOptions
    socket: str
    server_pid: int


@dataclass(frozen=True, slots=True)
class HostRecord:
    """A warm host started by `start`, as written to its record file."""

    pid: int
    socket: str
    server_pid: int
    server_port: int
    #: The interpreter and the `console` package it runs: a command of another install or
    #: another checkout does not send its jobs to code that is not its own.
    python: str
    code: str
    log: str
    started_at_ms: int

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> HostRecord:
        d = json_text.loads(text)
        return cls(
            pid=int(d["pid"]),
            socket=str(d["socket"]),
            server_pid=int(d["server_pid"]),
            server_port=int(d["server_port"]),
            python=str(d["python"]),
            code=str(d["code"]),
            log=str(d["log"]),
            started_at_ms=int(d["started_at_ms"]),
        )


@dataclass(frozen=True, slots=True)
class HostFiles:
    """The warm host's files, in the server's folder."""

    home: ServerHome

    @property
    def record_path(self) -> Path:
        return self.home.root / "host.json"

    @property
    def socket_path(self) -> Path:
        return self.home.root / "host.sock"

    @property
    def log_path(self) -> Path:
        return self.home.root / "host.log"

    def read(self) -> HostRecord | None:
        return read_record(self.record_path, HostRecord.from_json)

    def write(self, record: HostRecord) -> None:
        write_record(self.record_path, record.to_json())

    def forget(self) -> None:
        self.record_path.unlink(missing_ok=True)


def this_code() -> str:
    """The folder of the `console` package this process runs."""
    return str(Path(console.__file__).resolve().parent)


def is_our_host(pid: int) -> bool:
    """The pid runs a listening job host (a recycled pid does not); where /proc cannot be read,
    a live pid is taken at its word."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return not Path("/proc/self").exists() and pid_alive(pid)
    except OSError:
        return pid_alive(pid)
    return HOST_MODULE.encode() in argv and LISTEN_FLAG.encode() in argv


def stale_reason(record: HostRecord, server: ServerRecord) -> str | None:
    """Why the recorded host must not be used by this process with this server (None: it may,
    once its socket answers)."""
    if record.server_pid != server.pid or record.server_port != server.port:
        return "it belongs to another server"
    if record.python != sys.executable or record.code != this_code():
        return "it runs another interpreter or another copy of the code"
    if not (pid_alive(record.pid) and is_our_host(record.pid)):
        return "its process is gone"
    return None


# ---- start and stop (spark up / spark down) --------------------------------------------------


def start(home: ServerHome, server: ServerRecord, *, timeout: float) -> HostRecord:
    """Start the warm host on `server` and wait until its session is up and warm; raises
    WarmHostError (the host stopped) when it does not get there within `timeout`."""
    files = HostFiles(home)
    stop(home)  # a host left from an earlier server is never reused
    if len(str(files.socket_path)) > SOCKET_PATH_MAX:
        raise WarmHostError(
            f"the cache folder's path is too long for a Unix socket ({files.socket_path})"
        )
    files.socket_path.unlink(missing_ok=True)
    options = ListenOptions(
        HostOptions(server.url, {}, warm_up=True), str(files.socket_path), server.pid
    )
    env = {**os.environ, **server.client_env}  # the token: in the environment, never argv
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    argv = [sys.executable, "-m", HOST_MODULE, LISTEN_FLAG]
    with files.log_path.open("ab") as log:
        log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(argv)}\n".encode())
        log.flush()
        offset = log.tell()
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives `spark up`; a ctrl-c there does not reach it
            cwd=home.root,
            env=env,
        )
    assert proc.stdin is not None
    with proc.stdin:
        pickle.dump(options, proc.stdin)
    record = HostRecord(
        pid=proc.pid,
        socket=str(files.socket_path),
        server_pid=server.pid,
        server_port=server.port,
        python=sys.executable,
        code=this_code(),
        log=str(files.log_path),
        started_at_ms=int(time.time() * 1000),
    )
    files.write(record)  # first, so that `spark down` stops a host that is starting
    try:
        _wait_ready(proc, files, offset, timeout)
    except BaseException:
        terminate(proc.pid, STOP_TIMEOUT_S)
        proc.wait()
        files.forget()
        raise
    return record


def _wait_ready(proc: subprocess.Popen[bytes], files: HostFiles, offset: int, t: float) -> None:
    deadline = time.monotonic() + t
    while True:
        if proc.poll() is not None:
            raise WarmHostError(
                f"it exited while starting (exit code {proc.returncode}); the end of its log "
                f"({files.log_path}):\n{log_tail(files.log_path, offset)}"
            )
        left = deadline - time.monotonic()
        if left <= 0:
            raise WarmHostError(f"it did not start within {t:.0f}s (log: {files.log_path})")
        try:
            peer = SocketPeer.connect(files.socket_path, name=NAME)
        except OSError:  # not listening yet
            time.sleep(0.2)
            continue
        try:
            peer.call("ready").result(left)
        except TimeoutError:
            continue
        except RemoteError as exc:
            raise WarmHostError(f"its Spark session did not start: {exc}") from None
        finally:
            peer.close()
        return


def stop(home: ServerHome, timeout: float = STOP_TIMEOUT_S) -> HostRecord | None:
    """Stop the recorded warm host (None when none was running) and forget it."""
    files = HostFiles(home)
    record = files.read()
    if record is not None and pid_alive(record.pid) and is_our_host(record.pid):
        terminate(record.pid, timeout)
    else:
        record = None
    files.forget()
    files.socket_path.unlink(missing_ok=True)
    return record


def running(home: ServerHome, server: ServerRecord) -> HostRecord | None:
    """The recorded warm host of `server`, when this process may use it and it is alive."""
    record = HostFiles(home).read()
    if record is None or stale_reason(record, server) is not None:
        return None
    return record


# ---- use (a plan command) ---------------------------------------------------------------------


class WarmRunner(SparkRunner):
    """A SparkRunner whose host is the warm one, already connected: closing it hangs up (a job
    still running is cancelled) and leaves the host running for the next command."""

    def __init__(self, peer: Peer, record: HostRecord, master: str) -> None:
        super().__init__(master, log_path=Path(record.log), warm_up=False)
        self._peer = peer

    def _open(self) -> Peer:
        return self._peer


def attach(home: ServerHome, server: ServerRecord) -> WarmRunner | None:
    """A runner on the warm host of `server`, when there is one this process may trust and it
    answers at once; None otherwise (the caller starts a host of its own). A record whose
    process is gone is removed."""
    files = HostFiles(home)
    record = files.read()
    if record is None:
        return None
    if stale_reason(record, server) is not None:
        if not pid_alive(record.pid):
            files.forget()
        return None
    try:
        peer = SocketPeer.connect(Path(record.socket), name=NAME, timeout=ATTACH_TIMEOUT_S)
    except OSError:
        return None
    try:
        peer.call("ready").result(ATTACH_TIMEOUT_S)
    except (TimeoutError, RemoteError):
        with contextlib.suppress(OSError):
            peer.close()
        return None
    return WarmRunner(peer, record, server.url)
