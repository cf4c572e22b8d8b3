"""The plan keeps its spec as one typed value, parsed when plan.json is read, and every stage after
the plan reads that value: the apply's check (the client push's timestamp), the history, the
mqadmin commands. The word `earliest` as a spec writes it (a plain string, not a mapping) once
read as per-queue targets at apply time: a 4.9.x group with live consumers was refused instead
of being given the client push its plan named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from console.domain.mqadmin import plan_resets
from console.domain.plan import PlanHeader, PlanRow
from console.domain.spec import Earliest, FileOffset, FromFile, Latest, ResetSpec, Scope
from console.services.apply.check import _push_timestamp
from console.services.apply.history import read_history
from console.services.infra.workspace import Workspace
from console.services.plan.load import LoadedPlan

T = 1_795_338_300_000


def plan_json(
    strategy: Any, *, queue_ids: list[int] | None = None, timestamp: int | None = None
) -> str:
    """plan.json's text as the plan job writes it: the spec as its YAML said it."""
    scope: dict[str, Any] = {"cluster": "prod", "groups": ["billing"], "include_retry": False}
    if queue_ids:
        scope["queue_ids"] = queue_ids
    return json.dumps(
        {
            "format": 1,
            "id": "20261122T090500000Z-billing-earliest-abcdef",
            "created_at": "2026-11-22T09:05:00.000+00:00",
            "created_at_ms": T,
            "spec": {"scope": scope, "strategy": strategy, "clamp": True},
            "snapshot": {"cluster": "prod", "id": "20261122T090400000Z", "taken_at_ms": T},
            "source_snapshot": None,
            "timestamp_ms": timestamp,
            "content_hash": "sha256:00",
            "rows": 1,
            "totals": [
                {
                    "group": "billing",
                    "topic": None,
                    "queues": 1,
                    "changed": 1,
                    "re_consume": 8,
                    "skip": 0,
                    "warned": 0,
                    "lag_before": 2,
                    "lag_after": 10,
                }
            ],
            "reset_paths": {
                "billing": {
                    "kind": "client push",
                    "reason": "broker-a runs V4_9_7",
                    "blocker": None,
                }
            },
            "imported_from": None,
        }
    )


ROW = PlanRow("prod", "billing", "orders", "broker-a", 0, 0, 10, 8, 0, 0, -8, None, ())


def loaded(text: str) -> LoadedPlan:
    return LoadedPlan("file:///ws/plans/p", PlanHeader.from_json(text, "plan.json"), (ROW,))


@pytest.mark.parametrize(
    ("strategy", "queue_ids", "timestamp", "pushed"),
    [
        ("earliest", None, None, 0),  # the word as a spec writes it
        ("latest", None, None, -1),
        ({"earliest": None}, None, None, 0),  # the mapping form
        ({"to-timestamp": "2026-11-22T08:05:00.000Z"}, None, T - 3_600_000, T - 3_600_000),
        ({"by-duration": "3600000ms"}, None, T - 3_600_000, T - 3_600_000),
        ("earliest", [0], None, None),  # some queues only: per-queue targets
        ({"shift-by": -8}, None, None, None),
        ({"to-offset": 0}, None, None, None),
    ],
)
def test_the_push_timestamp_comes_from_the_typed_spec(
    strategy: Any, queue_ids: list[int] | None, timestamp: int | None, pushed: int | None
) -> None:
    assert _push_timestamp(
        loaded(plan_json(strategy, queue_ids=queue_ids, timestamp=timestamp))
    ) == (pushed)


def test_plan_json_holds_the_spec_as_written_and_reads_back_typed() -> None:
    header = PlanHeader.from_json(plan_json("earliest"), "plan.json")
    assert header.spec == ResetSpec(Scope("prod", ("billing",)), Earliest())
    assert header.spec.one_time_per_topic
    written = json.loads(header.to_json())["spec"]
    assert written["strategy"] == "earliest"  # the file's form is unchanged: old plans still read
    assert PlanHeader.from_json(header.to_json()) == header


def test_a_from_file_plan_keeps_the_file_not_its_rows() -> None:
    rows = (FileOffset(2, "orders", "broker-a", 0, 5),)
    spec = ResetSpec(Scope("prod", ("billing",)), FromFile("/tmp/offsets.csv", rows))
    recorded = spec.as_recorded()
    assert recorded.strategy == FromFile("/tmp/offsets.csv")
    assert not recorded.one_time_per_topic
    text = plan_json({"from-file": "/tmp/offsets.csv"})
    assert PlanHeader.from_json(text).spec == recorded  # the CSV is not read again


def test_a_spec_that_does_not_parse_names_plan_json() -> None:
    with pytest.raises(
        ValueError, match=r"^plans/p/plan\.json: the plan's spec: strategy: unknown"
    ):
        PlanHeader.from_json(plan_json("sooner"), "plans/p/plan.json")


def test_history_names_the_strategy_not_its_first_letter(tmp_path: Path) -> None:
    plan = tmp_path / "plans" / "20261122T090500000Z-billing-earliest-abcdef"
    plan.mkdir(parents=True)
    (plan / "plan.json").write_text(plan_json("earliest"))
    (entry,) = read_history(Workspace(tmp_path)).entries
    assert entry.status == "earliest: 1 of 1 queues change"


def test_mqadmin_skips_accumulated_for_a_plain_latest() -> None:
    header = PlanHeader.from_json(plan_json("latest"))
    row = PlanRow("prod", "billing", "orders", "broker-a", 0, 0, 10, 8, 10, 10, 2, None, ())
    (line,) = plan_resets(header, [row], ["127.0.0.1:9876"], {"broker-a": "127.0.0.1:10911"})
    assert line.startswith("mqadmin skipAccumulatedMessage -n 127.0.0.1:9876 -g billing -t orders")


def test_a_walkthrough_reads_the_typed_spec_its_answers_make() -> None:
    from console.services.walkthrough.guided_run import Answer, WalkthroughRun, load_walkthroughs

    walkthrough = load_walkthroughs().get("drain-flood")
    assert walkthrough is not None
    run = WalkthroughRun(walkthrough, "prod", "billing", T)
    assert run.draft_spec() is None  # `{to}` is not answered yet
    run.take(walkthrough.step("to"), Answer("latest", "latest", "latest"))
    run.take(walkthrough.step("topics"), None)
    draft = run.draft_spec()
    assert draft == ResetSpec(Scope("prod", ("billing",)), Latest())
    assert draft.one_time_per_topic  # what the reset-path evidence asks: a push can carry it
    assert run.spec is None  # a draft is not kept: the plan builds its own
