"""Walkthroughs as data: the shipped files load, a malformed file is an error naming its file and
line (and the others still load), a team's file replaces a shipped one by name, answers fill the
spec template, and times are read in the local zone and never in the future."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from console.domain.spec import Latest, ShiftBy, ToSnapshot, ToTimestamp
from console.domain.walkthrough import (
    MissingValue,
    StepKind,
    WalkthroughError,
    render,
)
from console.services.walkthrough.catalog import load_catalogue, parse_walkthrough
from console.services.walkthrough.evidence.registry import EVIDENCE
from console.services.walkthrough.guided_run import (
    Answer,
    AnswerError,
    WalkthroughRun,
    catalogue_dirs,
    check_plain_answer,
    load_walkthroughs,
    parse_time,
)

SHIPPED = catalogue_dirs({"RMQ_CONSOLE_CONFIG": "/nonexistent/config.yaml"})[0]
NOW_MS = int(datetime(2026, 11, 25, 12, 0).astimezone().timestamp() * 1000)

GOOD = """\
name: custom
title: A team's own
question: Move {group} by {n}
steps:
  - id: n
    kind: number
    ask: How many?
spec:
  strategy:
    shift-by: "{n}"
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def test_every_shipped_walkthrough_loads_in_order() -> None:
    catalogue = load_walkthroughs([SHIPPED])
    assert catalogue.problems == ()
    assert catalogue.names[0] == "replay-since"
    assert {"replay-since", "drain-flood", "shadow-from-group", "put-back", "retry-backlog"} <= set(
        catalogue.names
    )
    for w in catalogue.walkthroughs:
        assert w.steps
        assert w.title
        assert w.question
        assert set(w.evidence) <= set(EVIDENCE)


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("name: x\ntitle: [unclosed\n", 3, "not valid YAML"),
        (GOOD.replace("kind: number", "kind: colour"), 6, "kind 'colour'"),
        (GOOD.replace("title:", "titel:"), 2, "unknown field 'titel'"),
        (GOOD + "evidence: [group, crystal-ball]\n", 11, "unknown evidence 'crystal-ball'"),
        (GOOD.replace('"{n}"', '"{m}"'), 8, "{m}, which no step asks for"),
        (GOOD.replace("  - id: n\n", "  - id: n\n    nonsense: 1\n"), 6, "unknown step field"),
        ("- a list\n", 1, "expected a mapping"),
    ],
)
def test_a_malformed_walkthrough_names_its_file_and_line(
    tmp_path: Path, text: str, line: int, problem: str
) -> None:
    path = write(tmp_path, "bad.yaml", text)
    with pytest.raises(WalkthroughError) as raised:
        parse_walkthrough(text, str(path), EVIDENCE)
    assert raised.value.where == f"{path}:{line}"
    assert problem in raised.value.problem


def test_a_bad_file_is_a_problem_and_the_others_still_load(tmp_path: Path) -> None:
    user = tmp_path / "walkthroughs"
    write(user, "broken.yaml", "name: broken\nsteps: 3\n")
    write(user, "custom.yaml", GOOD)
    catalogue = load_catalogue([SHIPPED, user], EVIDENCE)
    assert "custom" in catalogue.names
    assert "replay-since" in catalogue.names
    (problem,) = catalogue.problems
    assert problem.where.startswith(str(user / "broken.yaml"))


def test_a_teams_file_replaces_a_shipped_one_of_the_same_name(tmp_path: Path) -> None:
    user = tmp_path / "walkthroughs"
    write(user, "mine.yaml", GOOD.replace("name: custom", "name: drain-flood"))
    catalogue = load_catalogue([SHIPPED, user], EVIDENCE)
    replaced = catalogue.get("drain-flood")
    assert replaced is not None
    assert replaced.title == "A team's own"


def test_user_walkthroughs_are_read_beside_the_config_file(tmp_path: Path) -> None:
    write(tmp_path / "walkthroughs", "custom.yaml", GOOD)
    config = tmp_path / "config.yaml"
    catalogue = load_walkthroughs(environ={"RMQ_CONSOLE_CONFIG": str(config)})
    assert "custom" in catalogue.names


def test_render_keeps_types_drops_blank_optionals_and_names_what_is_missing() -> None:
    template = {"scope": {"topics": "{topics}", "queue_ids": ["{q}"]}, "strategy": "x {n}"}
    assert render(template, {"topics": None, "q": 3, "n": 5}) == {
        "scope": {"queue_ids": [3]},
        "strategy": "x 5",
    }
    with pytest.raises(MissingValue):
        render(template, {"topics": None})


def run_of(name: str) -> WalkthroughRun:
    w = load_walkthroughs([SHIPPED]).get(name)
    assert w is not None
    return WalkthroughRun(w, "prod", "billing", NOW_MS)


def test_the_shipped_templates_give_the_specs_they_promise() -> None:
    drain = run_of("drain-flood")
    drain.take(drain.walkthrough.step("to"), Answer("latest", "latest", "latest"))
    drain.take(drain.walkthrough.step("topics"), None)
    spec = drain.build_spec()
    assert isinstance(spec.strategy, Latest)
    assert (spec.scope.cluster, spec.scope.groups, spec.scope.topics) == ("prod", ("billing",), ())

    replay = run_of("replay-since")
    replay.take(replay.walkthrough.step("since"), Answer("10:05", NOW_MS - 60_000, "10:05"))
    replay.take(replay.walkthrough.step("topics"), Answer("orders", ["orders"], "orders"))
    spec = replay.build_spec()
    assert spec.strategy == ToTimestamp(NOW_MS - 60_000)
    assert spec.scope.topics == ("orders",)
    assert replay.question() == "Re-consume every message of billing stored since 10:05"

    back = run_of("put-back")
    assert back.question() == "Put billing back to …"
    back.take(back.walkthrough.step("back_to"), Answer("x", {"to-snapshot": "S1"}, "snapshot S1"))
    assert back.build_spec().strategy == ToSnapshot(snapshot_id="S1")

    retry = run_of("retry-backlog")
    retry.take(retry.walkthrough.step("action"), Answer("2", "latest", "Skip"))
    spec = retry.build_spec()
    assert spec.scope.topics == ("%RETRY%billing",)
    assert spec.scope.include_retry


def test_a_queue_answer_scopes_a_shift_to_that_queue_only(tmp_path: Path) -> None:
    text = GOOD.replace("kind: number", "kind: queue\n    choices_from: stuck.queues").replace(
        'shift-by: "{n}"', "shift-by: 1"
    )
    text = text.replace(
        "spec:\n",
        'spec:\n  scope:\n    topics: ["{n.topic}"]\n    brokers: '
        '["{n.broker}"]\n    queue_ids: ["{n.queue_id}"]\n',
    )
    w = parse_walkthrough(text, "skip.yaml", EVIDENCE)
    run = WalkthroughRun(w, "prod", "billing", NOW_MS)
    extras = {"topic": "orders", "broker": "broker-a", "queue_id": 2, "committed": 40}
    run.take(w.step("n"), Answer("1", "orders/broker-a/2", "orders/broker-a/2", extras))
    spec = run.build_spec()
    assert spec.strategy == ShiftBy(1)
    assert (spec.scope.topics, spec.scope.brokers, spec.scope.queue_ids) == (
        ("orders",),
        ("broker-a",),
        (2,),
    )


def local_ms(y: int, mo: int, d: int, h: int, mi: int) -> int:
    return int(datetime(y, mo, d, h, mi).astimezone().timestamp() * 1000)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10:05", local_ms(2026, 11, 25, 10, 5)),
        ("yesterday 23:40", local_ms(2026, 11, 24, 23, 40)),
        ("2026-11-25 09:00", local_ms(2026, 11, 25, 9, 0)),
        ("2h ago", NOW_MS - 7_200_000),
        ("-30m", NOW_MS - 1_800_000),
        (
            "2026-11-25T08:00:00Z",
            int(datetime.fromisoformat("2026-11-25T08:00:00+00:00").timestamp() * 1000),
        ),
        (str(NOW_MS - 5), NOW_MS - 5),
    ],
)
def test_times_as_operators_type_them(text: str, expected: int) -> None:
    assert parse_time(text, NOW_MS) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("13:00", "in the future; for the day before, type yesterday 13:00"),
        ("in an hour", "not an ISO 8601 time"),
        ("25:00", "not a time of day"),
        ("2099-01-01T00:00:00Z", "in the future"),
        ("", "give a time"),
    ],
)
def test_an_impossible_time_is_explained(text: str, problem: str) -> None:
    with pytest.raises(AnswerError, match=problem):
        parse_time(text, NOW_MS)


def test_plain_answers_are_checked_by_their_kind() -> None:
    retry = run_of("retry-backlog")
    step = retry.walkthrough.step("action")
    assert check_plain_answer(step, "2", NOW_MS).value == "latest"
    assert check_plain_answer(step, "earliest", NOW_MS).value == "earliest"
    with pytest.raises(AnswerError, match="not one of: 1 earliest, 2 latest"):
        check_plain_answer(step, "3", NOW_MS)
    target = run_of("drain-flood").walkthrough.step("to")
    assert target.kind is StepKind.TARGET
    assert check_plain_answer(target, "latest", NOW_MS).value == "latest"
    assert check_plain_answer(target, "1h ago", NOW_MS).value == {
        "to-timestamp": NOW_MS - 3_600_000
    }
