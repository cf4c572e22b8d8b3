"""Time-strategy plans on an ACL cluster, through the real CLI, with credentials by reference.

The plan job's timestamp lookups run in Spark executors; they open their client through the one
factory and resolve the cluster's credential references there. These tests run
`rmq-console plan --config FILE` as a subprocess against the ACL cluster and check that:

- the targets are what the broker's own SEARCH_OFFSET_BY_TIMESTAMP answers (asked here, signed);
- the secret is in no spawned process's argv (every descendant of the CLI, watched while the
  plan runs), no file under the workspace, the plan directory or the temp directories the CLI
  and Spark were given, and not in the Spark host's log or the CLI's output;
- a wrong secret fails with a message that names the access key and not the secret.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from console.sandbox.acl import ACL_GROUP, AclSandbox
from tests.support.acl import (
    between_batches,
    broker_answers,
    configure,
    files_holding,
    names_the_access_key,
    plan_rows,
    run_cli,
    spec_file,
)


@pytest.mark.parametrize(
    ("strategy", "secret_by"),
    [("to-timestamp", "file"), ("by-duration", "env")],
)
def test_time_plan_on_the_acl_cluster_keeps_the_secret_out_of_argv_files_and_logs(
    acl_cluster: AclSandbox, tmp_path: Path, strategy: str, secret_by: str
) -> None:
    secret = acl_cluster.user.password
    config, env = configure(tmp_path, acl_cluster, secret=secret, secret_by=secret_by)
    ts = between_batches(acl_cluster)
    # by-duration 1h: before every message, so every target is the queue's first offset.
    strategy_arg: Any = ts if strategy == "to-timestamp" else "1h"
    spec = spec_file(tmp_path, {strategy: strategy_arg})
    run = run_cli(tmp_path, env, "plan", "--config", str(config), "--spec", str(spec), "--json")
    assert run.returncode == 0, run.stderr

    printed = json.loads(run.stdout)
    header, plan_dir = printed["plan"], Path(printed["dir"].removeprefix("file://"))
    assert plan_dir.parent == run.workspace / "plans"
    rows = plan_rows(plan_dir)
    assert {r["queue_id"] for r in rows} == {0, 1, 2, 3}
    theirs = asyncio.run(broker_answers(acl_cluster, header["timestamp_ms"], [0, 1, 2, 3]))
    assert {r["queue_id"]: r["target"] for r in rows} == theirs
    if strategy == "to-timestamp":
        assert header["timestamp_ms"] == ts
        assert all(r["min_offset"] < r["target"] < r["max_offset"] for r in rows)
    else:
        assert all(r["target"] == r["min_offset"] < r["current"] for r in rows)

    # The watch saw the processes that matter: the Spark host and its JVM.
    argvs = [argv for _, argv in run.argvs]
    assert any(b"jobs.host" in a for a in argvs), argvs
    assert any(a.split(b"\0")[0].endswith(b"java") for a in argvs), argvs
    assert [a for a in argvs if secret.encode() in a] == []
    assert secret not in run.stdout + run.stderr
    assert run.spark_log.stat().st_size > 0
    assert files_holding(run.written_dirs(), secret) == []


def test_a_wrong_secret_is_named_by_its_access_key(acl_cluster: AclSandbox, tmp_path: Path) -> None:
    wrong = "not-the-password-" + acl_cluster.user.password[::-1]
    config, env = configure(tmp_path, acl_cluster, secret=wrong, secret_by="env")
    spec = spec_file(tmp_path, {"to-timestamp": between_batches(acl_cluster)})
    run = run_cli(tmp_path, env, "plan", "--config", str(config), "--spec", str(spec))
    assert run.returncode == 2, run.stderr
    assert names_the_access_key(run.stderr, acl_cluster.user.username), run.stderr
    assert "check signature failed" in run.stderr
    # The cluster's answer is named, not the spec ("has no offsets in snapshot"), and the
    # snapshot of nothing is not left in the workspace.
    assert "no plan: the snapshot could not be taken" in run.stderr
    assert "refused the signature for access key" in run.stderr
    assert "has no offsets" not in run.stderr
    assert not list(run.workspace.glob("snapshots/**/*.parquet"))
    for secret in (wrong, acl_cluster.user.password):
        assert secret not in run.stdout + run.stderr
    assert files_holding(run.written_dirs(), wrong) == []


def test_a_wrong_secret_in_the_executors_is_named_by_its_access_key(
    acl_cluster: AclSandbox, tmp_path: Path
) -> None:
    """From a snapshot taken with the right secret, the lookups in the executors are the
    first requests signed with the wrong one: their failure names the access key."""
    good_root, bad_root = tmp_path / "good", tmp_path / "bad"
    password = acl_cluster.user.password
    good, good_env = configure(good_root, acl_cluster, secret=password, secret_by="file")
    args = ("snapshot", "--config", str(good), "-g", ACL_GROUP, "--json")
    snap = run_cli(good_root, good_env, *args)
    assert snap.returncode == 0, snap.stderr
    snapshot_id = json.loads(snap.stdout)["snapshot"]

    wrong = "not-the-password-" + password[::-1]
    workspace = good_root / "ws"  # where the snapshot is
    bad, env = configure(bad_root, acl_cluster, secret=wrong, secret_by="env", workspace=workspace)
    spec = spec_file(bad_root, {"to-timestamp": between_batches(acl_cluster)})
    args = ("plan", "--config", str(bad), "--spec", str(spec), "--snapshot", snapshot_id)
    run = run_cli(bad_root, env, *args)
    assert run.returncode == 1, run.stderr
    assert "plan failed" in run.stderr
    assert names_the_access_key(run.stderr, acl_cluster.user.username), run.stderr
    assert "check signature failed" in run.stderr
    for secret in (wrong, password):
        assert secret not in run.stdout + run.stderr
    log = workspace / "logs" / "spark-host.log"
    assert "check signature failed" in log.read_text()  # the failure is in the host's log...
    assert files_holding([workspace, bad_root / "tmp", bad_root / "spark-local"], wrong) == []
