"""A file nested too deep to read (a line of `[[[[...` 100,000 deep) is a bad file like any
other, for every reader of a file the console reads: the audit log, a journal, plan.json, a
spec, the lag history, a snapshot's metadata, the config, a walkthrough, a theme, the records of
the Spark server and host, the sandbox's files. The parsers recurse, and their RecursionError
(no ValueError) crashed each command that met one, exit 70."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from console import json_text
from console.cli import main
from console.domain.journal import JournalError
from console.domain.plan import PlanHeader
from console.domain.spec import SpecError
from console.errors import BadFile
from console.lined_yaml import load_lined
from console.sandbox.pidfile import PidFile
from console.sandbox.rundir import INFO_FILE, read_info
from console.services.infra.connect_server import ServerHome
from console.services.infra.journal_store import AuditLog, JournalStore
from console.services.infra.warm_host import HostFiles
from console.services.infra.workspace import SnapshotRef, Workspace
from console.services.plan.spec_files import load_spec
from console.services.read.lag_history import LagHistory
from console.services.read.snapshots import (
    ARROW_SCHEMA,
    FROM_SLAVE_KEY,
    MISSING_KEY,
    SnapshotStore,
)
from console.ui.themes import ThemeError, load_themes, parse_theme
from tests.support.journals import journal

DEEP = "[" * 100_000
DEEP_OBJECT = '{"a":' * 100_000
TOO_DEEP = "nested more than 100 levels deep: too deep to read"
AUDIT_LINE = json.dumps({"at": "2026-11-23T02:13:20.000+00:00", "apply_id": "x"})


@pytest.fixture
def workplace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "config.yaml"
    config.write_text(
        f"workspace: {tmp_path / 'ws'}\nclusters:\n  - name: c\n    namesrv: [127.0.0.1:1]\n"
    )
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config))
    monkeypatch.setenv("RMQ_CONSOLE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("RMQ_CONSOLE_DEBUG", raising=False)
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def no_crash(err: str) -> None:
    assert "Traceback" not in err
    assert "rmq-console: bug" not in err
    assert "RecursionError" not in err


# ---- the shared reader ----------------------------------------------------------------------


@pytest.mark.parametrize("text", [DEEP, DEEP_OBJECT, DEEP.encode()], ids=["array", "object", "b"])
def test_json_too_deep_is_a_decode_error_at_its_line(text: str | bytes) -> None:
    lead = "\n\n" if isinstance(text, str) else b"\n\n"
    with pytest.raises(json.JSONDecodeError) as info:
        json_text.loads(lead + text)  # type: ignore[operator]
    assert isinstance(info.value, json_text.TooDeep)
    assert isinstance(info.value, ValueError)
    assert info.value.msg == TOO_DEEP
    assert info.value.lineno == 3


def test_brackets_inside_strings_do_not_count() -> None:
    doc = '{"a": "[[[[\\" {{{{", "b":\n' + DEEP
    with pytest.raises(json_text.TooDeep) as info:
        json_text.loads(doc)
    assert (info.value.lineno, info.value.colno) == (2, 100)  # the 101st level: 100th bracket


def test_json_that_is_not_too_deep_reads_as_ever() -> None:
    assert json_text.loads('{"a": [[1]], "b": "[["}') == {"a": [[1]], "b": "[["}
    with pytest.raises(json.JSONDecodeError) as info:
        json_text.loads('{"a": ')
    assert not isinstance(info.value, json_text.TooDeep)


def test_yaml_too_deep_is_a_bad_file_at_its_line() -> None:
    with pytest.raises(BadFile) as info:
        load_lined("a: 1\nb: " + DEEP, "c.yaml")
    assert str(info.value) == f"c.yaml:2: {TOO_DEEP}"


# ---- the audit log: history ----------------------------------------------------------------


def test_an_audit_line_too_deep_is_a_bad_line_and_the_rest_is_read(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    log.path.write_text(f"{AUDIT_LINE}\n{DEEP}\n{AUDIT_LINE}\n")
    read = log.scan()
    assert len(read.lines) == 2
    assert read.problems == (f"{log.path}:2: not an audit line ({TOO_DEEP}): skipped",)


def test_history_names_an_audit_line_too_deep_and_exits_1(
    workplace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = workplace / "ws"
    j = journal()
    JournalStore(ws).write(j)
    log = AuditLog(ws)
    log.path.write_text(f"{AUDIT_LINE}\n{DEEP}\n")
    code, out, err = run(capsys, "history")
    assert code == 1, err
    no_crash(err)
    assert j.apply_id in out  # the listing goes on
    assert err == f"rmq-console: warning: {log.path}:2: not an audit line ({TOO_DEEP}): skipped\n"
    code, out, err = run(capsys, "history", "--json")
    assert code == 1
    assert json.loads(out)["warnings"] == [f"{log.path}:2: not an audit line ({TOO_DEEP}): skipped"]


# ---- a journal, plan.json, a spec ---------------------------------------------------------


def test_a_journal_too_deep_is_unreadable_and_named(
    workplace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = JournalStore(workplace / "ws")
    path = store.path(journal().apply_id)
    path.parent.mkdir(parents=True)
    path.write_text(DEEP)
    with pytest.raises(JournalError, match=f"{path}: not a journal \\({TOO_DEEP}, line 1\\)"):
        store.load(journal().apply_id)
    code, out, err = run(capsys, "history")
    assert code == 1, err
    no_crash(err)
    assert "unreadable" in out
    code, _, err = run(capsys, "undo", journal().apply_id, "--cluster", "c")
    assert code == 2
    no_crash(err)
    assert f"{path}: not a journal ({TOO_DEEP}, line 1)" in err


def test_a_plan_header_too_deep_names_the_file_and_line() -> None:
    with pytest.raises(BadFile) as info:
        PlanHeader.from_json("\n" + DEEP, "plans/p/plan.json")
    assert str(info.value) == f"plans/p/plan.json:2: not a plan header ({TOO_DEEP})"


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_a_spec_too_deep_names_the_file_and_line(
    workplace: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    spec = workplace / f"reset{suffix}"
    spec.write_text('{"scope":\n' + DEEP if suffix == ".json" else "scope:\n  groups: " + DEEP)
    with pytest.raises(SpecError) as info:
        load_spec(spec)
    assert f"{spec}:2" in str(info.value)
    assert "too deep to read" in str(info.value)
    code, _, err = run(capsys, "plan", "--spec", str(spec))
    assert code == 2
    no_crash(err)
    assert err.startswith(f"rmq-console: error: {spec}:2: ")


# ---- the lag history, a snapshot's metadata ------------------------------------------------


def test_a_lag_history_line_too_deep_is_skipped_and_counted(tmp_path: Path) -> None:
    history = LagHistory(tmp_path)
    path = history.path("c", "g")
    path.parent.mkdir(parents=True)
    point = '{"v":1,"t":1700000000000,"lag":5,"on":1}'
    path.write_text(f"{DEEP}\n{point}\n")
    series = history.series("c", "g")
    assert ([p.total_lag for p in series.points], series.skipped) == ([5], 1)
    # Its first line is read to judge its age when a point is appended: no crash there either.
    assert not history._too_old(path, 1_800_000_000_000)


@pytest.mark.parametrize("key", [MISSING_KEY, FROM_SLAVE_KEY])
def test_a_snapshot_whose_metadata_is_too_deep_is_a_bad_file(tmp_path: Path, key: bytes) -> None:
    store = SnapshotStore(Workspace(tmp_path / "ws"))
    uri = store.workspace.snapshot_uri("c", "20261122T090400000Z")
    path = Path(uri.removeprefix("file://"))
    path.parent.mkdir(parents=True)
    table = ARROW_SCHEMA.empty_table().replace_schema_metadata({key: DEEP.encode()})
    pq.write_table(table, path)
    ref = SnapshotRef("c", "20261122T090400000Z", 0, uri)
    read = store.missing if key == MISSING_KEY else store.from_slave
    with pytest.raises(BadFile) as info:
        read(ref)
    assert str(info.value).startswith(f"{uri}: its record of ")


# ---- the config, a walkthrough, a theme ------------------------------------------------------


def test_a_config_too_deep_names_the_file_and_line(
    workplace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = workplace / "config.yaml"
    config.write_text(f"workspace: {workplace / 'ws'}\nclusters: {DEEP}\n")
    code, _, err = run(capsys, "history")
    assert code == 2
    no_crash(err)
    assert err == f"rmq-console: error: {config}:2: {TOO_DEEP}\n"


def test_a_walkthrough_too_deep_is_named(
    workplace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = workplace / "walkthroughs" / "ours.yaml"
    path.parent.mkdir()
    path.write_text(f"name: ours\nsteps: {DEEP}\n")
    code, _, err = run(capsys, "walkthrough", "--list")
    assert code == 1
    no_crash(err)
    assert f"walkthrough not loaded: {path}:2: {TOO_DEEP}" in err


def test_a_theme_too_deep_is_named_and_skipped(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(f"name: deep\nvariables: {DEEP}\n")
    with pytest.raises(ThemeError, match=f"{path}:2: cannot read: {TOO_DEEP}"):
        parse_theme(path)
    loaded = load_themes([tmp_path])
    assert (loaded.themes, len(loaded.problems)) == ((), 1)


# ---- the records of the Spark server and host, the sandbox's files ---------------------------


def test_records_too_deep_are_as_good_as_none(tmp_path: Path) -> None:
    home = ServerHome(tmp_path)
    home.record_path.write_text(DEEP)
    assert home.read() is None
    host = HostFiles(home)
    host.record_path.write_text(DEEP)
    assert host.read() is None


def test_sandbox_files_too_deep_are_as_good_as_none(tmp_path: Path) -> None:
    (tmp_path / INFO_FILE).write_text(DEEP)
    assert read_info(tmp_path) is None
    pids = PidFile(tmp_path / "sandbox.pids")
    pids.path.write_text(DEEP)
    assert pids.processes() == {}
    assert pids.live_owner() is None
