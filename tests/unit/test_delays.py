"""NextStoreTimes: a queue's delay from what the broker said, while its committed offset stays."""

from __future__ import annotations

from console.domain.delays import NextStoreTimes
from console.domain.offsets import QueueOffsets
from console.rocketmq.models import ConsumeTimeSpan, MessageQueue


class Clock:
    def __init__(self) -> None:
        self.ms = 1_700_000_000_000

    def __call__(self) -> int:
        return self.ms


def queue(qid: int, committed: int | None, max_offset: int = 100) -> QueueOffsets:
    return QueueOffsets("orders", "broker-a", qid, 0, max_offset, committed)


def span(qid: int, delay_ms: int) -> ConsumeTimeSpan:
    mq = MessageQueue("orders", "broker-a", qid)
    return ConsumeTimeSpan(mq, 0, 0, 0, delay_ms)


def test_unknown_queues_must_be_asked() -> None:
    times = NextStoreTimes(Clock())
    assert times.delays("g", [queue(0, 50)]) is None


def test_a_queue_that_has_not_moved_ages_with_the_clock() -> None:
    clock = Clock()
    times = NextStoreTimes(clock)
    queues = [queue(0, 50), queue(1, 70)]
    times.learn("g", queues, {q.key: span(q.queue_id, 9_000) for q in queues}, clock.ms)
    clock.ms += 4_000
    assert times.delays("g", queues) == {
        ("orders", "broker-a", 0): 13_000,
        ("orders", "broker-a", 1): 13_000,
    }


def test_a_committed_offset_that_moved_is_asked_again() -> None:
    clock = Clock()
    times = NextStoreTimes(clock)
    times.learn("g", [queue(0, 50)], {queue(0, 50).key: span(0, 9_000)}, clock.ms)
    assert times.delays("g", [queue(0, 51)]) is None
    assert times.delays("other-group", [queue(0, 50)]) is None


def test_caught_up_queues_are_zero_and_never_committed_ones_are_asked() -> None:
    times = NextStoreTimes(Clock())
    assert times.delays("g", [queue(0, 100)]) == {("orders", "broker-a", 0): 0}
    assert times.delays("g", [queue(0, None)]) is None


def test_an_answer_without_a_delay_for_a_waiting_queue_is_not_kept() -> None:
    clock = Clock()
    times = NextStoreTimes(clock)
    times.learn("g", [queue(0, 50)], {queue(0, 50).key: span(0, 0)}, clock.ms)
    assert times.delays("g", [queue(0, 50)]) is None


def test_groups_no_longer_listed_are_forgotten() -> None:
    clock = Clock()
    times = NextStoreTimes(clock)
    times.learn("gone", [queue(0, 50)], {queue(0, 50).key: span(0, 9_000)}, clock.ms)
    times.learn("kept", [queue(0, 50)], {queue(0, 50).key: span(0, 9_000)}, clock.ms)
    times.forget_except(["kept"])
    assert times.delays("gone", [queue(0, 50)]) is None
    assert times.delays("kept", [queue(0, 50)]) is not None
