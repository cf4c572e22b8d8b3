"""An event loop on its own thread for the wire client.

Decoding broker answers is CPU work. On the UI's loop a refresh of hundreds of groups would sit
between a key press and its repaint; on this thread it only shares the GIL, which the UI thread
gets back within the switch interval.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

log = logging.getLogger(__name__)


class NetworkLoop:
    def __init__(self, name: str = "rmq-network") -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await `coro` on the network thread; cancelling the caller cancels it there too."""
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return await asyncio.wrap_future(future)

    def stop(self, last: Coroutine[Any, Any, Any] | None = None, timeout: float = 2.0) -> None:
        """Run `last` (closing connections), then stop the thread. Safe to call twice."""
        if self._loop.is_closed() or not self._thread.is_alive():
            if last is not None:
                last.close()
            return
        if last is not None:
            future = asyncio.run_coroutine_threadsafe(last, self._loop)
            try:
                future.result(timeout)
            except (concurrent.futures.TimeoutError, OSError, RuntimeError) as exc:
                # Closing sockets of a cluster that went away is not worth an error at exit.
                log.debug("closing the network loop: %s", exc)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self._loop.close()
