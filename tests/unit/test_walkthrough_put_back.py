"""Putting a group back to a time: the newest snapshot of it taken at or before then, else the
committed offsets the console's lag history recorded then, written as an offsets file the plan
reads; nothing recorded that far back is an answer explained, not a plan."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from console.config import Config
from console.domain.offsets import GroupOffsets, QueueOffsets
from console.domain.spec import FromFile
from console.services.plan.spec_files import load_offsets_file
from console.services.read.lag_history import LagHistory
from console.services.walkthrough.evidence.answers import check_answer
from console.services.walkthrough.evidence.context import EvidenceContext
from console.services.walkthrough.guided_run import AnswerError, WalkthroughRun, load_walkthroughs

NOW_MS = 1_790_000_000_000
HOUR_MS = 3_600_000


def offsets(at_ms: int, committed: dict[int, int]) -> GroupOffsets:
    return GroupOffsets(
        "billing",
        at_ms,
        tuple(QueueOffsets("orders", "broker-a", q, 0, 1000, c) for q, c in committed.items())
        + (QueueOffsets("%RETRY%billing", "broker-a", 0, 0, 9, 4),),
    )


def context(tmp_path: Path) -> tuple[EvidenceContext, WalkthroughRun]:
    walkthrough = load_walkthroughs(environ={"RMQ_CONSOLE_CONFIG": str(tmp_path / "none.yaml")})
    w = walkthrough.get("put-back")
    assert w is not None
    run = WalkthroughRun(w, "prod", "billing", NOW_MS)
    reader: Any = None  # a snapshot answer reads the workspace only
    ctx = EvidenceContext(reader, run, Config(workspace=str(tmp_path / "ws")), lambda: NOW_MS)
    return ctx, run


def test_a_time_before_any_snapshot_takes_the_recorded_offsets(tmp_path: Path) -> None:
    ctx, run = context(tmp_path)
    history = LagHistory(tmp_path / "ws")
    history.record("prod", [offsets(NOW_MS - 2 * HOUR_MS, {0: 100, 1: 200})], NOW_MS - 2 * HOUR_MS)
    history.record("prod", [offsets(NOW_MS - 10_000, {0: 900, 1: 950})], NOW_MS - 10_000)

    answer = asyncio.run(check_answer(ctx, "back_to", "1h ago"))
    assert answer is not None
    assert "recorded at" in answer.shown
    run.take(run.walkthrough.step("back_to"), answer)
    spec = run.build_spec()
    assert isinstance(spec.strategy, FromFile)
    rows = load_offsets_file(Path(spec.strategy.path))
    assert {(r.topic, r.queue_id, r.offset) for r in rows} == {
        ("orders", 0, 100),
        ("orders", 1, 200),
    }


def test_nothing_recorded_that_far_back_is_explained(tmp_path: Path) -> None:
    ctx, _ = context(tmp_path)
    LagHistory(tmp_path / "ws").record("prod", [offsets(NOW_MS - 60_000, {0: 1})], NOW_MS - 60_000)
    with pytest.raises(AnswerError, match="no lag history of it goes back that far"):
        asyncio.run(check_answer(ctx, "back_to", "1h ago"))
    with pytest.raises(AnswerError, match="neither a snapshot id"):
        asyncio.run(check_answer(ctx, "back_to", "yesterday-ish"))
