"""The caller's side: send calls, settle them from a reader thread. A `ChildProcess` spawns the
process it speaks to; a `SocketPeer` reaches one already serving on a Unix socket."""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from console.services.infra.rpc.errors import ChildExited
from console.services.infra.rpc.link import Link
from console.services.infra.rpc.pending import Pending

log = logging.getLogger(__name__)

#: How long the reader waits for an exited child's exit code before describing it.
EXIT_CODE_WAIT_S = 1.0

ProgressSink = Callable[..., None]
PartSink = Callable[[Mapping[Any, Any]], None]


class Call(Pending[Any]):
    """One call into the child, as the parent holds it."""

    def __init__(
        self,
        cancel: Callable[[], None],
        call_id: int,
        method: str,
        on_progress: ProgressSink | None,
        on_part: PartSink | None = None,
    ) -> None:
        super().__init__(cancel, what=f"{method} (call {call_id})")
        self.call_id = call_id
        self.method = method
        self._on_progress = on_progress
        self._on_part = on_part
        #: Parts of the answer nobody takes as they come: the answer is given with them.
        self._parts: dict[Any, Any] = {}
        #: Set when the caller gave up: parts still on their way are nobody's.
        self._given_up = False

    def cancel(self) -> None:
        self._given_up = True
        super().cancel()

    def progressed(self, values: Sequence[Any]) -> None:
        if self._on_progress is not None and not self.done():
            self._on_progress(*values)

    def parted(self, part: Mapping[Any, Any]) -> None:
        """A part of a mapping answer, sent before the rest (see Reply.part)."""
        if self.done() or self._given_up:
            return
        if self._on_part is None:
            self._parts.update(part)
            return
        try:
            self._on_part(part)
        except Exception:
            self._parts.update(part)  # not lost: it comes with the answer
            raise

    def answered(self, value: Any) -> None:
        if self._parts and isinstance(value, Mapping):
            value = {**self._parts, **value}  # in the order the parts came, the rest last
        self._parts = {}
        self.settle(value, None)


class Peer:
    """The calls sent over one link and their answers: a reader thread settles each call; when
    the link ends, every call still pending fails with what `_exit` says of the other end."""

    def __init__(self, link: Link, *, name: str, hello: Any, reader_name: str) -> None:
        self.name = name
        self._link = link
        self._ids = itertools.count(1)
        self._calls: dict[int, Call] = {}
        self._lock = threading.Lock()
        self._exited: ChildExited | None = None
        self._send_quietly(("hello", hello))
        self._reader = threading.Thread(target=self._read, name=reader_name, daemon=True)
        self._reader.start()

    @property
    def exited(self) -> ChildExited | None:
        """Why the other end is gone, once it is."""
        return self._exited

    def call(
        self,
        method: str,
        *args: Any,
        on_progress: ProgressSink | None = None,
        on_part: PartSink | None = None,
    ) -> Call:
        """Send a call; the answer settles the returned handle. `on_progress(*values)` and
        `on_part(part)` run on the reader thread; without `on_part`, the child is told not to
        send parts (those it sends anyway are given with the answer). Raises ChildExited at
        once if the other end is gone already."""
        call_id = next(self._ids)
        # An unpicklable argument is raised here. A call that takes parts says so; the others
        # are the four values a child of before parts (a warm Spark host) still reads.
        message = ("call", call_id, method, args) + ((True,) if on_part is not None else ())
        frame = Link.encode(message)
        call = Call(
            lambda: self._send_quietly(("cancel", call_id)), call_id, method, on_progress, on_part
        )
        with self._lock:
            if self._exited is not None:
                raise self._exited.with_traceback(None)  # raised again: no growing trace
            self._calls[call_id] = call
        try:
            self._link.send_frame(frame)
        except OSError:
            pass  # the other end is going: the reader fails the call with its exit
        return call

    def stop(self) -> None:
        """Say goodbye, without waiting for the other end."""
        self._send_quietly(("close",))

    def close(self, timeout: float = 3.0) -> None:
        """Say goodbye and close the link; calls still pending fail."""
        self.stop()
        self._link.close()
        self._reader.join(timeout)

    def abort(self, timeout: float = 3.0) -> None:
        """Stop now, not after what the other end is doing: for a process we did not start, the
        same as `close` (it is not ours to stop)."""
        self.close(timeout)

    def _send_quietly(self, message: Any) -> None:
        with contextlib.suppress(OSError):
            self._link.send(message)

    def _read(self) -> None:
        why = None
        try:
            while (message := self._link.receive()) is not None:
                self._dispatch(message)
        except Exception as exc:  # a frame that does not decode: nothing after it can be trusted
            why = f"an unreadable answer ({type(exc).__name__}: {exc})"
            self._link.close()  # the other end reads the end and stops
        self._fail_all(self._exit(why))

    def _dispatch(self, message: tuple[Any, ...]) -> None:
        kind, call_id = message[0], message[1]
        with self._lock:
            if kind in ("progress", "part"):
                call = self._calls.get(call_id)
            else:
                call = self._calls.pop(call_id, None)
        if call is None:
            return
        if kind == "progress":
            try:
                call.progressed(message[2])
            except Exception:  # a caller's callback must not stop every other call's answers
                log.exception("the progress callback of %s failed", call.method)
        elif kind == "part":
            try:
                call.parted(message[2])
            except Exception:  # as for progress: the other calls' answers still come
                log.exception("the part callback of %s failed", call.method)
        elif kind == "ok":
            call.answered(message[2])
        else:
            call.settle(None, message[2])

    def _exit(self, why: str | None) -> ChildExited:
        return ChildExited(self.name, None, "", why or "ending the connection")

    def _fail_all(self, error: ChildExited) -> None:
        with self._lock:
            self._exited = error
            calls, self._calls = list(self._calls.values()), {}
        for call in calls:
            call.settle(None, error)


class ChildProcess(Peer):
    """A child process of ours serving calls: `python -m <module> --fd N`.

    `hello` is the first value the child reads (what it serves, for whom); `log` receives the
    child's stdout and stderr (a launch line first), a temporary file when None; `new_session`
    keeps a ctrl-c in the parent's terminal from reaching the child.
    """

    def __init__(
        self,
        module: str,
        *,
        name: str,
        hello: Any = None,
        log: Path | None = None,
        python: str | None = None,
        env: Mapping[str, str] | None = None,
        new_session: bool = False,
        tail_chars: int = 2000,
    ) -> None:
        self._tail_chars = tail_chars
        self._own_session = new_session
        ours, theirs = socket.socketpair()
        argv = [python or sys.executable, "-m", module, "--fd", str(theirs.fileno())]
        self._log, self._log_start = _open_log(log, argv)
        try:
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                pass_fds=(theirs.fileno(),),
                start_new_session=new_session,
                env=None if env is None else dict(env),
            )
        except BaseException:
            ours.close()
            self._log.close()
            raise
        finally:
            theirs.close()
        super().__init__(Link(ours), name=name, hello=hello, reader_name=f"rpc {module}")

    def close(self, timeout: float = 3.0) -> None:
        """Ask the child to stop and wait for it, killing it after `timeout` seconds; calls
        still pending fail."""
        self.stop()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._link.close()
        self._reader.join(timeout)
        self._log.close()

    def abort(self, timeout: float = 3.0) -> None:
        """Stop the child and what it started at once: SIGTERM to its process group when it has
        a session of its own (a JVM it launched runs its shutdown hooks, which remove its
        temporary files), to the child alone otherwise; then `close`. What is left of the
        group after `timeout` seconds is killed: nothing of it outlives the caller."""
        if self.process.poll() is None:  # not reaped: its pid (and group) are still its own
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if self._own_session:
                    os.killpg(self.process.pid, signal.SIGTERM)
                else:
                    self.process.terminate()
        self.close(timeout)
        if self._own_session:
            _end_group(self.process.pid, timeout)

    def log_tail(self) -> str:
        """The end of what the child wrote since it was started."""
        try:
            fd = self._log.fileno()
            size = os.fstat(fd).st_size
            start = max(self._log_start, size - self._tail_chars)
            data = os.pread(fd, size - start, start)
        except (OSError, ValueError):  # closed meanwhile
            return ""
        return data.decode("utf-8", "replace").strip()

    def _exit(self, why: str | None) -> ChildExited:
        try:
            code: int | None = self.process.wait(EXIT_CODE_WAIT_S)
        except subprocess.TimeoutExpired:
            code = None
        return ChildExited(self.name, code, self.log_tail(), why)


class SocketPeer(Peer):
    """A process serving calls on a Unix socket (not our child: it outlives us). `connect`
    raises OSError when nothing serves there."""

    @classmethod
    def connect(
        cls, path: Path, *, name: str, hello: Any = None, timeout: float = 2.0
    ) -> SocketPeer:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(str(path))
            sock.settimeout(None)
        except BaseException:
            sock.close()
            raise
        return cls(Link(sock), name=name, hello=hello, reader_name=f"rpc {path.name}")


def _end_group(pgid: int, grace: float) -> None:
    """Wait up to `grace` seconds for every process of group `pgid` to exit, then kill the rest.
    The group's id is not given to a new process while any of its members lives."""
    deadline = time.monotonic() + grace
    while True:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _open_log(path: Path | None, argv: Sequence[str]) -> tuple[IO[bytes], int]:
    """The file the child writes to, and where this run's part of it starts."""
    if path is None:
        return tempfile.TemporaryFile(), 0
    path.parent.mkdir(parents=True, exist_ok=True)
    log_file = path.open("a+b")  # appended to by the child, read back for the tail
    log_file.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(argv)}\n".encode())
    log_file.flush()
    return log_file, os.fstat(log_file.fileno()).st_size
