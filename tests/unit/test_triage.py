"""The Burrow-style rules, lag trend and time behind, on hand-made refresh windows."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.domain.offsets import Client, GroupOffsets, QueueOffsets
from console.services import triage
from console.services.triage import History, Sample, Status, as_samples, evaluate

T0 = 1_700_000_000_000
ONLINE = (Client("c1", "10.0.0.1:1", "JAVA", 479),)


def sample(
    i: int,
    queues: Sequence[tuple[int, int | None]],
    *,
    online: bool = True,
    retry: tuple[int, int | None] | None = None,
    group: str = "G",
) -> GroupOffsets:
    """Refresh number i; queues as (max, committed) on topic T, broker b, queue ids 0..n."""
    qs = [
        QueueOffsets("T", "b", qid, 0, mx, committed) for qid, (mx, committed) in enumerate(queues)
    ]
    if retry is not None:
        qs.append(QueueOffsets(f"%RETRY%{group}", "b", 0, 0, retry[0], retry[1]))
    return GroupOffsets(group, T0 + i * 5000, tuple(qs), clients=ONLINE if online else ())


def window(*steps: Sequence[tuple[int, int | None]], online: bool = True) -> list[Sample]:
    return as_samples(sample(i, s, online=online) for i, s in enumerate(steps))


def test_caught_up_is_ok() -> None:
    v = evaluate(window([(10, 10)], [(20, 20)], [(30, 30)]))
    assert v.status is Status.OK
    assert v.complete


def test_lag_with_nobody_online_is_stop_at_once() -> None:
    v = evaluate(window([(10, 4)], online=False))
    assert v.status is Status.STOP
    assert "no client online" in v.reason
    assert not v.complete  # one refresh, yet STOP needs no history


def test_offline_but_caught_up_is_ok() -> None:
    assert evaluate(window([(10, 10)], online=False)).status is Status.OK


def test_commit_unchanged_while_online_is_stall() -> None:
    v = evaluate(window([(10, 4)], [(12, 4)], [(15, 4)]))
    assert v.status is Status.STALL
    assert v.queue == ("T", "b", 0)
    assert "committed 4 unchanged for 10s" in v.reason


def test_stall_needs_a_full_window() -> None:
    v = evaluate(window([(10, 4)], [(12, 4)]))
    assert v.status is Status.OK
    assert not v.complete


def test_lag_zero_anywhere_in_the_window_is_ok() -> None:
    # Burrow rule 1: a consumer that caught up within the window is keeping up.
    assert evaluate(window([(10, 10)], [(15, 10)], [(20, 10)])).status is Status.OK


def test_commit_going_back_is_rewind() -> None:
    v = evaluate(window([(100, 90)], [(100, 40)]))
    assert v.status is Status.REWIND
    assert "90 -> 40" in v.reason


def test_moving_commit_with_growing_lag_is_warn() -> None:
    v = evaluate(window([(100, 90)], [(130, 100)], [(170, 110)]))
    assert v.status is Status.WARN
    assert "lag grew 10 -> 60" in v.reason


def test_moving_commit_with_shrinking_lag_is_ok() -> None:
    assert evaluate(window([(100, 50)], [(110, 80)], [(120, 100)])).status is Status.OK


def test_lag_that_dips_once_is_not_warn() -> None:
    assert evaluate(window([(100, 90)], [(130, 125)], [(170, 130)])).status is Status.OK


def test_group_takes_its_worst_queue() -> None:
    v = evaluate(window([(10, 10), (10, 4)], [(20, 20), (12, 4)], [(30, 30), (15, 4)]))
    assert v.status is Status.STALL
    assert v.queue == ("T", "b", 1)


def test_uncommitted_queues_do_not_vote() -> None:
    v = evaluate(window([(10, None)], [(20, None)], [(30, None)], online=False))
    assert v.status is Status.OK
    assert "lag unknown" in v.reason


def test_a_broadcasting_group_is_named_client_local() -> None:
    online = GroupOffsets("N", T0, (), clients=ONLINE, message_model="BROADCASTING")
    v = evaluate(as_samples([online]))
    assert "client-local" in v.reason
    assert v.reason != "no queues"


def test_retry_queue_does_not_vote() -> None:
    steps = as_samples(sample(i, [(10, 10)], retry=(5, 1)) for i in range(3))
    assert evaluate(steps).status is Status.OK


def test_empty_window() -> None:
    assert evaluate([]).status is Status.OK


def test_severity_orders_the_statuses() -> None:
    order = sorted(Status, key=lambda s: s.severity)
    assert order == [Status.OK, Status.WARN, Status.REWIND, Status.STALL, Status.STOP]


def test_rules_are_written_for_every_status() -> None:
    assert {s for s, _ in triage.STATUS_RULES} == set(Status)


# ---- trend, time behind, history ---------------------------------------------------------------


def test_lag_trend_per_minute() -> None:
    t = triage.lag_trend(window([(100, 90)], [(130, 100)], [(170, 110)]))
    assert t is not None
    assert t.delta == 50
    assert t.seconds == 10.0
    assert t.per_minute == pytest.approx(300.0)


def test_lag_trend_needs_two_refreshes() -> None:
    assert triage.lag_trend(window([(100, 90)])) is None


def test_lag_series_is_total_lag_per_refresh() -> None:
    assert triage.lag_series(window([(10, 4), (3, None)], [(12, 4), (3, None)])) == (6, 8)


def test_time_behind_is_the_oldest_lagging_queue() -> None:
    o = sample(0, [(10, 4), (10, 10), (10, 8)])
    delays = {("T", "b", 0): 9000, ("T", "b", 1): 0, ("T", "b", 2): 3000}
    assert triage.time_behind_ms(o, delays) == 9000


def test_time_behind_is_zero_when_caught_up_and_unknown_without_answers() -> None:
    assert triage.time_behind_ms(sample(0, [(10, 10)]), {}) == 0
    assert triage.time_behind_ms(sample(0, [(10, 4)]), {}) is None
    assert triage.time_behind_ms(sample(0, [(10, None)]), {}) is None


def test_lagging_topics_by_broker() -> None:
    o = Sample.of(sample(0, [(10, 4), (10, 10)], retry=(5, 1)))
    assert triage.lagging_topics(o) == {"b": ("T",)}


def test_history_keeps_the_window_and_replaces_a_repeated_instant() -> None:
    h = History(window=3)
    for i in range(5):
        h.add(sample(i, [(10 + i, 4)]))
    assert [s.taken_at_ms for s in h.window("G")] == [T0 + 10000, T0 + 15000, T0 + 20000]
    h.add(sample(4, [(99, 4)]))
    assert len(h.window("G")) == 3
    assert h.window("G")[-1].offsets.queues[0].max_offset == 99
    assert h.window("G")[-1].total_lag == 95
    h.retain(["other"])
    assert h.window("G") == ()
    with pytest.raises(ValueError, match="at least one"):
        History(window=0)


def test_summary_and_worst_first() -> None:
    stalled = triage.summarize(as_samples(sample(i, [(10, 4)], group="a") for i in range(3)), {})
    stopped = triage.summarize(as_samples([sample(0, [(10, 8)], online=False, group="b")]), {})
    fine = triage.summarize(as_samples([sample(0, [(10, 10)], group="c")]), {})
    assert [s.group for s in triage.worst_first([fine, stalled, stopped])] == ["b", "a", "c"]
    assert stalled.lag_history == (6, 6, 6)
    with pytest.raises(ValueError, match="at least one"):
        triage.summarize([], {})


def test_vanished_brokers() -> None:
    known = {"broker-a": "h:1", "broker-b": "h:2"}
    assert triage.vanished(known, ["broker-a"]) == {"broker-b": "h:2"}
    assert triage.vanished(known, ["broker-a", "broker-b"]) == {}


# ---- properties --------------------------------------------------------------------------------

offsets = st.integers(min_value=0, max_value=10_000)


@st.composite
def windows(draw: st.DrawFn) -> list[Sample]:
    n = draw(st.integers(min_value=1, max_value=8))
    online = draw(st.booleans())
    steps = []
    for _ in range(n):
        mx = draw(offsets)
        committed = draw(st.one_of(st.none(), st.integers(min_value=0, max_value=mx)))
        steps.append([(mx, committed)])
    return window(*steps, online=online)


@given(windows())
def test_caught_up_now_is_always_ok(w: list[Sample]) -> None:
    last = w[-1].offsets.queues[0]
    if last.lag == 0:
        assert evaluate(w).status is Status.OK


@given(windows())
def test_status_never_blames_an_unknown_lag(w: list[Sample]) -> None:
    if w[-1].offsets.queues[0].committed is None:
        assert evaluate(w).status is Status.OK
