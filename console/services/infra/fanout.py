"""Many reads at once, but not all at once: the fan-out of a refresh over hundreds of groups."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import TypeVar

from console.rocketmq.errors import RocketMQError

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: Groups read at the same time; each read is several requests per broker.
GROUP_CONCURRENCY = 16


async def gather_bounded(
    fn: Callable[[K], Awaitable[V]],
    items: Sequence[K],
    *,
    limit: int = GROUP_CONCURRENCY,
    on_done: Callable[[int, int], None] | None = None,
) -> dict[K, V | Exception]:
    """fn(item) for every item with at most `limit` running; failures come back as values.

    Cancelling the caller cancels every read still running (a superseded refresh stops).
    """
    gate = asyncio.Semaphore(limit)
    results: dict[K, V | Exception] = {}
    done = 0

    async def one(item: K) -> None:
        nonlocal done
        async with gate:
            try:
                results[item] = await fn(item)
            except Exception as exc:  # one group failing must not sink the other 499
                results[item] = exc
        done += 1
        if on_done is not None:
            on_done(done, len(items))

    if on_done is not None:
        on_done(0, len(items))  # the total shows before the first answer
    async with asyncio.TaskGroup() as tg:
        for item in items:
            tg.create_task(one(item))
    return {item: results[item] for item in items}


async def gather_answers(
    fn: Callable[[K], Awaitable[V]], items: Sequence[K], *, limit: int = GROUP_CONCURRENCY
) -> dict[K, V | RocketMQError]:
    """fn(item) for every item with at most `limit` running: what the cluster answered, or the
    wire error it gave instead. Any other exception is a bug, and is raised."""
    answers = await gather_bounded(fn, items, limit=limit)
    out: dict[K, V | RocketMQError] = {}
    for item, answer in answers.items():
        if isinstance(answer, Exception) and not isinstance(answer, RocketMQError):
            raise answer
        out[item] = answer
    return out


class Cadence:
    """Passes progress on at most every `interval` seconds, and always the first and last step:
    500 groups answering must not mean 500 repaints of the status line."""

    def __init__(
        self,
        report: Callable[[int, int], None],
        interval: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._report = report
        self._interval = interval
        self._clock = clock
        self._last = float("-inf")

    def __call__(self, done: int, total: int) -> None:
        now = self._clock()
        if done in (0, total) or now - self._last >= self._interval:
            self._last = now
            self._report(done, total)
