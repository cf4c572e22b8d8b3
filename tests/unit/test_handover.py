"""Answers handed over as they come, several at a time (console/services/infra/fanout.py:
`Handover`, `gather_handing_over`): what the console's network process sends its UI process
while a refresh of thousands of groups is still being read."""

from __future__ import annotations

import asyncio

from console.rocketmq.errors import RequestTimeout
from console.services.infra.fanout import Handover, gather_handing_over


def test_answers_go_on_at_most_every_interval_and_the_rest_at_the_flush() -> None:
    parts: list[dict[str, int]] = []
    now = [0.0]
    handover = Handover[str, int](parts.append, interval=1.0, clock=lambda: now[0])
    handover.add("a", 1)
    handover.add("b", 2)
    assert parts == []  # not a message per answer
    now[0] = 1.0
    handover.add("c", 3)
    assert parts == [{"a": 1, "b": 2, "c": 3}]
    now[0] = 1.5
    handover.add("d", 4)
    handover.flush()
    handover.flush()  # nothing waits: no empty part
    assert parts == [{"a": 1, "b": 2, "c": 3}, {"d": 4}]


async def test_every_answer_and_failure_is_handed_over_once_and_none_returned() -> None:
    parts: list[dict[int, int | Exception]] = []

    async def read(i: int) -> int:
        await asyncio.sleep(0.001 * (i % 3))
        if i == 7:
            raise RequestTimeout("broker-a", 205, 3.0)
        return i * 10

    answer = await gather_handing_over(read, list(range(20)), parts=parts.append)
    assert answer == {}
    handed = [k for part in parts for k in part]
    assert sorted(handed) == list(range(20))  # each once
    merged = {k: v for part in parts for k, v in part.items()}
    assert isinstance(merged.pop(7), RequestTimeout)
    assert merged == {i: i * 10 for i in range(20) if i != 7}


async def test_without_a_taker_the_answer_holds_everything_in_order() -> None:
    async def read(i: int) -> int:
        await asyncio.sleep(0.001 * (5 - i))
        return i

    done: list[tuple[int, int]] = []
    answer = await gather_handing_over(
        read, [0, 1, 2, 3, 4], on_done=lambda d, t: done.append((d, t))
    )
    assert list(answer.items()) == [(i, i) for i in range(5)]
    assert done[0] == (0, 5)
    assert done[-1] == (5, 5)
