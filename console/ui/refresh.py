"""Many reads at once, but not all at once: the fan-out of a refresh over hundreds of groups."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import TypeVar

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

    async with asyncio.TaskGroup() as tg:
        for item in items:
            tg.create_task(one(item))
    return {item: results[item] for item in items}
