"""Invariants of any plan, on random snapshots: target in [min, max] unless flagged, delta is
target - current, totals are the sums of the rows, and the Spark hash is the Python hash."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from console.domain.plan import PlanRow
from console.domain.plan_hash import content_hash, root_digest
from console.domain.plan_hash import topic_totals as python_topic_totals
from console.domain.spec import Earliest, Latest, ResetSpec, Scope, ShiftBy, Strategy, ToOffset
from jobs.plan import plan_rows, topic_totals
from tests.spark import frames

pytestmark = pytest.mark.spark


@st.composite
def queues(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    n = draw(st.integers(1, 12))
    for i in range(n):
        lo = draw(st.integers(0, 1_000))
        hi = lo + draw(st.integers(0, 1_000))
        # Committed may sit outside [min, max]: expired messages leave it below min.
        committed = draw(st.none() | st.integers(max(0, lo - 50), hi + 50))
        out.append(
            {
                "topic": draw(st.sampled_from(["a", "b"])),
                "broker": draw(st.sampled_from(["broker-a", "broker-b"])),
                "queue_id": i,
                "min_offset": lo,
                "max_offset": hi,
                "committed": committed,
                "clients": draw(st.integers(0, 2)),
                "message_model": draw(st.sampled_from(["CLUSTERING", "BROADCASTING", None])),
            }
        )
    return out


strategies: st.SearchStrategy[Strategy] = st.one_of(
    st.just(Earliest()),
    st.just(Latest()),
    st.integers(0, 3_000).map(ToOffset),
    st.integers(-1_500, 1_500).filter(bool).map(ShiftBy),
)


@settings(max_examples=15, deadline=None)
@given(rows=queues(), strategy=strategies, clamp=st.booleans())
def test_plan_invariants(
    spark: SparkSession, rows: list[dict[str, Any]], strategy: Strategy, clamp: bool
) -> None:
    spec = ResetSpec(Scope("c1", ("g",)), strategy, clamp=clamp)
    plan = plan_rows(frames.snapshot(spark, rows), spec).cache()
    got = [PlanRow.from_dict(r.asDict()) for r in plan.collect()]
    assert len(got) == len(rows)
    for r in got:
        lo, hi = r.min_offset, r.max_offset
        if r.target is not None and not lo <= r.target <= hi:
            assert not clamp
            assert ("below_min" if r.target < lo else "above_max") in r.warnings
        if clamp and r.requested is not None and r.requested != r.target:
            assert r.clamp == ("below_min" if r.requested < lo else "above_max")
        if r.current is None or r.target is None:
            assert r.delta is None
        else:
            assert r.delta == r.target - r.current
        assert ("no_committed" in r.warnings) == (r.current is None)
        if isinstance(strategy, ShiftBy):
            assert r.requested == (None if r.current is None else r.current + strategy.delta)

    totals = {(t["group"], t["topic"]): t for t in topic_totals(plan).collect()}
    plan.unpersist()
    for topic in {r.topic for r in got}:
        mine = [r for r in got if r.topic == topic]
        deltas = [r.delta for r in mine if r.delta is not None]
        t = totals[("g", topic)]
        assert t["queues"] == len(mine)
        assert t["changed"] == sum(r.changed for r in mine)
        assert t["re_consume"] == sum(-d for d in deltas if d < 0)
        assert t["skip"] == sum(d for d in deltas if d > 0)
        assert t["skip"] - t["re_consume"] == sum(deltas)
        assert t["warned"] == sum(1 for r in mine if r.warnings)
        assert t["lag_before"] == sum(
            r.max_offset - r.current for r in mine if r.current is not None
        )
        assert t["lag_after"] == sum(r.max_offset - r.target for r in mine if r.target is not None)
    digests = {key: t["digest"] for key, t in totals.items()}
    assert root_digest("c1", digests) == content_hash("c1", got)
    # The small-plan path adds up in Python: the same numbers as Spark's.
    in_python = {key: (t, d) for key, (t, d) in python_topic_totals(got).items()}
    for key, t in totals.items():
        sums, digest = in_python[key]
        assert (sums.queues, sums.changed, sums.re_consume, sums.skip, sums.warned) == (
            t["queues"],
            t["changed"],
            t["re_consume"],
            t["skip"],
            t["warned"],
        )
        assert (sums.lag_before, sums.lag_after, digest) == (
            t["lag_before"],
            t["lag_after"],
            t["digest"],
        )
