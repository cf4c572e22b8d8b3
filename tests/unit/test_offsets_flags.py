"""What a group's offsets say of themselves: below min, client-local, delays from 1970, totals."""

from __future__ import annotations

import pickle
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from console.domain.offsets import (
    EARLIEST_STORE_TIME_MS,
    GroupOffsets,
    PopInFlight,
    QueueOffsets,
    known_delay,
)

NOW = 1_795_440_000_000


def queue(qid: int, min_offset: int, committed: int | None) -> QueueOffsets:
    return QueueOffsets("orders", "broker-a", qid, min_offset, 500, committed)


def test_a_committed_offset_below_min_is_flagged() -> None:
    below, at_min, unknown = queue(0, 300, 120), queue(1, 300, 300), queue(2, 300, None)
    assert below.below_min
    assert not at_min.below_min
    assert not unknown.below_min  # nothing committed: unknown, not below anything
    group = GroupOffsets("g", NOW, (below, at_min, unknown))
    assert group.below_min_queues == 1


def test_a_broadcasting_group_is_client_local() -> None:
    assert GroupOffsets("n", NOW, (), message_model="BROADCASTING").client_local
    assert not GroupOffsets("g", NOW, (), message_model="CLUSTERING").client_local
    assert not GroupOffsets("g", NOW, ()).client_local  # offline: the model is not known


def test_a_delay_counted_from_1970_is_unknown() -> None:
    # What a broker answers when the next message's store time is 0 or -1 (deleted, or
    # offset -1 on a 4.x broker): now + 1.
    assert known_delay(NOW + 1, NOW) is None
    assert known_delay(NOW, NOW) is None
    assert known_delay(NOW - EARLIEST_STORE_TIME_MS + 1, NOW) is None
    assert known_delay(90_000, NOW) == 90_000
    assert known_delay(0, NOW) == 0
    # Ten years behind is still a time.
    assert known_delay(10 * 365 * 86_400_000, NOW) == 10 * 365 * 86_400_000


queues = st.lists(
    st.builds(
        QueueOffsets,
        topic=st.sampled_from(["orders", "%RETRY%g"]),
        broker=st.just("broker-a"),
        queue_id=st.integers(0, 7),
        min_offset=st.none() | st.integers(0, 600),
        max_offset=st.integers(0, 600),
        committed=st.none() | st.integers(0, 700),  # ahead of max, too: a reset past the end
    ),
    max_size=12,
)


@given(queues, st.integers(0, 50))
def test_the_tally_sums_what_each_queue_says(qs: list[QueueOffsets], popped: int) -> None:
    pops = (PopInFlight("orders", "broker-a", popped, "brokers"),)
    group = GroupOffsets("g", NOW, tuple(qs), pop_in_flight=pops)
    topics = [q for q in qs if q.topic == "orders"]
    retries = [q for q in qs if q.topic != "orders"]
    assert group.tally() == (
        sum(q.lag or 0 for q in topics) + popped,
        sum(q.lag or 0 for q in retries),
        sum(q.committed is None for q in qs),
        sum(q.below_min for q in qs),
    )
    assert (group.total_lag, group.retry_backlog) == group.tally()[:2]
    assert (group.unknown_queues, group.below_min_queues) == group.tally()[2:]


def test_a_group_made_again_with_other_queues_totals_those_not_the_ones_before() -> None:
    """The totals and topic queues are worked out once per group value: a copy with other
    queues (`replace`, as a read accounted for a missing broker is) must not carry them."""
    group = GroupOffsets("g", NOW, (queue(0, 0, 100), queue(1, 0, 200)))
    assert (group.total_lag, len(group.topic_queues)) == (700, 2)
    fewer = replace(group, queues=(queue(0, 0, 450),))
    assert (fewer.total_lag, len(fewer.topic_queues)) == (50, 1)
    assert (group.total_lag, len(group.topic_queues)) == (700, 2)
    # Sent to the console's UI process, a group arrives with what it worked out and the same
    # value: equal to one that did not work it out yet.
    arrived = pickle.loads(pickle.dumps(group))
    assert arrived.total_lag == 700
    assert arrived == GroupOffsets("g", NOW, (queue(0, 0, 100), queue(1, 0, 200)))
    assert all(type(q) is QueueOffsets for q in arrived.queues)
    assert arrived.queues[1].lag == 300


def test_a_group_pickles_as_the_same_value_whatever_it_holds() -> None:
    group = GroupOffsets(
        "g",
        NOW,
        (queue(0, 0, 100), QueueOffsets("%RETRY%g", "broker-b", 0, 0, 9, 3, 4, NOW, "c1")),
        clients=(),
        message_model="CLUSTERING",
        dlq_messages=4,
        unreachable_brokers=("broker-c",),
        pop_in_flight=(PopInFlight("orders", "broker-a", 2, "brokers"),),
    )
    arrived = pickle.loads(pickle.dumps(group, protocol=pickle.HIGHEST_PROTOCOL))
    assert arrived == group
    assert arrived.tally() == group.tally()
    assert arrived.retry_queues == group.retry_queues
