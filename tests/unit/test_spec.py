"""Reset specs: every strategy parses to the value meant, and every mistake names its field."""

from __future__ import annotations

import json
import pickle
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from console.domain.offsets_csv import parse_offsets_csv
from console.domain.spec import (
    ByDuration,
    Earliest,
    FileOffset,
    FromFile,
    Latest,
    ResetSpec,
    Scope,
    ShiftBy,
    SpecError,
    StrategyKind,
    ToGroup,
    ToOffset,
    ToSnapshot,
    ToTimestamp,
    describe,
    parse_duration,
    parse_spec,
    parse_timestamp,
    spec_to_dict,
    strategy_kind,
)
from console.services.plan.spec_files import load_spec

SCOPE = {"cluster": "prod", "groups": ["orders"]}
# 2026-11-22T09:05:00Z in epoch ms, by hand: 2026-01-01 is day 56 * 365 + 14 leap days = 20454,
# Nov 22 is 304 + 21 days later (20779), plus 9h05m.
T_0905Z = (20779 * 86400 + 9 * 3600 + 5 * 60) * 1000


def parse(strategy: Any, **extra: Any) -> ResetSpec:
    return parse_spec({"scope": {**SCOPE, **extra.pop("scope", {})}, "strategy": strategy, **extra})


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ("earliest", Earliest()),
        ({"latest": None}, Latest()),
        ({"to-offset": 42}, ToOffset(42)),
        ({"to_offset": "42"}, ToOffset(42)),
        ({"shift-by": -100}, ShiftBy(-100)),
        ({"shift-by": "+7"}, ShiftBy(7)),
        ({"to-timestamp": "2026-11-22T10:05:00+01:00"}, ToTimestamp(T_0905Z)),
        ({"to-timestamp": "2026-11-22T09:05:00Z"}, ToTimestamp(T_0905Z)),
        ({"to-timestamp": T_0905Z}, ToTimestamp(T_0905Z)),
        ({"to-timestamp": str(T_0905Z)}, ToTimestamp(T_0905Z)),
        ({"by-duration": "30m"}, ByDuration(1_800_000)),
        ({"by-duration": "30 minutes back"}, ByDuration(1_800_000)),
        ({"by-duration": "1h30m"}, ByDuration(5_400_000)),
        ({"by-duration": "PT1H30M"}, ByDuration(5_400_000)),
        ({"by-duration": "2 days"}, ByDuration(172_800_000)),
        ({"by-duration": "90s ago"}, ByDuration(90_000)),
        ({"to-group": "shadow"}, ToGroup("shadow")),
        ({"to-snapshot": "20261122T090500000Z"}, ToSnapshot(snapshot_id="20261122T090500000Z")),
        ({"to-snapshot": {"at": "2026-11-22T09:05:00Z"}}, ToSnapshot(at_ms=T_0905Z)),
    ],
)
def test_strategies(strategy: Any, expected: Any) -> None:
    assert parse(strategy).strategy == expected


def test_scope_defaults_and_lists() -> None:
    spec = parse(
        "latest",
        scope={"topics": ["a", "b"], "brokers": "broker-a", "queue_ids": [3, 1, 3 - 2]},
    )
    assert spec.scope == Scope(
        cluster="prod",
        groups=("orders",),
        topics=("a", "b"),
        brokers=("broker-a",),
        queue_ids=(1, 3),
        include_retry=False,
    )
    assert spec.clamp is True
    single = parse_spec({"scope": {"cluster": "c", "group": "x"}, "strategy": "latest"})
    assert single.scope.groups == ("x",)


def test_yaml_datetime_with_zone_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(
        "scope: {cluster: prod, groups: [orders]}\n"
        "strategy:\n  to-timestamp: 2026-11-22T10:05:00+01:00\n"  # unquoted: YAML datetime
    )
    assert load_spec(path).strategy == ToTimestamp(T_0905Z)


def test_json_spec_and_from_file_relative_to_it(tmp_path: Path) -> None:
    (tmp_path / "o.csv").write_text("topic,broker,queue_id,offset\norders,broker-a,0,12\n")
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({"scope": SCOPE, "strategy": {"from-file": "o.csv"}}))
    spec = load_spec(path)
    assert spec.strategy == FromFile(
        str(tmp_path / "o.csv"), (FileOffset(2, "orders", "broker-a", 0, 12),)
    )


@pytest.mark.parametrize(
    "strategy",
    [
        "earliest",
        {"to-offset": 9},
        {"shift-by": -3},
        {"to-timestamp": "2026-11-22T09:05:00Z"},
        {"by-duration": "45m"},
        {"to-group": "g2"},
        {"to-snapshot": {"id": "20261122T090500000Z"}},
        {"to-snapshot": {"at": "2026-11-22T09:05:00Z"}},
    ],
)
def test_round_trip(strategy: Any) -> None:
    spec = parse(strategy, scope={"topics": ["t"], "queue_ids": [2], "include_retry": True})
    assert parse_spec(spec_to_dict(spec)) == spec


STRATEGIES = (
    (Earliest(), StrategyKind.EARLIEST, "earliest"),
    (Latest(), StrategyKind.LATEST, "latest"),
    (ToOffset(9), StrategyKind.TO_OFFSET, {"to-offset": 9}),
    (ShiftBy(-3), StrategyKind.SHIFT_BY, {"shift-by": -3}),
    (ToTimestamp(T_0905Z), StrategyKind.TO_TIMESTAMP, {"to-timestamp": "2026-11-22T09:05:00.000Z"}),
    (ByDuration(2_700_000), StrategyKind.BY_DURATION, {"by-duration": "2700000ms"}),
    (ToGroup("g2"), StrategyKind.TO_GROUP, {"to-group": "g2"}),
    (ToSnapshot(snapshot_id="s1"), StrategyKind.TO_SNAPSHOT, {"to-snapshot": {"id": "s1"}}),
    (
        ToSnapshot(at_ms=T_0905Z),
        StrategyKind.TO_SNAPSHOT,
        {"to-snapshot": {"at": "2026-11-22T09:05:00.000Z"}},
    ),
    (FromFile("/o.csv", ()), StrategyKind.FROM_FILE, {"from-file": "/o.csv"}),
)


@pytest.mark.parametrize(("strategy", "kind", "value"), STRATEGIES)
def test_kind_belongs_to_the_strategy_class(strategy: Any, kind: StrategyKind, value: Any) -> None:
    """`kind` is the class's, not a field: not compared, not printed, not given, not pickled,
    and the spec's JSON form is what it always was."""
    assert strategy.kind is kind
    assert type(strategy).kind is kind
    assert "kind" not in {f.name for f in fields(strategy)}
    assert "kind" not in repr(strategy)
    assert pickle.loads(pickle.dumps(strategy)) == strategy
    with pytest.raises(TypeError):
        type(strategy)(kind=kind)
    spec = ResetSpec(Scope("prod", ("orders",)), strategy)
    assert json.dumps(spec_to_dict(spec)) == json.dumps(
        {
            "scope": {"cluster": "prod", "groups": ["orders"], "include_retry": False},
            "strategy": value,
            "clamp": True,
        }
    )


def test_every_kind_has_its_strategy_class() -> None:
    assert {kind for _, kind, _ in STRATEGIES} == set(StrategyKind)
    assert Earliest() != Latest()
    assert ToOffset(5) != ShiftBy(5)
    assert ToOffset(5) == ToOffset(5)


def test_describe() -> None:
    assert describe(ToTimestamp(T_0905Z)) == "to-timestamp 2026-11-22T09:05:00.000Z"
    assert describe(Earliest()) == "earliest"
    assert describe(ShiftBy(-5)) == "shift-by -5"


def test_by_duration_resolves_against_now() -> None:
    spec = parse({"by-duration": "30m"})
    assert spec.timestamp_ms(T_0905Z) == T_0905Z - 1_800_000
    assert parse("latest").timestamp_ms(T_0905Z) is None


@pytest.mark.parametrize(
    ("doc", "where", "words"),
    [
        ({"strategy": "latest"}, "scope", "missing"),
        ({"scope": SCOPE}, "strategy", "missing"),
        ({"scope": {"groups": ["a"]}, "strategy": "latest"}, "scope.cluster", "missing"),
        ({"scope": {"cluster": "c"}, "strategy": "latest"}, "scope.groups", "at least one"),
        ({"scope": {**SCOPE, "topic": "x"}, "strategy": "latest"}, "scope.topic", "unknown"),
        (
            {"scope": {**SCOPE, "queue_ids": [-1]}, "strategy": "latest"},
            "scope.queue_ids[0]",
            "below 0",
        ),
        (
            {"scope": {**SCOPE, "groups": ["a", "a"]}, "strategy": "latest"},
            "scope.groups[1]",
            "twice",
        ),
        ({"scope": SCOPE, "strategy": "rewind"}, "strategy", "unknown strategy 'rewind'"),
        ({"scope": SCOPE, "strategy": {"latest": 1, "earliest": 1}}, "strategy", "exactly one"),
        ({"scope": SCOPE, "strategy": {"to-offset": -1}}, "strategy.to-offset", "below 0"),
        ({"scope": SCOPE, "strategy": {"to-offset": "ten"}}, "strategy.to-offset", "integer"),
        ({"scope": SCOPE, "strategy": {"shift-by": 0}}, "strategy.shift-by", "changes nothing"),
        (
            {"scope": SCOPE, "strategy": {"shift-by": 2**63}},
            "strategy.shift-by",
            "beyond the offset range",
        ),
        (
            {"scope": SCOPE, "strategy": {"shift-by": -(2**63)}},
            "strategy.shift-by",
            "beyond the offset range",
        ),
        (
            {"scope": SCOPE, "strategy": {"to-timestamp": "2026-11-22T10:05:00"}},
            "strategy.to-timestamp",
            "no time zone",
        ),
        (
            {"scope": SCOPE, "strategy": {"to-timestamp": "yesterday"}},
            "strategy.to-timestamp",
            "not an ISO 8601 time",
        ),
        (
            {"scope": SCOPE, "strategy": {"to-timestamp": 1763802300}},
            "strategy.to-timestamp",
            "epoch seconds",
        ),
        (
            {"scope": SCOPE, "strategy": {"by-duration": "30"}},
            "strategy.by-duration",
            "not a duration",
        ),
        (
            {"scope": SCOPE, "strategy": {"by-duration": "3 fortnights"}},
            "strategy.by-duration",
            "unknown unit",
        ),
        (
            {"scope": SCOPE, "strategy": {"to-group": "orders"}},
            "strategy.to-group",
            "also a group being reset",
        ),
        (
            {"scope": SCOPE, "strategy": {"to-snapshot": {"id": "a", "at": 1}}},
            "strategy.to-snapshot",
            "not both",
        ),
        ({"scope": SCOPE, "strategy": "latest", "clamp": "yes"}, "clamp", "true or false"),
        ({"scope": SCOPE, "strategy": {"to-offset": None}}, "strategy.to-offset", "needs a value"),
    ],
)
def test_errors_name_the_field(doc: dict[str, Any], where: str, words: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(doc)
    assert info.value.where == where
    assert words in str(info.value)
    assert str(info.value).startswith(f"{where}: ")


def test_file_errors_name_file_and_line(tmp_path: Path) -> None:
    bad_yaml = tmp_path / "s.yaml"
    bad_yaml.write_text("scope: {cluster: prod\nstrategy: latest\n")
    with pytest.raises(SpecError, match=r"s\.yaml:\d+: invalid YAML"):
        load_spec(bad_yaml)
    bad_json = tmp_path / "s.json"
    bad_json.write_text('{"scope": {}\n,,}')
    with pytest.raises(SpecError, match=r"s\.json:2: invalid JSON"):
        load_spec(bad_json)
    with pytest.raises(SpecError, match="cannot read the spec"):
        load_spec(tmp_path / "absent.yaml")
    spec = tmp_path / "f.yaml"
    spec.write_text("scope: {cluster: prod, groups: [g]}\nstrategy: {from-file: none.csv}\n")
    with pytest.raises(SpecError, match="none.csv: cannot read the offsets file"):
        load_spec(spec)


@pytest.mark.parametrize(
    ("text", "where", "words"),
    [
        ("", "o.csv:1", "empty file"),
        ("topic,broker\nt,b\n", "o.csv:1", "missing column(s) queue_id, offset"),
        ("topic,broker,queue_id,offset\nt,b,0,5\nt,b,x,5\n", "o.csv:3", "queue_id: expected"),
        ("topic,broker,queue_id,offset\nt,b,0,-5\n", "o.csv:2", "offset: -5 is below 0"),
        ("topic,broker,queue_id,offset\nt,b,0,\n", "o.csv:2", "offset is empty"),
        ("topic,broker,queue_id,offset\nt,b,0,1\n\nt,b,0,2\n", "o.csv:4", "listed twice"),
        ("topic,broker,queue_id,offset\n", "o.csv:2", "no offsets"),
    ],
)
def test_offsets_csv_errors(text: str, where: str, words: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_offsets_csv(text, "o.csv")
    assert info.value.where == where
    assert words in str(info.value)


def test_offsets_csv_reads_plan_exports() -> None:
    text = (
        "cluster,group,topic,broker,queue_id,current,target,warnings\n"
        "prod,g,t,broker-a,0,10,4,below_min\n"
        "prod,g,t,broker-a,1,10,,no_source\n"
        "prod,h,t,broker-a,0,,8,\n"
    )
    rows = parse_offsets_csv(text, "plan.csv", skip_blank_offsets=True)
    assert rows == (
        FileOffset(2, "t", "broker-a", 0, 4, group="g"),
        FileOffset(4, "t", "broker-a", 0, 8, group="h"),
    )


@pytest.mark.parametrize(
    ("text", "ms"), [("10ms", 10), ("1 hour", 3_600_000), ("PT90S", 90_000), ("1d2h", 93_600_000)]
)
def test_durations(text: str, ms: int) -> None:
    assert parse_duration(text, "x") == ms


def test_timestamp_keeps_milliseconds() -> None:
    assert parse_timestamp("2026-11-22T09:05:00.123Z", "x") == T_0905Z + 123


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("earliest", StrategyKind.EARLIEST),
        ({"to_timestamp": "{since}"}, StrategyKind.TO_TIMESTAMP),
        ("{to}", None),  # a walkthrough's answer, not known yet
        ({"a": 1, "b": 2}, None),
        (7, None),
    ],
)
def test_the_kind_a_strategy_names(value: Any, kind: StrategyKind | None) -> None:
    assert strategy_kind(value) is kind


def test_one_time_per_topic() -> None:
    scope = Scope("prod", ("billing",))
    for one_time in (Earliest(), Latest(), ToTimestamp(T_0905Z), ByDuration(60_000)):
        assert ResetSpec(scope, one_time).one_time_per_topic
    assert not ResetSpec(scope, ShiftBy(-1)).one_time_per_topic
    assert not ResetSpec(Scope("prod", ("billing",), queue_ids=(1,)), Latest()).one_time_per_topic
