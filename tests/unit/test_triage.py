"""The Burrow-style rules, lag trend and time behind, on hand-made refresh windows."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.domain import lag_trend, readings, triage
from console.domain.gaps import Gap, Part, Why
from console.domain.lag import LagPoint
from console.domain.offsets import Client, GroupOffsets, QueueOffsets, known_delay
from console.domain.readings import Refreshes, Sample, as_samples
from console.domain.triage import Status, evaluate

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


def test_a_group_of_many_queues_is_judged_with_one_reason_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A refresh of 10,000 groups judges 160,000 queues and shows one reason a group: the
    # worst queue's, written once, not one for every queue.
    made: list[object] = []
    verdict = triage.Verdict

    def counted(*args: object, **kw: object) -> object:
        made.append(args)
        return verdict(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(triage, "Verdict", counted)
    v = evaluate(window([(100 + i, 50) for i in range(200)], online=False))
    assert (v.status, v.queue, v.reason) == (
        Status.STOP,
        ("T", "b", 199),
        "T@b:199 lag 249, no client online",
    )
    assert len(made) == 1


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
    assert order == [
        Status.OK,
        Status.ERR,
        Status.WARN,
        Status.REWIND,
        Status.STALL,
        Status.STOP,
    ]


def test_rules_are_written_for_every_status() -> None:
    assert {s for s, _ in triage.STATUS_RULES} == set(Status)


# ---- trend, time behind, history ---------------------------------------------------------------


def test_lag_trend_per_minute() -> None:
    t = lag_trend.lag_trend(window([(100, 90)], [(130, 100)], [(170, 110)]))
    assert t is not None
    assert t.delta == 50
    assert t.seconds == 10.0
    assert t.per_minute == pytest.approx(300.0)


def test_lag_trend_needs_two_refreshes() -> None:
    assert lag_trend.lag_trend(window([(100, 90)])) is None


def test_lag_series_is_total_lag_per_refresh() -> None:
    assert lag_trend.lag_series(window([(10, 4), (3, None)], [(12, 4), (3, None)])) == (6, 8)


def test_time_behind_is_the_oldest_lagging_queue() -> None:
    o = sample(0, [(10, 4), (10, 10), (10, 8)])
    delays = {("T", "b", 0): 9000, ("T", "b", 1): 0, ("T", "b", 2): 3000}
    assert lag_trend.time_behind_ms(o, delays) == 9000


def test_time_behind_is_zero_when_caught_up_and_unknown_without_answers() -> None:
    assert lag_trend.time_behind_ms(sample(0, [(10, 10)]), {}) == 0
    assert lag_trend.time_behind_ms(sample(0, [(10, 4)]), {}) is None
    assert lag_trend.time_behind_ms(sample(0, [(10, None)]), {}) is None


def test_lagging_topics_by_broker() -> None:
    o = Sample.of(sample(0, [(10, 4), (10, 10)], retry=(5, 1)))
    assert lag_trend.lagging_topics(o) == {"b": ("T",)}


def test_history_keeps_the_window_and_replaces_a_repeated_instant() -> None:
    h = Refreshes(window=3)
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
        Refreshes(window=0)


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


# ---- partial reads -------------------------------------------------------------------------------


def two_brokers(i: int, lag_a: int, lag_b: int | None, *, gaps: bool = False) -> GroupOffsets:
    """Refresh i of a group on brokers a and b; lag_b None: b did not answer (named unreachable,
    or as a gap the reader filled)."""
    qs = [QueueOffsets("T", "a", 0, 0, 1000 + i * 10, 1000 + i * 10 - lag_a)]
    if lag_b is not None:
        qs.append(QueueOffsets("T", "b", 0, 0, 2000 + i * 10, 2000 + i * 10 - lag_b))
    missing: dict[str, object] = {}
    if lag_b is None:
        if gaps:
            missing["gaps"] = (Gap(Part.BROKER, "b", Why.DOWN, "cannot connect to h:2"),)
        else:
            missing["unreachable_brokers"] = ("b",)
    return GroupOffsets("G", T0 + i * 5000, tuple(qs), clients=ONLINE, **missing)  # type: ignore[arg-type]


@pytest.mark.parametrize("gaps", [False, True], ids=["unreachable", "gaps"])
def test_a_broker_going_down_is_no_recovery(gaps: bool) -> None:
    reads = [two_brokers(i, 100, 1400) for i in range(3)]
    reads.append(two_brokers(3, 100, None, gaps=gaps))
    summary = triage.summarize(as_samples(reads), {})
    assert summary.partial
    assert summary.missing == ("b",)
    assert summary.trend is None  # not "↓1400 per 5 s"
    assert summary.lag_history == (100,)  # the sparkline starts again; no fall is drawn
    assert summary.restarted
    assert summary.verdict.status is Status.ERR
    assert summary.verdict.partial
    assert "no answer from b" in summary.verdict.reason
    assert summary.time_behind_ms is None or summary.time_behind_ms > 0


def test_nothing_read_of_a_partial_group_is_err_not_ok() -> None:
    o = GroupOffsets("G", T0, (), clients=ONLINE, unreachable_brokers=("a",))
    v = evaluate(as_samples([o]))
    assert v.status is Status.ERR
    assert lag_trend.time_behind_ms(o, {}) is None  # not 0: the queues not read may lag


def test_a_partial_read_keeps_a_worse_status_and_says_it_is_partial() -> None:
    reads = [two_brokers(i, 100, 5) for i in range(3)]
    stalled = [
        GroupOffsets(
            "G",
            r.taken_at_ms,
            (QueueOffsets("T", "a", 0, 0, 50 + i, 40),),
            clients=ONLINE,
            unreachable_brokers=("b",),
        )
        for i, r in enumerate(reads)
    ]
    v = evaluate(as_samples(stalled))
    assert v.status is Status.STALL
    assert v.partial
    assert v.reason.endswith("(partial read: no answer from b)")


def test_trend_comes_back_only_over_comparable_reads() -> None:
    reads = [two_brokers(0, 100, None), two_brokers(1, 100, 50), two_brokers(2, 120, 50)]
    w = as_samples(reads)
    assert lag_trend.lag_series(w) == (150, 170)
    trend = lag_trend.lag_trend(w)
    assert trend is not None
    assert (trend.delta, trend.seconds) == (20, 5.0)


def test_the_verdict_names_the_queue_with_most_lag_among_equals() -> None:
    v = evaluate(window([(10, 8), (100, 10)]))
    assert v.status is Status.OK
    assert v.queue == ("T", "b", 1)


def test_time_behind_is_never_counted_from_1970() -> None:
    o = sample(0, [(10, 4)])
    epoch = o.taken_at_ms  # the broker's "now - 0": no message at the committed offset
    assert lag_trend.time_behind_ms(o, {("T", "b", 0): epoch}) is None
    assert known_delay(9000, T0) == 9000
    assert known_delay(T0 - 5, T0) is None
    assert known_delay(-1, T0) is None


def test_committed_below_min_has_no_time_behind() -> None:
    q = QueueOffsets("T", "b", 0, 500, 900, 120)
    assert readings.below_min(q)
    o = GroupOffsets("G", T0, (q,), clients=ONLINE)
    assert lag_trend.time_behind_ms(o, {q.key: 60_000}) is None
    assert not readings.below_min(QueueOffsets("T", "b", 0, 500, 900, None))


def test_worst_first_puts_unknown_between_known_trouble_and_ok() -> None:
    warn = triage.summarize(
        as_samples(sample(i, [(100 + 40 * i, 90 + 10 * i)], group="w") for i in range(3)), {}
    )
    partial = triage.summarize(as_samples([two_brokers(0, 5000, None)]), {})
    fine = triage.summarize(as_samples([sample(0, [(10, 9)], group="c")]), {})
    assert warn.verdict.status is Status.WARN
    order = triage.worst_first([fine, partial, warn])
    assert [s.verdict.status for s in order] == [Status.WARN, Status.ERR, Status.OK]


# ---- the same rules over stored lag points ----------------------------------------------------


def stored(reads: Sequence[GroupOffsets]) -> list[LagPoint]:
    """The reads as the lag history keeps them: through their JSON line and back."""
    return [LagPoint.from_json(LagPoint.of(o, o.taken_at_ms).to_json()) for o in reads]


@given(windows())
def test_stored_points_are_judged_as_the_live_reads_were(w: list[Sample]) -> None:
    live = evaluate(w)
    kept = triage.evaluate_points(stored([s.offsets for s in w]))
    assert (kept.status, kept.reason, kept.complete, kept.rule) == (
        live.status,
        live.reason,
        live.complete,
        live.rule,
    )


def test_stored_points_name_the_rule_and_the_span() -> None:
    reads = [sample(i * 120, [(10 + i, 4)]) for i in range(4)]  # ten minutes apart
    v = triage.evaluate_points(stored(reads))
    assert v.status is Status.STALL
    assert v.rule == triage.RULE_STALL
    assert "committed 4 unchanged for 30m" in v.reason


def test_a_partial_newest_point_is_never_ok() -> None:
    reads = [two_brokers(i, 0, 0) for i in range(3)] + [two_brokers(3, 0, None)]
    v = triage.evaluate_points(stored(reads))
    assert (v.status, v.partial, v.rule) == (Status.ERR, True, triage.RULE_PARTIAL)
    assert "no answer from b" in v.reason


def test_nothing_stored_or_only_totals_is_err_not_ok() -> None:
    assert triage.evaluate_points([]).status is Status.ERR
    points = stored([sample(i, [(10, 10)]) for i in range(3)])
    thinned = [p.without_detail() for p in points]
    v = triage.evaluate_points(thinned)
    assert (v.status, v.complete, v.rule) == (Status.ERR, False, triage.RULE_NOTHING)
    # Old points without detail do not count; the newest with detail are judged.
    assert triage.evaluate_points([*thinned, *points]).status is Status.OK


def test_a_reset_backwards_in_the_stored_window_is_rewind() -> None:
    reads = [sample(0, [(100, 90)]), sample(1, [(110, 95)]), sample(2, [(120, 50)])]
    v = triage.evaluate_points(stored(reads))
    assert (v.status, v.rule) == (Status.REWIND, triage.RULE_REWIND)
    assert "committed went back 95 -> 50" in v.reason


def test_spans_read_in_the_unit_that_fits() -> None:
    assert [triage.span_text(ms) for ms in (10_000, 119_000, 600_000, 3_600_000, 9_000_000)] == [
        "10s",
        "119s",
        "10m",
        "60m",
        "2h30m",
    ]
