"""`answers` (console/services/infra/fanout.py): what each awaitable answered or raised, in order,
without a turn of the event loop when all of them are answered already."""

from __future__ import annotations

import asyncio

from console.rocketmq.errors import RequestTimeout
from console.services.infra.fanout import answers


def settled(value: object) -> asyncio.Future[object]:
    future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    if isinstance(value, BaseException):
        future.set_exception(value)
    else:
        future.set_result(value)
    return future


async def test_answered_futures_are_read_where_they_stand() -> None:
    timeout = RequestTimeout("127.0.0.1:10911", 317, 3.0)
    turns = 0

    async def count_turns() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    counter = asyncio.create_task(count_turns())
    await asyncio.sleep(0)
    before = turns
    got = await answers([settled(1), settled(timeout), settled("b")])
    assert turns == before  # no turn of the loop was taken
    counter.cancel()
    assert got == [1, timeout, "b"]


async def test_a_pending_one_is_waited_for_and_each_keeps_its_place() -> None:
    async def late(value: str) -> str:
        await asyncio.sleep(0.01)
        return value

    async def fails() -> str:
        raise RequestTimeout("127.0.0.1:10911", 317, 3.0)

    got = await answers([settled("a"), late("b"), fails()])
    assert got[:2] == ["a", "b"]
    assert isinstance(got[2], RequestTimeout)


async def test_a_cancelled_one_is_not_taken_for_an_answer() -> None:
    cancelled: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    cancelled.cancel()
    got = await answers([settled("a"), cancelled])
    assert got[0] == "a"
    assert isinstance(got[1], asyncio.CancelledError)
