"""Many requests at once, but not all at once: the one place concurrency is bounded.

A refresh fans out over hundreds of groups, a batch read over thousands of queues, an apply over
thousands of writes: each asks through `Limit` (at most N running), `LimitPerKey` (at most N
running per broker address), or one of the gathers built on them. `ask_each` asks every broker
of a small set at once.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from typing import Generic, TypeVar

from console.rocketmq.errors import RocketMQError

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
T = TypeVar("T")

#: Groups read at the same time; each read is several requests per broker.
GROUP_CONCURRENCY = 16


class Limit:
    """At most `limit` of the requests run through it at a time; the rest wait their turn."""

    def __init__(self, limit: int) -> None:
        self._gate = asyncio.Semaphore(limit)

    async def run(self, request: Callable[[], Awaitable[V]]) -> V:
        async with self._gate:
            return await request()


class LimitPerKey:
    """At most `limit` requests at a time for each key (a broker address): a request's timeout
    runs from when it is sent, so thousands sent at once to one broker would time out waiting in
    its queue."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._limits: dict[Hashable, Limit] = {}

    async def run(self, key: Hashable, request: Callable[[], Awaitable[V]]) -> V:
        limit = self._limits.get(key)
        if limit is None:
            limit = self._limits[key] = Limit(self._limit)
        return await limit.run(request)


async def gather_limited(
    fn: Callable[[T], Awaitable[V]], items: Sequence[T], *, limit: int
) -> list[V]:
    """fn(item) for every item with at most `limit` running, the answers in the order of
    `items`; the first failure is raised (as asyncio.gather raises it)."""
    gate = Limit(limit)
    return list(await asyncio.gather(*(gate.run(functools.partial(fn, item)) for item in items)))


async def answers(aws: Sequence[Awaitable[V]]) -> list[V | BaseException]:
    """What each of `aws` answered, or the exception it raised instead, in order (asyncio.gather
    with return_exceptions). When every one is a future already answered (a batch's shared
    answers: thousands of group reads ask for the few the first one waited for), they are read
    as they stand: a gather would take two turns of the event loop and a callback for each."""
    if all(isinstance(a, asyncio.Future) and a.done() and not a.cancelled() for a in aws):
        settled: list[asyncio.Future[V]] = aws  # type: ignore[assignment]
        return [f.exception() or f.result() for f in settled]
    return list(await asyncio.gather(*aws, return_exceptions=True))


async def ask_each(
    targets: Mapping[K, str], fn: Callable[[str], Awaitable[V]]
) -> dict[K, V | BaseException]:
    """fn(address) for every named address at once (a cluster's few brokers); what each
    answered, or the exception it raised instead, by name."""
    names = list(targets)
    answers = await asyncio.gather(*(fn(targets[n]) for n in names), return_exceptions=True)
    return dict(zip(names, answers, strict=True))


async def gather_bounded(
    fn: Callable[[K], Awaitable[V]],
    items: Sequence[K],
    *,
    limit: int = GROUP_CONCURRENCY,
    on_done: Callable[[int, int], None] | None = None,
    on_each: Callable[[K, V | Exception], None] | None = None,
) -> dict[K, V | Exception]:
    """fn(item) for every item with at most `limit` running; failures come back as values.
    `on_each(item, answer)` hears of each as it comes, before `on_done` counts it.

    Cancelling the caller cancels every read still running (a superseded refresh stops).
    """
    results: dict[K, V | Exception] = {}
    done = 0
    # `limit` workers taking the next item in turn: not a task per item waiting at a gate (10,000
    # groups would be 10,000 tasks, each woken in turn by the event loop).
    queue = iter(items)

    async def worker() -> None:
        nonlocal done
        for item in queue:
            answer: V | Exception
            try:
                answer = await fn(item)
            except Exception as exc:  # one group failing must not sink the other 499
                answer = exc
            results[item] = answer
            if on_each is not None:
                on_each(item, answer)
            done += 1
            if on_done is not None:
                on_done(done, len(items))

    if on_done is not None:
        on_done(0, len(items))  # the total shows before the first answer
    async with asyncio.TaskGroup() as tg:
        for _ in range(min(limit, len(items))):
            tg.create_task(worker())
    return {item: results[item] for item in items}


async def gather_handing_over(
    fn: Callable[[K], Awaitable[V]],
    items: Sequence[K],
    *,
    on_done: Callable[[int, int], None] | None = None,
    parts: Callable[[dict[K, V | Exception]], None] | None = None,
) -> dict[K, V | Exception]:
    """`gather_bounded`, with `parts`: each answer is handed to it as it comes (a Handover's
    parts), and what is returned holds only those it was not handed (none)."""
    if parts is None:
        return await gather_bounded(fn, items, on_done=on_done)
    handover = Handover[K, V | Exception](parts)
    await gather_bounded(fn, items, on_done=on_done, on_each=handover.add)
    handover.flush()
    return {}


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


class Handover(Generic[K, V]):
    """Collects answers as they come and hands them on several at a time: at most every
    `interval` seconds, and what is left at `flush`. One part per answer would be 10,000
    messages for a refresh of 10,000 groups; one at the end, nothing handed until then."""

    def __init__(
        self,
        hand: Callable[[dict[K, V]], None],
        interval: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._hand = hand
        self._interval = interval
        self._clock = clock
        self._waiting: dict[K, V] = {}
        self._last = clock()

    def add(self, key: K, value: V) -> None:
        self._waiting[key] = value
        if self._clock() - self._last >= self._interval:
            self.flush()

    def flush(self) -> None:
        self._last = self._clock()
        if self._waiting:
            part, self._waiting = self._waiting, {}
            self._hand(part)


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
