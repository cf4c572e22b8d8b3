"""Every file the console reads fails cleanly: truncated, of the wrong JSON/YAML type, not UTF-8,
binary, empty, or a directory where a file was expected. Through the command that reads it
(`console.cli.main`, in this process): one line naming the file (and the line, where there is
one), exit 2 (1 for a listing that goes on with the rest: `history`), no traceback, nothing
written. Where no command reads a file without a cluster (a snapshot, a client's offsets.json),
the reader itself is held to the same: a BadFile (or the store's error value) naming the file.

Hypothesis makes the bad files: a valid file cut short, the same with bytes that are not UTF-8
or a NUL, random bytes, another JSON type, a file emptied, a directory in its place, and (for
the JSON lines logs) a line nested too deep to parse (every reader: test_deep_nesting.py). The
valid files are written as one-line JSON (JSON is YAML too) so that every cut is invalid.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.cli import main
from console.domain.journal import Journal, JournalError
from console.domain.plan import PlanHeader, SnapshotInfo, Totals
from console.domain.plan_hash import content_hash
from console.domain.spec import Earliest, ResetSpec, Scope
from console.errors import BadFile
from console.services.infra.files import read_parquet
from console.services.infra.journal_store import JournalStore
from console.services.infra.workspace import SnapshotRef, Workspace
from console.services.read.client_offset_files import read_store_file
from console.services.read.snapshots import ARROW_SCHEMA, SnapshotStore
from tests.support.journals import journal

EXAMPLES = settings(
    max_examples=25,
    deadline=None,  # a machine shared with other test streams
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
T = 1_795_338_300_000
APPLY_ID = "20261123T000000000Z-apply-billing-abc123"

KINDS = ("truncated", "wrong type", "not UTF-8", "binary", "empty", "directory")
#: Top-level values of another type than the object a reader expects.
OTHER_TYPES = st.one_of(
    st.lists(st.integers(), max_size=3),
    st.integers(),
    st.text(alphabet="abcxyz ", min_size=1, max_size=8),
    st.booleans(),
)


@st.composite
def bad_file(
    draw: st.DrawFn, valid: bytes, kinds: tuple[str, ...] = KINDS
) -> tuple[str, bytes | None]:
    """(kind, content); None for a directory in the file's place."""
    kind = draw(st.sampled_from(kinds))
    if kind == "directory":
        return kind, None
    if kind == "empty":
        return kind, draw(st.sampled_from([b"", b"\n", b"  \n"]))
    if kind == "truncated":
        # Cut before the closing brace of a JSON document, anywhere short of a binary file's end.
        end = valid.rindex(b"}") if valid.rstrip().endswith(b"}") else len(valid) - 1
        return kind, valid[: draw(st.integers(1, end))]
    if kind == "not UTF-8":
        at = draw(st.integers(0, len(valid)))
        junk = draw(st.sampled_from([b"\xff", b"\xfe\xfe", b"\xc3\x28", b"\xe2\x82", b"\x80"]))
        return kind, valid[:at] + junk + valid[at:]
    if kind == "too deep":
        # Past what the parsers' recursion can follow (YAML's is slow to get there: the JSON
        # lines readers are given it here, every reader in tests/unit/test_deep_nesting.py).
        return kind, draw(st.sampled_from([b"[", b'{"a":'])) * draw(st.integers(3_000, 100_000))
    if kind == "binary":
        data = draw(st.binary(max_size=120))
        at = draw(st.integers(0, len(data)))
        return kind, data[:at] + b"\x00" + data[at:]
    return kind, json.dumps(draw(OTHER_TYPES)).encode()


def put(path: Path, content: bytes | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if content is None:
        path.mkdir()
        (path / "inside").write_text("a file in the directory")
    else:
        path.write_bytes(content)


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


@contextlib.contextmanager
def workplace() -> Iterator[Path]:
    """A fresh directory per example: config, workspace and cache of their own."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config = root / "config.yaml"
        config.write_text(
            json.dumps(
                {
                    "workspace": str(root / "ws"),
                    "clusters": [{"name": "c", "namesrv": ["127.0.0.1:1"]}],
                }
            )
        )
        env = {"RMQ_CONSOLE_CONFIG": str(config), "RMQ_CONSOLE_CACHE": str(root / "cache")}
        with mock.patch.dict(os.environ, env):
            os.environ.pop("RMQ_CONSOLE_DEBUG", None)
            yield root


def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = main(argv)
    return code, capsys.readouterr().err


def assert_named(code: int, err: str, path: Path | str, *, exit_code: int = 2) -> None:
    """The command failed as a bad file must: its exit code, no traceback, no bug report, and
    one line naming the file."""
    assert code == exit_code, err
    assert "Traceback" not in err
    assert "rmq-console: bug" not in err
    naming = [line for line in err.splitlines() if str(path) in line]
    assert len(naming) == 1, err


def assert_nothing_written(root: Path, before: set[Path]) -> None:
    assert files_under(root) == before


# ---- config.yaml: every command, the console's start-up included -------------------------------

CONFIG = json.dumps({"clusters": [{"name": "c", "namesrv": ["127.0.0.1:1"]}]}).encode()


@EXAMPLES
@given(bad=bad_file(CONFIG), argv=st.sampled_from([["history"], ["lag", "-g", "g"], []]))
def test_a_bad_config_file(
    capsys: pytest.CaptureFixture[str], bad: tuple[str, bytes | None], argv: list[str]
) -> None:
    kind, content = bad
    if kind == "empty" or content in (b"true", b"false"):
        return  # an empty config is the defaults (and YAML reads no further type)
    with workplace() as root:
        config = Path(os.environ["RMQ_CONSOLE_CONFIG"])
        config.unlink()
        put(config, content)
        before = files_under(root)
        code, err = run(capsys, argv)
        assert_named(code, err, config)
        assert_nothing_written(root, before)


def test_a_credentials_file_that_is_not_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"\xff\xfe not text")
    config = tmp_path / "config.yaml"
    refs = {"access_key": "env:AK", "secret_key": f"file:{secret}"}
    cluster = {"name": "c", "namesrv": ["127.0.0.1:1"], "credentials": refs}
    config.write_text(json.dumps({"clusters": [cluster], "workspace": str(tmp_path / "ws")}))
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config))
    monkeypatch.setenv("AK", "ak")
    code, err = run(capsys, ["lag", "-g", "g"])
    assert_named(code, err, secret)
    assert f"credentials: {secret}:1: not UTF-8" in err


# ---- the spec and its offsets file: plan --spec ------------------------------------------------

SPEC = json.dumps({"scope": {"cluster": "c", "groups": ["g"]}, "strategy": "earliest"}).encode()


@EXAMPLES
@given(bad=bad_file(SPEC), suffix=st.sampled_from([".yaml", ".json"]))
def test_a_bad_spec(
    capsys: pytest.CaptureFixture[str], bad: tuple[str, bytes | None], suffix: str
) -> None:
    with workplace() as root:
        spec = root / f"reset{suffix}"
        put(spec, bad[1])
        before = files_under(root)
        code, err = run(capsys, ["plan", "--spec", str(spec)])
        assert_named(code, err, spec)
        assert_nothing_written(root, before)


CSV = b"topic,broker,queue_id,offset\norders,broker-a,0,5\n"


@EXAMPLES
@given(bad=bad_file(CSV + b"}", kinds=("not UTF-8", "binary", "empty", "directory")))
def test_a_bad_offsets_file(capsys: pytest.CaptureFixture[str], bad: tuple[str, bytes | None]):
    with workplace() as root:
        offsets = root / "offsets.csv"
        put(offsets, bad[1])
        spec = root / "reset.yaml"
        doc = {"scope": {"cluster": "c", "groups": ["g"]}, "strategy": {"from-file": str(offsets)}}
        spec.write_text(json.dumps(doc))
        before = files_under(root)
        code, err = run(capsys, ["plan", "--spec", str(spec)])
        assert_named(code, err, offsets)
        assert_nothing_written(root, before)


def test_a_spec_field_error_names_the_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"clusters": [{"name": "c", "namesrv": ["127.0.0.1:1"]}]}))
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config))
    spec = tmp_path / "reset.yaml"
    spec.write_text("scope:\n  cluster: c\n  groups: [g]\nstrategy:\n  to-timestamp: soon\n")
    code, err = run(capsys, ["plan", "--spec", str(spec)])
    assert code == 2
    assert err.startswith(f"rmq-console: error: {spec}:5: strategy.to-timestamp: 'soon' is not")


# ---- a walkthrough of the team's own: walkthrough NAME ----------------------------------------

WALKTHROUGH = json.dumps(
    {
        "name": "ours",
        "title": "Ours",
        "question": "Back to the start?",
        "steps": [],
        "spec": {"strategy": "earliest"},
    }
).encode()


@EXAMPLES
@given(bad=bad_file(WALKTHROUGH))
def test_a_bad_walkthrough(capsys: pytest.CaptureFixture[str], bad: tuple[str, bytes | None]):
    with workplace() as root:
        path = root / "walkthroughs" / "ours.yaml"
        put(path, bad[1])
        before = files_under(root)
        code, err = run(capsys, ["walkthrough", "ours", "-g", "g"])
        assert_named(code, err, path)
        assert f"walkthrough not loaded: {path}" in err
        assert_nothing_written(root, before)
        code, err = run(capsys, ["walkthrough", "--list"])
        assert_named(code, err, path, exit_code=1)  # the list is not whole


# ---- a plan directory: apply PLAN --------------------------------------------------------------


def header(rows: tuple[Any, ...] = ()) -> PlanHeader:
    return PlanHeader(
        plan_id="20261122T090500000Z-g-earliest-abcdef",
        spec=ResetSpec(Scope("c", ("g",)), Earliest()),
        snapshot=SnapshotInfo("c", "20261122T090400000Z", T),
        created_at_ms=T,
        content_hash=content_hash("c", rows),
        rows=len(rows),
        totals=(Totals("g", None, 0, 0, 0, 0, 0, 0, 0),),
    )


PLAN_JSON = json.dumps(json.loads(header().to_json())).encode()


def apply_argv(plan: Path) -> list[str]:
    return ["apply", str(plan), "--cluster", "c", "--confirm", "g", "--max-age", "1e9"]


@EXAMPLES
@given(bad=bad_file(PLAN_JSON))
def test_a_bad_plan_json(capsys: pytest.CaptureFixture[str], bad: tuple[str, bytes | None]):
    with workplace() as root:
        plan = root / "ws" / "plans" / "p"
        put(plan / "plan.json", bad[1])
        before = files_under(root)
        code, err = run(capsys, apply_argv(plan))
        assert_named(code, err, plan / "plan.json")
        assert "nothing was written" in err
        assert_nothing_written(root, before)


ROWS = b"PAR1 not really}"


@EXAMPLES
@given(bad=bad_file(ROWS, kinds=("truncated", "not UTF-8", "binary", "empty", "wrong type")))
def test_bad_plan_rows(capsys: pytest.CaptureFixture[str], bad: tuple[str, bytes | None]) -> None:
    with workplace() as root:
        plan = root / "ws" / "plans" / "p"
        put(plan / "plan.json", PLAN_JSON)
        # rows.parquet is a Spark output directory: its part file is what is bad.
        put(plan / "rows.parquet" / "part-00000.parquet", bad[1])
        before = files_under(root)
        code, err = run(capsys, apply_argv(plan))
        assert_named(code, err, plan / "rows.parquet")
        assert_nothing_written(root, before)


def test_rows_of_another_shape_or_changed_after_planning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with workplace() as root:
        plan = root / "ws" / "plans" / "p"
        put(plan / "plan.json", PLAN_JSON)
        (plan / "rows.parquet").mkdir()
        pq.write_table(pa.table({"x": [1]}), plan / "rows.parquet" / "part-0.parquet")
        code, err = run(capsys, apply_argv(plan))
        assert_named(code, err, plan / "rows.parquet")
        assert "the plan rows lack" in err


def test_a_plan_uri_of_an_unknown_scheme(capsys: pytest.CaptureFixture[str]) -> None:
    with workplace() as root:
        before = files_under(root)
        code, err = run(capsys, ["apply", "nosuch://host/plans/p", "--cluster", "c"])
        assert_named(code, err, "nosuch://host/plans/p/plan.json")
        assert "cannot be opened" in err
        assert_nothing_written(root, before)


# ---- a journal: resume / undo APPLY_ID, and history --------------------------------------------

JOURNAL = journal(APPLY_ID).dumps().encode()


@EXAMPLES
@given(bad=bad_file(JOURNAL), command=st.sampled_from(["resume", "undo"]))
def test_a_bad_journal(
    capsys: pytest.CaptureFixture[str], bad: tuple[str, bytes | None], command: str
) -> None:
    with workplace() as root:
        path = JournalStore(root / "ws").path(APPLY_ID)
        put(path, bad[1])
        before = files_under(root)
        code, err = run(capsys, [command, APPLY_ID, "--cluster", "c"])
        assert_named(code, err, path)
        assert_nothing_written(root, before)
        # The listing goes on: the journal is named unreadable, the exit code says so.
        code, err = run(capsys, ["history", "--cluster", "c", "--json"])
        assert code == 1
        assert "Traceback" not in err


def test_an_unreadable_journal_does_not_stop_an_apply_of_another_plan(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with workplace() as root:
        path = JournalStore(root / "ws").path(APPLY_ID)
        put(path, b'{"format": 1, "apply_id": "\xff')
        plan = root / "ws" / "plans" / "p"
        put(plan / "plan.json", b"[]")
        code, err = run(capsys, apply_argv(plan))
        assert code == 2
        assert f"journal {path} cannot be read, so whether it finished is unknown" in err
        assert f"{plan / 'plan.json'}: not a plan header" in err  # the apply went on to its plan


# ---- the audit log: history --------------------------------------------------------------------

AUDIT_LINE = json.dumps({"at": "2026-11-23T02:13:20.000+00:00", "apply_id": APPLY_ID}).encode()


@EXAMPLES
@given(
    bad=bad_file(
        AUDIT_LINE,
        kinds=("truncated", "wrong type", "not UTF-8", "binary", "directory", "too deep"),
    )
)
def test_a_bad_audit_log(capsys: pytest.CaptureFixture[str], bad: tuple[str, bytes | None]):
    kind, content = bad
    with workplace() as root:
        log = root / "ws" / "audit.log"
        body = None if content is None else AUDIT_LINE + b"\n" + content.replace(b"\n", b" ")
        put(log, body)
        before = files_under(root)
        code, err = run(capsys, ["history", "--cluster", "c", "--json"])
        assert_named(code, err, log, exit_code=1)
        if content is not None:
            assert f"{log}:2: not" in err  # the bad line; the first is read
        assert_nothing_written(root, before)


# ---- the lag history: history -g G --lag -------------------------------------------------------


def test_a_lag_history_that_is_a_directory(capsys: pytest.CaptureFixture[str]) -> None:
    from console.services.read.lag_history import LagHistory

    with workplace() as root:
        path = LagHistory(root / "ws").path("c", "g")
        put(path, None)
        before = files_under(root)
        code, err = run(capsys, ["history", "-g", "g", "--lag", "--cluster", "c"])
        assert_named(code, err, path)
        assert_nothing_written(root, before)


@EXAMPLES
@given(
    bad=bad_file(
        b'{"v":1,"t":1}', kinds=("not UTF-8", "binary", "wrong type", "truncated", "too deep")
    )
)
def test_bad_lag_history_lines_are_counted_and_the_file_named(
    capsys: pytest.CaptureFixture[str], bad: tuple[str, bytes | None]
) -> None:
    from console.services.read.lag_history import LagHistory

    with workplace() as root:
        path = LagHistory(root / "ws").path("c", "g")
        put(path, (bad[1] or b"").replace(b"\n", b" ") + b"\n")
        code, err = run(capsys, ["history", "-g", "g", "--lag", "--cluster", "c"])
        assert code == 2, err  # nothing could be read
        assert "Traceback" not in err
        assert (
            f"could not be read (cut short by a console killed mid-write, or edited) and were "
            f"skipped: {path}" in err
        )


# ---- readers no command reaches without a cluster ----------------------------------------------

SNAPSHOT_ID = "20261122T090400000Z"


def snapshot_bytes() -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.parquet"
        pq.write_table(ARROW_SCHEMA.empty_table(), path)
        return path.read_bytes()


@EXAMPLES
@given(
    # Parquet is binary: "not UTF-8" means nothing for it, and junk inside an empty table's
    # file can leave it whole.
    bad=bad_file(
        snapshot_bytes(), kinds=("truncated", "wrong type", "binary", "empty", "directory")
    ),
    read=st.sampled_from(["load", "missing", "groups"]),
)
def test_a_bad_snapshot(bad: tuple[str, bytes | None], read: str) -> None:
    with workplace() as root:
        store = SnapshotStore(Workspace(root / "ws"))
        uri = store.workspace.snapshot_uri("c", SNAPSHOT_ID)
        path = Path(uri.removeprefix("file://"))
        put(path, bad[1])
        ref = SnapshotRef("c", SNAPSHOT_ID, T, uri)
        readers: dict[str, Callable[[], object]] = {
            "load": lambda: store.load(ref),
            "missing": lambda: store.missing(ref),
            "groups": lambda: store.groups_in(ref),
        }
        with pytest.raises(BadFile) as info:
            readers[read]()
        assert str(info.value).startswith(f"{uri}: ")
        assert "\n" not in str(info.value)


def test_a_parquet_file_that_is_not_a_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "ws" / "snapshots" / "c" / f"{SNAPSHOT_ID}.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.table({"x": [1]}), path)
    store = SnapshotStore(Workspace(tmp_path / "ws"))
    with pytest.raises(BadFile, match=r"\.parquet: not a snapshot: no column cluster, broker"):
        store.load(store.find("c", SNAPSHOT_ID))


OFFSETS_JSON = b'{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"orders"}:44}}'


@EXAMPLES
@given(bad=bad_file(OFFSETS_JSON))
def test_a_bad_client_offsets_file(bad: tuple[str, bytes | None]) -> None:
    with workplace() as root:
        path = root / "offsets" / "client-1" / "g" / "offsets.json"
        put(path, bad[1])
        found = read_store_file("client-1", path)
        assert found.offsets == {}
        assert found.error is not None
        assert str(path) in found.error


# ---- the parsers alone: any shape of a JSON object -------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


@EXAMPLES
@given(data=st.data())
def test_a_journal_with_any_field_changed_loads_or_names_the_file(data: st.DataObject) -> None:
    doc = json.loads(JOURNAL)
    key = data.draw(st.sampled_from(sorted(doc)))
    doc[key] = data.draw(JSON_VALUES)
    if data.draw(st.booleans()):
        queues = doc.get("queues")
        queue = queues[0] if isinstance(queues, list) and queues else {}
        if isinstance(queue, dict) and queue:
            queue[data.draw(st.sampled_from(sorted(queue)))] = data.draw(JSON_VALUES)
    try:
        Journal.loads(json.dumps(doc), "journal/x.json")
    except JournalError as exc:
        error = str(exc)
    else:
        return
    assert error.startswith("journal/x.json: ")


@EXAMPLES
@given(data=st.data())
def test_a_plan_header_with_any_field_changed_loads_or_names_the_file(data: st.DataObject) -> None:
    doc = json.loads(PLAN_JSON)
    key = data.draw(st.sampled_from(sorted(doc)))
    doc[key] = data.draw(JSON_VALUES)
    try:
        PlanHeader.from_json(json.dumps(doc), "plans/p/plan.json")
    except BadFile as exc:
        error = str(exc)
    else:
        return
    assert error.startswith("plans/p/plan.json: ")


def test_read_parquet_names_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BadFile, match="absent.parquet: "):
        read_parquet(str(tmp_path / "absent.parquet"))
