"""A result that arrives from another thread, settled exactly once."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Generic, TypeVar, cast

log = logging.getLogger(__name__)

T = TypeVar("T")


class Pending(Generic[T]):
    """A result that arrives from another thread: settled exactly once, waited for with
    `result(timeout)`, or from asyncio with `await wait()` (cancelling the waiting task cancels
    the work too)."""

    def __init__(self, cancel: Callable[[], None] | None = None, *, what: str = "the call") -> None:
        self._cancel = cancel
        self._what = what
        self._settled = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def done(self) -> bool:
        return self._settled.is_set()

    def cancel(self) -> None:
        """Ask for the work to stop; it still settles (cancelled, or done if it won the race)."""
        if not self.done() and self._cancel is not None:
            self._cancel()

    def result(self, timeout: float | None = None) -> T:
        """The value, or the error raised; TimeoutError if not settled within `timeout`."""
        if not self._settled.wait(timeout):
            raise TimeoutError(f"{self._what} still running after {timeout}s")
        if self._error is not None:
            # One error may settle many calls (a child that exited) and be raised again and
            # again: each raise would add its frames to the same traceback.
            raise self._error.with_traceback(None)
        return cast(T, self._value)

    async def wait(self) -> T:
        """Await the result; cancelling the awaiting task cancels the work."""
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[None] = loop.create_future()

        def wake_up() -> None:
            if not woken.done():
                woken.set_result(None)

        def wake() -> None:
            try:
                loop.call_soon_threadsafe(wake_up)
            except RuntimeError:
                pass  # the loop is closed: nobody is waiting any more

        self.add_done_callback(wake)
        try:
            await woken
        except asyncio.CancelledError:
            self.cancel()
            raise
        return self.result(0)

    def add_done_callback(self, fn: Callable[[], None]) -> None:
        """Call `fn()` once settled (at once if it is), on the thread that settles it."""
        with self._lock:
            if not self._settled.is_set():
                self._callbacks.append(fn)
                return
        fn()

    def settle(self, value: T | None, error: BaseException | None) -> bool:
        """Settle with a value or an error; False (and no effect) if already settled."""
        with self._lock:
            if self._settled.is_set():
                return False
            self._value, self._error = value, error
            self._settled.set()
            callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            try:
                fn()
            except Exception:  # one waiter's failure must not keep the others waiting
                log.exception("a callback of %s failed", self._what)
        return True
