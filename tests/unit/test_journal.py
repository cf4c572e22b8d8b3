"""Journals and the audit log on disk: a journal round-trips, is replaced whole, and every way a
file can be wrong (unknown id, truncated, corrupt, another format) is a clear error naming the
file; audit lines are appended one per queue and a torn line is reported, not skipped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from console.cli import main
from console.domain.journal import ApplyStatus, Journal, JournalError, JournalQueue, QueueState
from console.services.infra.journal_store import (
    AuditEntry,
    AuditLog,
    JournalBusy,
    JournalStore,
    Unreadable,
    new_apply_id,
    operator,
    unfinished_lines,
)
from tests.support.journals import T0, journal


def test_round_trip_and_progress(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    j = journal()
    store.write(j)
    assert store.load(j.apply_id) == j
    first = j.queues[0]
    moved = j.with_queues([replace_state(first, QueueState.VERIFIED, stored=first.target)])
    store.write(moved)
    loaded = store.load(j.apply_id)
    assert loaded.count(QueueState.VERIFIED) == 1
    assert [q.key for q in loaded.unfinished] == [q.key for q in j.queues[1:]]
    assert loaded.queues[4].before is None  # nothing committed stays unknown, not 0
    assert store.unfinished() == [loaded]
    finished = Journal(**{**_fields(loaded), "status": ApplyStatus.FINISHED})
    store.write(finished)
    assert store.unfinished() == []
    assert [p.name for p in store.dir.iterdir()] == [f"{j.apply_id}.json"]  # no temp files left


def replace_state(q: JournalQueue, state: QueueState, stored: int | None) -> JournalQueue:
    return JournalQueue(**{**_fields(q), "state": state, "stored": stored})


def _fields(value: object) -> dict[str, object]:
    return {name: getattr(value, name) for name in value.__slots__}  # type: ignore[attr-defined]


def test_a_queue_not_in_the_journal_is_refused() -> None:
    stranger = JournalQueue("billing", "payments", "broker-a", "a:1", 0, 1, 2)
    with pytest.raises(ValueError, match="not in journal"):
        journal().with_queues([stranger])


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"format": 1, "apply_id": "x", "queues": [', "not a whole journal"),
        ("[]", "a JSON object is expected"),
        ('{"format": 9}', "journal format 9, this console reads 1"),
        ("CORRUPT", "not a whole journal"),
    ],
)
def test_bad_files_are_named(tmp_path: Path, text: str, says: str) -> None:
    store = JournalStore(tmp_path)
    j = journal()
    store.dir.mkdir()
    store.path(j.apply_id).write_text(text)
    with pytest.raises(JournalError, match=says) as err:
        store.load(j.apply_id)
    assert str(store.path(j.apply_id)) in str(err.value)
    listed = store.all()
    assert isinstance(listed[0], Unreadable)
    assert says in listed[0].error


def test_a_field_of_the_wrong_kind_is_named(tmp_path: Path) -> None:
    raw = journal().to_json()
    raw["queues"][2]["target"] = "ninety"
    raw["status"] = "paused"
    with pytest.raises(JournalError, match="'target' must be an integer"):
        Journal.loads(json.dumps(raw), "j.json")
    raw["queues"][2]["target"] = 92
    with pytest.raises(JournalError, match="'status' must be one of 'running'"):
        Journal.loads(json.dumps(raw), "j.json")


def test_unknown_and_unsafe_ids(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    with pytest.raises(JournalError, match="no apply 'nope'"):
        store.load("nope")
    with pytest.raises(JournalError, match="is not an apply id"):
        store.load("../plans/x")


def test_a_killed_writer_leaves_the_previous_version(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    j = journal()
    store.write(j)
    # A writer killed between writing the temporary file and renaming it: the journal is whole.
    code = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "os.replace = lambda *a: os.kill(os.getpid(), 9)\n"
        "from console.services.infra.journal_store import JournalStore\n"
        "from tests.support.journals import journal\n"
        f"JournalStore(Path({str(tmp_path)!r})).write(journal())\n"
    )
    killed = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parents[2])
    assert killed.returncode == -9
    assert store.load(j.apply_id) == j


def test_audit_lines_append(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    j = journal()
    entries = [
        AuditEntry(T0 + i, j.who, j.cluster, j.apply_id, j.plan_hash, "offline update", q)
        for i, q in enumerate(j.queues[:3])
    ]
    assert log.append(entries[:2]) == 2
    assert log.append(entries[2:]) == 1
    assert log.append([]) == 0
    lines = list(log.read())
    assert [(x["queue"], x["before"], x["after"]) for x in lines] == [
        (0, 100, 90),
        (1, 101, 91),
        (2, 102, 92),
    ]
    assert lines[0]["at"] == "2026-11-23T02:13:20.000+00:00"
    assert set(lines[0]) >= {"who", "cluster", "group", "topic", "broker", "path", "result"}
    with log.path.open("a") as f:
        f.write('{"at": "torn')
    with pytest.raises(JournalError, match=r"audit.log:4: not a whole audit line"):
        list(log.read())


def test_ids_sort_by_time_and_name_the_group() -> None:
    a = new_apply_id(T0, "billing service/x", "apply", "1")
    b = new_apply_id(T0 + 1, "billing service/x", "undo", "1")
    assert a < b
    assert "-apply-billing-service-x-" in a
    assert JournalStore(Path("/tmp")).path(a).name == f"{a}.json"
    assert "@" in operator()
    assert os.sep not in operator()


def test_an_apply_killed_mid_write_is_offered_for_resume(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    j = journal()
    store.write(j)  # status "running", as an apply under way leaves it
    # A console writing for the apply holds its lock: the journal is not offered to anyone else.
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from console.services.infra.journal_store import JournalStore\n"
        f"with JournalStore(Path({str(tmp_path)!r})).hold({j.apply_id!r}):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(60)\n"
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=Path(__file__).parents[2],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline() == "held\n"
        assert store.running(j.apply_id)
        assert store.unfinished() == []
        with pytest.raises(JournalBusy, match="another console"):
            with store.hold(j.apply_id):
                pass
    finally:
        writer.kill()  # -9: the lock goes with the process
        writer.wait()
    assert not store.running(j.apply_id)
    assert store.unfinished() == [j]
    (line,) = unfinished_lines(tmp_path)
    assert f"rmq-console resume {j.apply_id}" in line
    assert f"rmq-console undo {j.apply_id}" in line
    assert "5 queue(s) not verified" in line
    assert unfinished_lines(tmp_path, "prod") == []


def test_an_apply_left_part_way_on_a_read_only_cluster_is_offered_no_resume_or_undo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`read_only: true` refuses every write, a resume's and an undo's too: an apply left
    part-way there is named with that, never with the commands the session would refuse."""
    ws = tmp_path / "ws"
    config = tmp_path / "config.yaml"
    config.write_text(
        f"workspace: {ws}\nclusters:\n  - name: sandbox\n    namesrv: [127.0.0.1:1]\n"
        "    read_only: true\n"
    )
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config))
    j = Journal(**{**_fields(journal()), "status": ApplyStatus.STOPPED})
    JournalStore(ws).write(j)
    said = (
        f"apply {j.apply_id} on sandbox stopped part-way (5 queue(s) not verified); cluster "
        "'sandbox' is read-only (read_only: true in the config): no resume or undo from this "
        "console"
    )
    assert unfinished_lines(ws, read_only=["sandbox"]) == [said]
    assert unfinished_lines(ws, read_only=["prod"]) == [
        f"apply {j.apply_id} on sandbox stopped part-way (5 queue(s) not verified): "
        f"rmq-console resume {j.apply_id}, or rmq-console undo {j.apply_id}"
    ]

    capsys.readouterr()
    code = main(["apply", str(ws / "plans" / "p"), "--cluster", "sandbox", "--confirm", "billing"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"rmq-console: {said}\n" in err
    assert "rmq-console resume" not in err
    assert "rmq-console undo" not in err
    assert "cluster 'sandbox' is read-only (read_only: true in the config)" in err


def test_a_torn_audit_line_stays_alone_and_history_lists_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A crash mid-append leaves a partial last line: the next append starts on a fresh line
    (so its own lines stay whole), and `history` names the torn line as a warning, lists the
    rest, and exits 1 (something could not be read)."""
    ws = tmp_path / "ws"
    config = tmp_path / "config.yaml"
    config.write_text(
        f"workspace: {ws}\nclusters:\n  - name: sandbox\n    namesrv: [127.0.0.1:1]\n"
    )
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config))
    log = AuditLog(ws)
    j = journal()
    JournalStore(ws).write(j)
    entries = [
        AuditEntry(T0 + i, j.who, j.cluster, j.apply_id, j.plan_hash, "offline update", q)
        for i, q in enumerate(j.queues[:3])
    ]
    log.append(entries[:2])
    with log.path.open("ab") as f:
        f.write(b'{"at":"2026-11-23T02:13:20.002+00:00","who":"ops@h')  # killed mid-append
    log.append(entries[2:])
    lines = log.path.read_bytes().split(b"\n")
    assert lines[2] == b'{"at":"2026-11-23T02:13:20.002+00:00","who":"ops@h'
    assert json.loads(lines[3])["queue"] == 2  # whole, on a line of its own
    assert lines[4:] == [b""]

    capsys.readouterr()
    code = main(["history", "--json"])
    out, err = capsys.readouterr()
    assert code == 1, err
    doc = json.loads(out)
    assert doc["audit_lines"] == 3
    assert [a["apply_id"] for a in doc["applies"]] == [j.apply_id]
    torn = f"{log.path}:3: not a whole audit line"
    assert doc["partial"] is True
    assert [w[: len(torn)] for w in doc["warnings"]] == [torn]
    assert err.count("\n") == 1
    assert f"rmq-console: warning: {torn}" in err
    assert "Traceback" not in err

    code = main(["history"])
    out, err = capsys.readouterr()
    assert code == 1
    assert j.apply_id in out
    assert torn in err


def test_the_history_screen_counts_whole_audit_lines_and_names_a_torn_one(tmp_path: Path) -> None:
    from console.services.apply.history import read_history
    from console.services.infra.workspace import Workspace

    log = AuditLog(tmp_path)
    j = journal()
    entry = AuditEntry(T0, j.who, j.cluster, j.apply_id, j.plan_hash, "offline update", j.queues[0])
    log.append([entry])
    with log.path.open("ab") as f:
        f.write(b'{"at": "torn')
    log.append([entry])
    history = read_history(Workspace(tmp_path))
    assert history.audit_lines == 2
    assert history.problems == (
        f"{log.path}:2: not a whole audit line (cut short by a crash mid-append, or edited): "
        "skipped",
    )
