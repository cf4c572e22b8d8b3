"""`make test`'s streams are balanced by what each integration file was measured to take: the
seconds come from pytest's own JUnit reports, and the longest files are shared out first."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests import streams

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.integration.test_apply" name="test_one" time="40.5" />
<testcase classname="tests.integration.test_apply" name="test_two" time="9.5" />
<testcase classname="tests.integration.test_apply.TestGroup" name="test_three" time="2" />
<testcase classname="tests.integration.test_acl" name="test_acl" time="12" />
<testcase classname="tests.unit.test_drift" name="test_unit" time="0.01" />
<testcase classname="tests.spark.test_connect" name="test_spark" time="30" />
<testcase classname="tests.spark.test_plan_job" name="test_spark" time="7" />
<testcase classname="tests.benchmarks.test_nothing" name="test_other" time="99" />
</testsuite></testsuites>
"""


def test_the_seconds_of_each_integration_file_are_summed_from_the_reports(
    tmp_path: Path,
) -> None:
    report = tmp_path / "sandbox-1.xml"
    report.write_text(REPORT)
    assert streams.measured([report]) == {
        "test_apply.py": 52.0,
        "test_acl.py": 12.0,
        "tests/unit": 0.01,
        "tests/spark": 37.0,
    }


def test_the_unit_ui_and_spark_directories_are_shared_out_as_files_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each directory of tests that take no cluster is one group of its measured seconds: three
    measured longer than every integration file together run in three streams, each alone;
    measured at nothing, they join one stream."""
    files = sorted(streams.INTEGRATION.glob("test_*.py"))
    measured = tmp_path / "durations.json"
    spread = {p.name: 10.0 for p in files}
    monkeypatch.setattr(streams, "DURATIONS", measured)
    measured.write_text(json.dumps({**spread, **dict.fromkeys(streams.APART_DIRS, 5_000.0)}))
    alone = [paths for paths in streams.streams().values() if set(paths) & set(streams.APART_DIRS)]
    assert sorted(p for paths in alone for p in paths if p in streams.APART_DIRS) == sorted(
        streams.APART_DIRS
    )
    assert all(len(paths) == 1 for paths in alone[:2]), alone
    measured.write_text(json.dumps({**spread, **dict.fromkeys(streams.APART_DIRS, 0.0)}))
    (together,) = [
        paths for paths in streams.streams().values() if set(paths) & set(streams.APART_DIRS)
    ]
    assert set(streams.APART_DIRS) <= set(together)


def test_the_sandbox_streams_are_balanced_by_the_measured_seconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = sorted(streams.INTEGRATION.glob("test_*.py"))
    main = [p.name for p in files if streams._MAIN.search(p.read_text())]
    alone = [p.name for p in files if p.name not in main]
    # A file taking the main sandbox and no other cluster, longer than all the others together.
    longest = next(
        p.name for p in files if p.name in main and not streams._CLUSTER.search(p.read_text())
    )
    measured = tmp_path / "durations.json"
    measured.write_text(json.dumps({f: 10_000.0 if f == longest else 10.0 for f in main + alone}))
    monkeypatch.setattr(streams, "DURATIONS", measured)
    split = streams.streams()
    assert split["sandbox-1"] == [f"tests/integration/{longest}"]
    # Every other file that takes the main sandbox runs in the other sandbox stream.
    assert {f"tests/integration/{f}" for f in main if f != longest} <= set(split["sandbox-2"])
    # The unit, UI and Spark tests run beside the sandbox streams, not in them.
    assert not set(streams.APART_DIRS) & set(split["sandbox-1"] + split["sandbox-2"])


def test_files_sharing_a_cluster_run_in_one_stream() -> None:
    split = streams.streams()
    where = {path: name for name, paths in split.items() for path in paths}
    for cluster in streams.CLUSTERS_S:
        users = [
            f"tests/integration/{p.name}"
            for p in sorted(streams.INTEGRATION.glob("test_*.py"))
            if re.search(rf"\b{cluster}\b", p.read_text())
        ]
        assert len({where[u] for u in users}) <= 1, (cluster, users)


def test_a_stream_runs_the_files_of_a_cluster_begun_early_before_its_others() -> None:
    """A cluster begun as the session starts is used first and stopped after its last test,
    not left running while the stream's other files run."""
    for paths in streams.streams().values():
        files = [Path(p) for p in paths if p.endswith(".py")]
        early = [
            bool(set(streams._CLUSTER.findall(f.read_text())) & streams.BEGUN_EARLY) for f in files
        ]
        assert early == sorted(early, reverse=True), [f.name for f in files]
