"""Stuck queues over hand-made reads of a group; where a group stands after a skip."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from console.domain.gaps import Gap, Part, Why
from console.domain.moved_on import Progress, progress_past
from console.domain.offsets import Client, GroupOffsets, QueueKey, QueueOffsets
from console.domain.stuck import ConsumerCache, Finding, caches_of, find_stuck
from console.rocketmq.models import MessageQueue
from console.rocketmq.running_info import (
    ConsumerRunningInfo,
    ProcessQueueInfo,
    parse_running_info,
)

T0 = 1_700_000_000_000
GROUP = "ledger-sync"
RETRY = f"%RETRY%{GROUP}"
ONLINE = (Client("c1", "10.0.0.1:1", "JAVA", 479),)
#: (max, committed) per queue id of topic "ledger" on broker-a
Queues = Mapping[int, tuple[int, int | None]]


def read(
    i: int,
    queues: Queues,
    *,
    broker_b: Queues | None = None,
    retry: tuple[int, int | None] | None = None,
    online: bool = True,
    gaps: Sequence[Gap] = (),
    unreachable: tuple[str, ...] = (),
) -> GroupOffsets:
    """Read number i, 5 s after read i-1."""
    qs = [QueueOffsets("ledger", "broker-a", q, 0, mx, c) for q, (mx, c) in queues.items()]
    qs += [
        QueueOffsets("ledger", "broker-b", q, 0, mx, c) for q, (mx, c) in (broker_b or {}).items()
    ]
    if retry is not None:
        qs.append(QueueOffsets(RETRY, "broker-a", 0, 0, *retry))
    return GroupOffsets(
        GROUP,
        T0 + i * 5000,
        tuple(qs),
        clients=ONLINE if online else (),
        gaps=tuple(gaps),
        unreachable_brokers=unreachable,
    )


def reads(*steps: Queues, **kwargs: Any) -> list[GroupOffsets]:
    return [read(i, s, **kwargs) for i, s in enumerate(steps)]


A1: QueueKey = ("ledger", "broker-a", 1)


def test_a_queue_whose_committed_offset_stays_while_messages_arrive_is_stuck() -> None:
    report = find_stuck(
        reads(
            {0: (10, 10), 1: (30, 24), 2: (12, 11)},
            {0: (11, 11), 1: (31, 24), 2: (13, 13)},
            {0: (12, 12), 1: (33, 24), 2: (14, 14)},
        )
    )
    (found,) = report.stuck
    assert found.kind is Finding.STALLED
    assert found.key == A1
    assert (found.committed, found.max_offset, found.lag) == (24, 33, 9)
    assert found.arrived == 3  # 30 -> 33 while it was watched
    assert found.seconds == 10.0
    assert found.reads == 3
    assert "unchanged" in found.rule
    assert report.clear == (("ledger", "broker-a", 0), ("ledger", "broker-a", 2))
    assert report.online is True
    assert not report.partial
    assert report.seconds == 10.0


def test_stuck_with_messages_waiting_even_when_none_arrive() -> None:
    (found,) = find_stuck(reads({1: (28, 24)}, {1: (28, 24)})).stuck
    assert found.arrived == 0
    assert found.lag == 4


def test_a_moving_queue_is_not_stuck_even_with_lag() -> None:
    report = find_stuck(reads({0: (100, 10)}, {0: (100, 20)}, {0: (100, 20)}))
    assert report.stuck == ()
    assert report.clear == (("ledger", "broker-a", 0),)


def test_caught_up_at_any_read_is_not_stuck() -> None:
    # The poison arrived between the first and second read: lag 0 at the first.
    report = find_stuck(reads({1: (24, 24)}, {1: (25, 24)}, {1: (26, 24)}))
    assert report.stuck == ()


def test_nobody_online_is_not_stuck_but_not_consumed() -> None:
    report = find_stuck(reads({1: (30, 24)}, {1: (33, 24)}, online=False))
    assert report.stuck == ()
    assert report.online is False
    assert report.clear == (A1,)


def test_reads_are_taken_in_time_order_whatever_order_they_come_in() -> None:
    r = reads({0: (10, 5)}, {0: (20, 9)}, {0: (30, 12)})
    assert find_stuck([r[2], r[0], r[1]]).stuck == ()


def test_a_queue_missing_from_a_read_is_unknown_and_the_report_partial() -> None:
    down = Gap(Part.BROKER, "broker-b", Why.TIMEOUT, "broker-b at 127.0.0.1:1: timed out")
    report = find_stuck(
        [
            read(0, {1: (30, 24)}, broker_b={2: (50, 40)}),
            read(1, {1: (31, 24)}, gaps=[down], unreachable=("broker-b",)),
            read(2, {1: (33, 24)}, broker_b={2: (52, 40)}),
        ]
    )
    assert [s.key for s in report.stuck] == [A1]
    (unknown,) = report.unknown
    assert unknown.key == ("ledger", "broker-b", 2)
    assert "not read at 1 of 3 reads" in unknown.why
    assert "timed out" in unknown.why
    assert ("ledger", "broker-b", 2) not in report.clear
    assert report.partial
    assert report.missing == ("broker-b",)


def test_a_broker_missing_from_every_read_is_named() -> None:
    down = Gap(Part.BROKER, "broker-b", Why.DOWN, "broker-b at 127.0.0.1:1: connection refused")
    report = find_stuck(reads({0: (10, 10)}, {0: (11, 11)}, gaps=[down], unreachable=("broker-b",)))
    assert report.stuck == ()
    assert report.unknown == ()  # its queues are not known at all...
    assert report.missing == ("broker-b",)  # ...so the broker is named
    assert report.partial
    assert report.gaps == (down,)


def test_a_committed_offset_not_read_once_is_unknown() -> None:
    gap = Gap(Part.QUEUE, "ledger/broker-a/1", Why.TIMEOUT, "timed out")
    report = find_stuck(
        [read(0, {1: (30, 24)}), read(1, {1: (31, None)}, gaps=[gap]), read(2, {1: (33, 24)})]
    )
    assert report.stuck == ()
    (unknown,) = report.unknown
    assert unknown.key == A1
    assert "queue ledger/broker-a/1: timed out" in unknown.why
    assert report.missing == ("queue ledger/broker-a/1",)


def test_nothing_committed_is_unknown_not_clear() -> None:
    report = find_stuck(reads({3: (30, None)}, {3: (33, None)}))
    (unknown,) = report.unknown
    assert unknown.why == "nothing committed: lag unknown"
    assert report.clear == ()


def test_min_offsets_missing_does_not_make_the_answer_partial() -> None:
    gap = Gap(Part.MIN_OFFSETS, "ledger/broker-a", Why.TIMEOUT, "timed out")
    report = find_stuck(reads({1: (30, 24)}, {1: (33, 24)}, gaps=[gap]))
    assert [s.key for s in report.stuck] == [A1]
    assert not report.partial
    assert report.gaps == (gap,)  # still told


def test_clients_not_read_leaves_a_stalled_queue_unknown() -> None:
    gap = Gap(Part.CLIENTS, GROUP, Why.TIMEOUT, "timed out")
    first = read(0, {0: (10, 5), 1: (30, 24)})
    second = read(1, {0: (12, 9), 1: (33, 24)}, online=False, gaps=[gap])
    report = find_stuck([first, second])
    assert report.online is None
    assert report.stuck == ()
    (unknown,) = report.unknown
    assert unknown.key == A1
    assert "who is online" in unknown.why
    assert report.clear == (("ledger", "broker-a", 0),)  # it moved: clear either way


def test_a_retry_queue_growing_while_online_is_reported_with_its_growth() -> None:
    report = find_stuck(
        [
            read(0, {0: (10, 9)}, retry=(0, 0)),
            read(1, {0: (11, 11)}, retry=(2, 1)),
            read(2, {0: (12, 12)}, retry=(5, 4)),
        ]
    )
    (found,) = report.stuck
    assert found.kind is Finding.RETRY_GROWING
    assert found.key == (RETRY, "broker-a", 0)
    assert found.arrived == 5
    assert found.retry_growth == 5
    assert "grew by 5" in found.rule
    assert report.retry_growing == (found,)
    assert report.stalled == ()


def test_retry_growth_is_evidence_on_a_stalled_queue_too() -> None:
    report = find_stuck(
        [read(0, {1: (30, 24)}, retry=(4, 4)), read(1, {1: (33, 24)}, retry=(6, 6))]
    )
    (stalled,) = report.stalled
    assert stalled.retry_growth == 2


def test_a_retry_queue_is_judged_on_growth_even_with_nothing_committed() -> None:
    still = find_stuck([read(0, {}, retry=(4, None)), read(1, {}, retry=(4, None))])
    assert still.stuck == ()
    assert still.unknown == ()
    assert still.clear == ((RETRY, "broker-a", 0),)
    grew = find_stuck([read(0, {}, retry=(4, None)), read(1, {}, retry=(6, None))])
    (found,) = grew.stuck
    assert (found.kind, found.committed, found.lag, found.arrived) == (
        Finding.RETRY_GROWING,
        None,
        None,
        2,
    )


def test_a_retry_topic_growing_with_nobody_online_is_not_a_sign() -> None:
    report = find_stuck(
        [read(0, {}, retry=(4, 0), online=False), read(1, {}, retry=(9, 0), online=False)]
    )
    assert report.stuck == ()


def test_one_read_or_two_groups_are_refused() -> None:
    with pytest.raises(ValueError, match="at least two"):
        find_stuck([read(0, {})])
    other = GroupOffsets("other", T0 + 5000, ())
    with pytest.raises(ValueError, match="different groups"):
        find_stuck([read(0, {}), other])


# ---- the consumer's cache ----------------------------------------------------------------------


def cache(cached: int, threshold: int | None, *, orderly: bool | None = True) -> ConsumerCache:
    return ConsumerCache("c1", cached, 24, 24 + cached - 1, 0, threshold, 100, orderly, 2000)


def test_a_cache_past_its_threshold_sends_no_pull() -> None:
    assert cache(5, 4).flow_controlled  # seen on the sandbox: 5 cached, threshold 4
    assert not cache(4, 4).flow_controlled  # the client's test is "more than"
    assert not cache(999, None).flow_controlled  # threshold unknown: not claimed
    assert "full: no pull is sent" in cache(5, 4).line()


def test_a_concurrent_consumer_stops_pulling_past_its_span() -> None:
    wide = ConsumerCache("c1", 2, 0, 2500, 0, 1000, 100, False, 2000)
    assert wide.flow_controlled
    orderly = ConsumerCache("c1", 2, 0, 2500, 0, 1000, 100, True, 2000)
    assert not orderly.flow_controlled


def test_caches_are_read_from_the_running_info() -> None:
    mq = MessageQueue("ledger", "broker-a", 1)
    info = ConsumerRunningInfo(
        "c1",
        (mq,),
        {
            "pullThresholdForQueue": "4",
            "pullThresholdSizeForQueue": "100",
            "PROP_CONSUMEORDERLY": "true",
        },
        {mq: ProcessQueueInfo(24, 5, 24, 28, 0, locked=True, dropped=False)},
    )
    (got,) = caches_of(info).values()
    assert got == ConsumerCache("c1", 5, 24, 28, 0, 4, 100, True, None)
    assert got.flow_controlled


# ---- after a skip ------------------------------------------------------------------------------


def test_progress_past_a_target() -> None:
    after = read(0, {0: (40, 26), 1: (40, 25), 2: (25, 25), 3: (40, 20)})
    targets = {("ledger", "broker-a", q): 25 for q in range(4)}
    targets[("ledger", "broker-b", 0)] = 7
    states = {p.key: p.state for p in progress_past(after, targets)}
    assert states == {
        ("ledger", "broker-a", 0): Progress.MOVED_ON,
        ("ledger", "broker-a", 1): Progress.AT_TARGET,  # what a pending reset reads back as
        ("ledger", "broker-a", 2): Progress.NOTHING_AFTER,
        ("ledger", "broker-a", 3): Progress.BEHIND,
        ("ledger", "broker-b", 0): Progress.UNKNOWN,
    }


def test_running_info_body_gives_each_queue_its_cache() -> None:
    # As a 5.3.3 Java client sent it for a stuck orderly queue (trimmed), and an entry of
    # another shape: the queue is held, its cache unknown.
    body = (
        b'{"mqTable":{{"brokerName":"broker-a","queueId":1,"topic":"ledger"}:'
        b'{"cachedMsgCount":5,"cachedMsgMaxOffset":28,"cachedMsgMinOffset":24,'
        b'"cachedMsgSizeInMiB":0,"commitOffset":24,"droped":false,"locked":true},'
        b'{"brokerName":"broker-b","queueId":0,"topic":"ledger"}:{"odd":1}},'
        b'"properties":{"pullThresholdForQueue":"4","PROP_CONSUMEORDERLY":"true"}}'
    )
    info = parse_running_info("c1", body)
    a1, b0 = MessageQueue("ledger", "broker-a", 1), MessageQueue("ledger", "broker-b", 0)
    assert info.queues == (a1, b0)
    assert info.process_queues == {a1: ProcessQueueInfo(24, 5, 24, 28, 0, True, False)}
    assert info.properties["pullThresholdForQueue"] == "4"
