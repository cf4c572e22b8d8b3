"""A to-timestamp in the future is a mistake until the operator says otherwise."""

from __future__ import annotations

from console.cli.plan import FUTURE_SLACK_MS, future_by_ms
from console.domain.spec import Earliest, ResetSpec, Scope, ToTimestamp

NOW = 1_795_440_000_000


def spec(strategy: object) -> ResetSpec:
    return ResetSpec(Scope(cluster="c", groups=("g",)), strategy)  # type: ignore[arg-type]


def test_a_time_an_hour_ahead_is_in_the_future() -> None:
    assert future_by_ms(spec(ToTimestamp(NOW + 3_600_000)), NOW) == 3_600_000


def test_clocks_may_differ_a_little() -> None:
    assert future_by_ms(spec(ToTimestamp(NOW + FUTURE_SLACK_MS)), NOW) is None
    assert future_by_ms(spec(ToTimestamp(NOW - 1)), NOW) is None


def test_other_strategies_have_no_future() -> None:
    assert future_by_ms(spec(Earliest()), NOW) is None
