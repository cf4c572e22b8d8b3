"""The spec-against-snapshot checks the plan job (and the console) run before any row."""

from __future__ import annotations

from typing import Any

import pytest

from console.domain.checks import ScopeCell, check_scope, check_source_groups, topic_in_scope
from console.domain.spec import Latest, ResetSpec, Scope, ShiftBy, SpecError, Strategy, ToGroup

CELLS = [
    ScopeCell("g", "orders", "broker-a", (), room_up=60, room_down=40),
    ScopeCell("g", "orders", "broker-b", (), room_up=None, room_down=None),
    ScopeCell("g", "%RETRY%g", "broker-a", (), room_up=0, room_down=5),
    ScopeCell("h", "pay", "broker-a", (), room_up=9, room_down=9),
]


def spec(strategy: Strategy | None = None, **scope: Any) -> ResetSpec:
    return ResetSpec(Scope("c1", scope.pop("groups", ("g",)), **scope), strategy or Latest())


def test_a_good_spec_passes() -> None:
    check_scope(spec(topics=("orders",), brokers=("broker-b",)), CELLS, "s1")
    check_scope(spec(ShiftBy(60)), CELLS, "s1")
    check_scope(spec(ShiftBy(-40)), CELLS, "s1")
    check_scope(spec(ToGroup("h")), CELLS, "s1")


@pytest.mark.parametrize(
    ("the_spec", "cells", "where", "words"),
    [
        (spec(groups=("g", "x")), CELLS, "scope.groups[1]", "groups there: g, h"),
        (spec(ToGroup("x")), CELLS, "strategy.to-group", "'x' has no offsets in snapshot s1"),
        (spec(topics=("pay",)), CELLS, "scope.topics[0]", "topics: %RETRY%g, orders"),
        (spec(brokers=("broker-z",)), CELLS, "scope.brokers[0]", "brokers: broker-a, broker-b"),
        (spec(ShiftBy(61)), CELLS, "strategy.shift-by", "at most 60 message(s) are left"),
        (spec(ShiftBy(-41)), CELLS, "strategy.shift-by", "at most 40 message(s) can be re"),
        (spec(ShiftBy(1), brokers=("broker-b",)), CELLS, "strategy.shift-by", "no queue in scope"),
        (spec(topics=("%RETRY%g",), brokers=("broker-b",)), CELLS, "scope", "matches no queue"),
        (
            spec(queue_ids=(0, 7)),
            [ScopeCell("g", "orders", "a", (0,), 1, 1)],
            "scope.queue_ids[1]",
            "no queue 7",
        ),
    ],
)
def test_errors(the_spec: ResetSpec, cells: list[ScopeCell], where: str, words: str) -> None:
    with pytest.raises(SpecError) as info:
        check_scope(the_spec, cells, "s1")
    assert info.value.where == where
    assert words in str(info.value)


def test_shift_room_counts_only_the_selected_queues() -> None:
    # Queue 0 has 3 to skip, queue 1 has 50: a filter to queue 0 means at most 3.
    cells = [ScopeCell("g", "orders", "a", (0,), room_up=3, room_down=0)]
    with pytest.raises(SpecError, match="at most 3"):
        check_scope(spec(ShiftBy(4), queue_ids=(0,)), cells, "s1")


@pytest.mark.parametrize(
    ("scope", "topic", "inside"),
    [
        (Scope("c", ("g",)), "orders", True),
        (Scope("c", ("g",)), "%RETRY%g", False),
        (Scope("c", ("g",)), "%DLQ%g", False),
        (Scope("c", ("g",), include_retry=True), "%RETRY%g", True),
        (Scope("c", ("g",), include_retry=True), "%RETRY%other", False),
        (Scope("c", ("g",), topics=("a",)), "orders", False),
        (Scope("c", ("g",), topics=("a",), include_retry=True), "%RETRY%g", True),
    ],
)
def test_topic_in_scope(scope: Scope, topic: str, inside: bool) -> None:
    assert topic_in_scope(scope, "g", topic) is inside


def test_source_groups() -> None:
    check_source_groups(["g"], ["g", "h"], "old")
    with pytest.raises(SpecError, match="snapshot old has no offsets for g, k"):
        check_source_groups(["g", "k"], ["h"], "old")
