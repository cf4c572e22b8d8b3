"""How the CLI shows a partial answer: rows marked, totals as lower bounds or null, each missing
piece once on stderr (the reads themselves are proven on the real sandbox:
tests/integration/test_partial_reads.py)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from console.cli.browse import _group_row, _missing_cell, _note_cell, _total_cell, lag_document
from console.cli.plan import _warn_partial
from console.cli.render import MISSING_LINES, report_missing
from console.domain.gaps import EXIT_OK, EXIT_PARTIAL, Gap, Part, Why
from console.domain.offsets import GroupOffsets, QueueOffsets
from console.rocketmq.errors import NotFoundError, RequestTimeout
from console.services.infra.workspace import Workspace
from console.services.read.snapshots import Snapshot, SnapshotStore, snapshot_table

DOWN = Gap(Part.BROKER, "broker-b", Why.TIMEOUT, "broker-b at b:1 did not answer request 208")


def _offsets(*gaps: Gap, answered: bool = True) -> GroupOffsets:
    queues = (
        QueueOffsets("orders", "broker-a", 0, None, 100, 40),
        QueueOffsets("orders", "broker-a", 1, 0, 100, None),
    )
    return GroupOffsets("billing", 0, queues if answered else (), gaps=gaps, answered=answered)


def test_a_partial_group_is_marked_and_its_lag_a_lower_bound() -> None:
    row = _group_row("billing", _offsets(DOWN))
    assert row["partial"] is True
    assert row["missing"] == [DOWN.to_dict()]
    assert _total_cell(row, "total_lag") == "≥60"
    assert _missing_cell(row["missing"]) == "PARTIAL: broker-b timed out"
    whole = _group_row("billing", _offsets())
    assert (whole["partial"], _total_cell(whole, "total_lag"), _missing_cell([])) == (False, 60, "")


def test_a_row_says_where_its_lag_is_where_it_was_read_and_what_is_deleted() -> None:
    queues = (
        QueueOffsets("orders", "broker-a", 0, 50, 100, 40),  # below min: 10 already deleted
        QueueOffsets("orders", "broker-b", 0, 0, 100, 90),
    )
    row = _group_row("billing", GroupOffsets("billing", 0, queues, from_slave=("broker-b",)))
    assert (row["below_min_queues"], row["from_slave"], row["total_lag"]) == (1, ["broker-b"], 70)
    assert row["partial"] is False  # read from a slave, but whole
    assert _note_cell(row) == "from slave, master down: broker-b"
    partial = _group_row("billing", GroupOffsets("billing", 0, queues, gaps=(DOWN,)))
    assert _total_cell(partial, "below_min_queues") == "≥1"

    broadcast = GroupOffsets("news", 0, (), message_model="BROADCASTING")
    row = _group_row("news", broadcast)
    assert (row["client_local"], row["total_lag"]) == (True, None)  # unknown, never 0
    assert "offsets on each consumer host" in _note_cell(row)


def test_a_group_nothing_was_read_of_has_no_lag_at_all() -> None:
    nothing = _group_row("billing", _offsets(DOWN, answered=False))
    assert (nothing["total_lag"], nothing["clients_online"]) == (None, None)
    assert _total_cell(nothing, "total_lag") == "?"
    failed = _group_row("billing", RequestTimeout("a:1", 208, 1.0))
    assert failed["partial"] is True
    assert failed["total_lag"] is None
    assert failed["missing"][0]["part"] == "group"
    gone = _group_row("billing", NotFoundError("consumer group 'billing' not found"))
    assert gone["missing"][0]["why"] == "not found"


def test_lag_json_marks_the_queues_it_lacks_pieces_of() -> None:
    min_gap = Gap(Part.MIN_OFFSETS, "orders/broker-a", Why.TIMEOUT, "broker-a at a:1 ...")
    doc = lag_document(_offsets(min_gap))
    assert doc["partial"] is True
    assert doc["missing"] == [min_gap.to_dict()]
    first, second = doc["queues"]
    assert (first["min_offset"], first["partial"], first["missing"]) == (
        None,
        True,
        [min_gap.to_dict()],
    )
    assert second["committed"] is None


def test_each_missing_piece_is_one_line_with_how_many_lacked_it() -> None:
    err = io.StringIO()
    other = Gap(Part.CLIENTS, "billing", Why.DOWN, "broker-a at a:1: refused")
    report_missing([DOWN, DOWN, DOWN, other], what="groups", err=err)
    assert err.getvalue().splitlines() == [
        f"rmq-console: broker broker-b timed out: {DOWN.detail} (in 3 groups)",
        f"rmq-console: clients billing down: {other.detail}",
    ]
    many = [Gap(Part.QUEUE, f"orders/broker-a/{i}", Why.TIMEOUT, "x") for i in range(30)]
    err = io.StringIO()
    report_missing(many, err=err)
    lines = err.getvalue().splitlines()
    assert len(lines) == MISSING_LINES + 1
    assert lines[-1] == "rmq-console: and 10 more missing pieces (--json lists them)"


def test_a_partial_snapshot_keeps_what_it_lacks_in_its_file(tmp_path: Path) -> None:
    store = SnapshotStore(Workspace(tmp_path))
    offsets = _offsets(DOWN)
    table = snapshot_table("prod", [offsets], {"broker-a": "a:1"})
    partial = store.save(Snapshot("prod", 1_790_000_000_000, table, (DOWN,)))
    whole = store.save(Snapshot("prod", 1_790_000_000_001, table))
    assert store.missing(partial) == (DOWN,)
    assert store.missing(whole) == ()
    # The unknown min is a null in the file, not a 0.
    assert store.load(partial).column("min_offset").to_pylist() == [None, 0]


def test_a_plan_from_a_partial_snapshot_warns(capsys: pytest.CaptureFixture[str]) -> None:
    assert _warn_partial("20261123T000000000Z", ()) == EXIT_OK
    assert capsys.readouterr().err == ""
    assert _warn_partial("20261123T000000000Z", (DOWN,)) == EXIT_PARTIAL
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("rmq-console: warning: snapshot 20261123T000000000Z is partial")
    assert lines[1] == f"rmq-console: broker broker-b timed out: {DOWN.detail}"
