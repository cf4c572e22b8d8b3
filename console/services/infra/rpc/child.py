"""The child's side: read calls, run each (on a thread or a task), answer once."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import pickle
import socket
import struct
import sys
import threading
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from console.services.infra.rpc.errors import CallCancelled, Portable, RemoteError, portable_error
from console.services.infra.rpc.link import Link

#: Handlers of a child: handler(reply, *args) returns the answer (or, async, awaits it).
Handler = Callable[..., Any]
AsyncHandler = Callable[..., Awaitable[Any]]


def same_user(sock: socket.socket) -> bool:
    """Whether the process at the other end of a Unix socket runs as our user (the kernel's
    word, SO_PEERCRED); where the kernel cannot say, the folder's mode is the only guard."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True
    creds = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


def serve_listener(
    listener: socket.socket,
    handlers: Mapping[str, Handler],
    *,
    portable: Portable = portable_error,
    accept_hello: Callable[[Any], bool] = lambda hello: True,
) -> None:
    """Serve every connection to a listening Unix socket as `serve_threads` serves a parent,
    each on a thread of its own, until the listener is closed. A peer of another user, or
    whose hello `accept_hello` refuses, is hung up on before anything of it is run."""

    def one(sock: socket.socket) -> None:
        link = Link(sock)
        try:
            if same_user(sock) and accept_hello(link.receive_hello()):
                serve_threads(link, handlers, portable=portable)
        except (OSError, ValueError, pickle.UnpicklingError):
            pass  # a peer that went away or spoke something else: only its connection ends
        finally:
            link.close()

    while True:
        try:
            sock, _ = listener.accept()
        except OSError:  # closed: the host is stopping
            return
        threading.Thread(target=one, args=(sock,), name="rpc connection", daemon=True).start()


def link_to_parent(argv: Sequence[str] | None = None) -> Link:
    """The child's end of the socket, from `--fd N` on its command line."""
    parser = argparse.ArgumentParser(description="a child process of the console")
    parser.add_argument("--fd", type=int, required=True, help="socket inherited from the parent")
    args = parser.parse_args(argv)
    return Link(socket.socket(fileno=args.fd))


class Reply:
    """One call as the child serves it: report progress, send parts of the answer, answer once,
    hear of a cancel."""

    def __init__(
        self,
        link: Link,
        call_id: int,
        method: str,
        args: tuple[Any, ...],
        portable: Portable,
        finished: Callable[[Reply], None],
        takes_parts: bool = False,
    ) -> None:
        self.call_id = call_id
        self.method = method
        self.args = args
        #: Set once the parent cancelled the call (the handler may poll it).
        self.cancelled = threading.Event()
        #: Whether the caller takes parts of the answer as they come (see `part`).
        self.takes_parts = takes_parts
        self._link = link
        self._portable = portable
        self._finished = finished
        self._on_cancel: list[Callable[[], None]] = []
        self._answered = False
        self._lock = threading.Lock()

    def progress(self, *values: Any) -> None:
        if not self._answered:
            with contextlib.suppress(OSError):
                self._link.send(("progress", self.call_id, values))

    def part(self, part: Mapping[Any, Any]) -> None:
        """Send part of a mapping answer now; the parent has it before the answer, which need
        not carry it again. For a caller who `takes_parts`; for another, Call.answered puts
        them together (each sent and read as the reads go on, for nothing).
        A refresh of 10,000 groups sent whole is pickled after the last read and unpickled
        after that; in parts, both ends do it while the reads go on."""
        if self._answered:
            return
        try:
            frame = Link.encode(("part", self.call_id, part))
        except Exception as exc:  # a read that does not pickle: the call fails saying so, now
            self.fail(
                RemoteError(
                    type(exc).__name__,
                    f"a part of the answer to {self.method} could not be sent: {exc}",
                )
            )
            return
        with contextlib.suppress(OSError):
            self._link.send_frame(frame)

    def on_cancel(self, fn: Callable[[], None]) -> None:
        """Call `fn()` when the parent cancels the call (at once if it has)."""
        with self._lock:
            if not self.cancelled.is_set():
                self._on_cancel.append(fn)
                return
        fn()

    def cancel(self) -> None:
        with self._lock:
            if self.cancelled.is_set():
                return
            self.cancelled.set()
            hooks, self._on_cancel = self._on_cancel, []
        for fn in hooks:
            try:
                fn()
            except Exception:  # the flag is set: the handler still sees the cancel
                traceback.print_exc(file=sys.stderr)

    def ok(self, value: Any) -> None:
        try:
            frame = Link.encode(("ok", self.call_id, value))
        except Exception as exc:  # an answer that does not pickle: say so instead
            self.fail(
                RemoteError(
                    type(exc).__name__, f"the answer to {self.method} could not be sent: {exc}"
                )
            )
            return
        self._answer(frame)

    def fail(self, error: BaseException) -> None:
        try:
            frame = Link.encode(("err", self.call_id, self._portable(error)))
        except Exception:  # the policy let through something that does not pickle
            frame = Link.encode(("err", self.call_id, RemoteError.of(error)))
        self._answer(frame)

    def _answer(self, frame: bytes) -> None:
        with self._lock:
            if self._answered:
                return
            self._answered = True
        with contextlib.suppress(OSError):  # the parent is gone: nobody to answer
            self._link.send_frame(frame)
        self._finished(self)


def _serve(
    link: Link,
    handlers: Mapping[str, Handler],
    start: Callable[[Reply, Handler], None],
    portable: Portable,
) -> None:
    """Read calls until the parent closes; `start(reply, handler)` runs each. Calls still
    running at the end are cancelled."""
    replies: dict[int, Reply] = {}
    lock = threading.Lock()

    def finished(reply: Reply) -> None:
        with lock:
            replies.pop(reply.call_id, None)

    try:
        while True:
            message = link.receive()
            if message is None or message[0] == "close":
                return
            if message[0] == "cancel":
                with lock:
                    cancelled = replies.get(message[1])
                if cancelled is not None:
                    cancelled.cancel()
                continue
            if message[0] != "call":
                continue
            _, call_id, method, args, *parts = message  # parts: (True,) or, before, nothing
            reply = Reply(link, call_id, method, tuple(args), portable, finished, bool(parts))
            handler = handlers.get(method)
            if handler is None:
                reply.fail(RemoteError("UnknownOperation", f"no such operation: {method}"))
                continue
            with lock:
                replies[call_id] = reply
            start(reply, handler)
    finally:
        with lock:
            running = list(replies.values())
        for reply in running:
            reply.cancel()


def serve_threads(
    link: Link, handlers: Mapping[str, Handler], *, portable: Portable = portable_error
) -> None:
    """Serve calls until the parent closes the link, each on a thread of its own:
    `handler(reply, *args)` returns the answer or raises; one raising after its call was
    cancelled answers CallCancelled."""

    def run(reply: Reply, handler: Handler) -> None:
        try:
            value = handler(reply, *reply.args)
        except BaseException as exc:  # every failure goes back to the parent, who decides
            reply.fail(CallCancelled(reply.method) if reply.cancelled.is_set() else exc)
        else:
            reply.ok(value)

    def start(reply: Reply, handler: Handler) -> None:
        name = f"{reply.method}-{reply.call_id}"
        threading.Thread(target=run, args=(reply, handler), name=name, daemon=True).start()

    _serve(link, handlers, start, portable)


async def serve_async(
    link: Link,
    handlers: Mapping[str, AsyncHandler],
    *,
    portable: Portable = portable_error,
    on_answer: Callable[[], None] | None = None,
) -> None:
    """Serve calls until the parent closes the link, each as a task on the running loop:
    `await handler(reply, *args)`; a cancel cancels the task. `on_answer()` runs after each
    answer is sent."""
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task[None]] = set()

    async def run(reply: Reply, handler: AsyncHandler) -> None:
        try:
            value = await handler(reply, *reply.args)
        except asyncio.CancelledError:
            reply.fail(CallCancelled(reply.method))
        except Exception as exc:  # every failure goes back to the parent, who decides
            reply.fail(exc)
        else:
            reply.ok(value)
        if on_answer is not None:
            on_answer()

    def begin(reply: Reply, handler: AsyncHandler) -> None:
        task = loop.create_task(run(reply, handler), name=f"{reply.method}-{reply.call_id}")
        tasks.add(task)
        task.add_done_callback(tasks.discard)

        def cancel_task() -> None:  # on the reading thread
            loop.call_soon_threadsafe(task.cancel)

        reply.on_cancel(cancel_task)

    def start(reply: Reply, handler: Handler) -> None:  # on the reading thread
        loop.call_soon_threadsafe(begin, reply, handler)

    try:
        await asyncio.to_thread(_serve, link, handlers, start, portable)
    finally:
        await asyncio.sleep(0)  # tasks whose start was scheduled last exist now
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
