"""What a group's offsets say of themselves: below min, client-local, delays from 1970."""

from __future__ import annotations

from console.domain.offsets import (
    EARLIEST_STORE_TIME_MS,
    GroupOffsets,
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
