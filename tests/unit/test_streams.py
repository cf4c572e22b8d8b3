"""`make test`'s streams are balanced by what each integration file was measured to take: the
seconds come from pytest's own JUnit reports, and the longest files are shared out first."""

from __future__ import annotations

import json
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
</testsuite></testsuites>
"""


def test_the_seconds_of_each_integration_file_are_summed_from_the_reports(
    tmp_path: Path,
) -> None:
    report = tmp_path / "sandbox-1.xml"
    report.write_text(REPORT)
    assert streams.measured([report]) == {"test_apply.py": 52.0, "test_acl.py": 12.0}


def test_the_sandbox_streams_are_balanced_by_the_measured_seconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = sorted(streams.INTEGRATION.glob("test_*.py"))
    acl = [p.name for p in files if streams._ACL.search(p.read_text())]
    main = [p.name for p in files if streams._MAIN.search(p.read_text()) and p.name not in acl]
    longest, *rest = main
    measured = tmp_path / "durations.json"
    # One file longer than all the others together: it has a stream to itself.
    measured.write_text(json.dumps({longest: 10_000.0, **dict.fromkeys(rest, 10.0)}))
    monkeypatch.setattr(streams, "DURATIONS", measured)
    split = streams.streams()
    assert split["sandbox-1"] == [f"tests/integration/{longest}"]
    assert sorted(split["sandbox-2"]) == sorted(f"tests/integration/{f}" for f in acl + rest)
