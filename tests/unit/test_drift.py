"""The compare-and-set before an apply: what counts as drift for an offline and an online group,
and targets re-clamped to a min offset that moved since planning."""

from __future__ import annotations

import pytest

from console.domain.drift import Drift, find_drift, key_text, reclamp, row_key
from console.domain.plan import PlanRow


def row(queue_id: int, current: int | None, target: int | None, min_offset: int = 0) -> PlanRow:
    delta = None if current is None or target is None else target - current
    return PlanRow(
        "sandbox", "billing", "orders", "broker-a", queue_id, min_offset, 500,
        current, target, target, delta, None, (),
    )  # fmt: skip


ROWS = (row(0, 100, 90), row(1, 100, 90), row(2, None, 10), row(3, 100, 90))


def now(*values: int | None) -> dict[tuple[str, str, str, int], int | None]:
    return {row_key(r): v for r, v in zip(ROWS, values, strict=True)}


def test_an_offline_group_must_not_have_moved() -> None:
    assert find_drift(ROWS, now(100, 100, None, 100), online=False) == ()
    drift = find_drift(ROWS, now(101, 99, 5, None), online=False)
    assert [(d.key[3], d.why) for d in drift] == [
        (0, "moved while no consumer was online"),
        (1, "moved while no consumer was online"),
        (2, "moved while no consumer was online"),
        (3, "no longer committed"),
    ]
    assert drift[2].line() == (
        "billing orders/broker-a/2: planned from nothing committed, now 5 "
        "(moved while no consumer was online)"
    )


def test_an_online_group_may_only_move_forward() -> None:
    assert find_drift(ROWS, now(120, 100, 7, 300), online=True) == ()
    drift = find_drift(ROWS, now(120, 99, 7, None), online=True)
    assert [(d.key[3], d.why) for d in drift] == [(1, "moved back"), (3, "no longer committed")]


def test_drift_is_one_value_for_an_apply_and_a_resume() -> None:
    """The resume's drift names the target the apply wrote; both say the queue as the journal
    keys it, which is what an accepted drift is recorded by."""
    key = row_key(ROWS[0])
    planned = Drift(key, 100, 101, "moved while no consumer was online")
    resumed = Drift(key, 100, 7, "moved since the apply", target=90)
    assert planned.line() == (
        "billing orders/broker-a/0: planned from 100, now 101 (moved while no consumer was online)"
    )
    assert resumed.line() == "billing orders/broker-a/0: before the apply 100, target 90, now 7"
    gone = Drift(key, None, None, "moved since the apply", target=90)
    assert gone.line().endswith(
        "before the apply nothing committed, target 90, now nothing committed"
    )
    assert key_text(resumed.key) == resumed.line().split(":", 1)[0]


def test_a_queue_not_read_again_is_not_taken_as_unchanged() -> None:
    partial = now(100, 100, None, 100)
    del partial[row_key(ROWS[1])]
    with pytest.raises(KeyError, match="orders/broker-a/1 was not read again"):
        find_drift(ROWS, partial, online=False)


def test_targets_below_a_moved_min_are_raised_to_it() -> None:
    rows, raised = reclamp(ROWS, {("orders", "broker-a", 0): 95, ("orders", "broker-a", 2): 5})
    assert [r.target for r in rows] == [95, 90, 10, 90]
    assert rows[0].delta == -5
    assert rows[0].clamp == "below_min"
    assert [(r.key[3], r.planned_target, r.target) for r in raised] == [(0, 90, 95)]
    assert "already deleted" in raised[0].line


def test_what_a_read_back_holds_and_what_it_proves() -> None:
    from console.domain.drift import holds, proves

    # Offline: only the target itself, which nothing else would write.
    for check in (holds, proves):
        assert check(100, 90, 90, online=False)
        assert not check(100, 90, 91, online=False)
        assert not check(100, 90, None, online=False)
    # A replay online: between the target and the old position, where only the reset leads.
    assert proves(100, 90, 95, online=True)
    assert not holds(100, 90, 100, online=True)  # the old position
    assert not holds(100, 90, 89, online=True)
    # A skip online: a consumer that never saw the reset consumes up to the target and past
    # it, so past the target holds but proves nothing; the target itself proves it.
    assert holds(100, 120, 130, online=True)
    assert not proves(100, 120, 130, online=True)
    assert proves(100, 120, 120, online=True)
    assert holds(None, 10, 12, online=True)
    assert not proves(None, 10, 12, online=True)
    # No move asked (a queue a client push moves along with its topic): consumption is fine.
    assert proves(100, 100, 104, online=True)
