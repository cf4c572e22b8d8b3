"""A sandbox on its own thread and event loop, for synchronous callers (pytest, a TUI)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any, Generic, TypeVar

from console.sandbox.acl import AclOptions, AclSandbox, acl_sandbox
from console.sandbox.legacy import LegacyOptions, LegacySandbox, legacy_sandbox
from console.sandbox.runner import Sandbox, SandboxOptions, sandbox

T = TypeVar("T")
S = TypeVar("S")


class Background(Generic[S]):
    """`with Background(lambda: sandbox(options)) as sb:` runs a sandbox's async context in a
    daemon thread; `BackgroundSandbox` and `BackgroundAclSandbox` name the two there are.

    The trickle producer needs an event loop that keeps running between a caller's calls,
    which a test session (a loop per test) or a Textual app (busy drawing) cannot promise; a
    thread of its own can. The JVMs are spawned from that thread, which lives exactly as long
    as they should (PR_SET_PDEATHSIG follows the spawning thread). The returned `Sandbox` is
    usable from any loop: its methods create their own clients and processes.
    """

    def __init__(self, open_context: Callable[[], AbstractAsyncContextManager[S]]) -> None:
        self._open = open_context
        self._ready: concurrent.futures.Future[S] = concurrent.futures.Future()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, name="rmq-sandbox", daemon=True)
        self._error: BaseException | None = None

    def begin(self) -> None:
        """Start without waiting (`start` then waits): a caller with other work to do while
        the JVMs boot and the seed settles."""
        if not self._thread.is_alive() and not self._ready.done():
            self._thread.start()

    def start(self, timeout: float = 600.0) -> S:
        """Start (unless begun) and wait until the sandbox is up; re-raises whatever made
        start-up fail."""
        self.begin()
        return self._ready.result(timeout)

    def stop(self, timeout: float = 180.0) -> None:
        """Tear the sandbox down and wait for it; re-raises a teardown failure."""
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"sandbox did not stop within {timeout}s")
        if self._error is not None and self._ready.done() and self._ready.exception() is None:
            raise self._error

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run a coroutine on the sandbox's loop (e.g. one that uses its admin client)."""
        if self._loop is None:
            raise RuntimeError("sandbox not started")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def __enter__(self) -> S:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # handed to the caller's thread, never swallowed
            self._error = exc
            if not self._ready.done():
                self._ready.set_exception(exc)

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with self._open() as sb:
            self._ready.set_result(sb)
            await self._stop.wait()


class BackgroundSandbox(Background[Sandbox]):
    """The main sandbox (namesrv, two brokers, seeded scenario, live traffic) in a thread."""

    def __init__(self, options: SandboxOptions | None = None) -> None:
        super().__init__(lambda: sandbox(options))
        self.options = options


class BackgroundAclSandbox(Background[AclSandbox]):
    """The ACL cluster (namesrv, one authenticating broker, seeded) in a thread."""

    def __init__(self, options: AclOptions | None = None) -> None:
        super().__init__(lambda: acl_sandbox(options))
        self.options = options


class BackgroundLegacySandbox(Background[LegacySandbox]):
    """The 4.9.7 cluster (namesrv, one broker with expiring commit logs, seeded) in a thread."""

    def __init__(self, options: LegacyOptions | None = None) -> None:
        super().__init__(lambda: legacy_sandbox(options))
        self.options = options
