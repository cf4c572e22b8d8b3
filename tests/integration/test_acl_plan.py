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
import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from console.rocketmq.models import BoundaryType
from console.sandbox.acl import ACL_GROUP, ACL_TOPIC, AclSandbox

CLUSTER = "acl"
AK_VAR = "RMQ_TEST_ACL_AK"
SK_VAR = "RMQ_TEST_ACL_SK"


@dataclass
class Run:
    """One CLI run: where everything went, what it printed, every argv seen under it."""

    root: Path
    returncode: int = -1
    stdout: str = ""
    stderr: str = ""
    argvs: set[tuple[int, bytes]] = field(default_factory=set)  # (pid, argv), every one seen

    @property
    def workspace(self) -> Path:
        return self.root / "ws"

    @property
    def spark_log(self) -> Path:
        return self.workspace / "logs" / "spark-host.log"

    def written_dirs(self) -> list[Path]:
        """Everything the console, the Spark host and its executors were given to write to."""
        return [self.workspace, self.root / "tmp", self.root / "spark-local"]


def configure(
    root: Path, acl: AclSandbox, *, secret: str, secret_by: str, workspace: Path | None = None
) -> tuple[Path, dict[str, str]]:
    """A config whose cluster names its keys by reference, and the CLI's environment. The
    secret is put where its reference points: a file outside the workspace, or a variable.
    The access key goes by the other kind, so both kinds resolve in the executors."""
    root.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RMQ_CONSOLE_")}
    for d in ("tmp", "spark-local", "secrets"):
        (root / d).mkdir(exist_ok=True)
    env["TMPDIR"] = str(root / "tmp")  # Python's temp files, the PySpark workers' included
    env["SPARK_LOCAL_DIRS"] = str(root / "spark-local")  # Spark's block manager and shuffle
    env["JAVA_TOOL_OPTIONS"] = f"-Djava.io.tmpdir={root / 'tmp'}"  # the JVM's temp files
    if secret_by == "file":
        (root / "secrets" / "sk").write_text(secret + "\n")
        refs = {"access_key": f"env:{AK_VAR}", "secret_key": f"file:{root / 'secrets' / 'sk'}"}
        env[AK_VAR] = acl.user.username
    else:
        (root / "secrets" / "ak").write_text(acl.user.username + "\n")
        refs = {"access_key": f"file:{root / 'secrets' / 'ak'}", "secret_key": f"env:{SK_VAR}"}
        env[SK_VAR] = secret
    path = write_config(root, acl, refs, workspace=workspace, spark_master="local[2]")
    return path, env


def file_refs(root: Path, acl: AclSandbox) -> dict[str, str]:
    """Both keys in files outside the workspace: references that a process of any kind on
    this host (a Spark Connect server, an executor on a worker) resolves itself."""
    secrets = root / "secrets"
    secrets.mkdir(parents=True, exist_ok=True)
    (secrets / "ak").write_text(acl.user.username + "\n")
    (secrets / "sk").write_text(acl.user.password + "\n")
    return {"access_key": f"file:{secrets / 'ak'}", "secret_key": f"file:{secrets / 'sk'}"}


def write_config(
    root: Path,
    acl: AclSandbox,
    refs: dict[str, str],
    *,
    workspace: Path | None = None,
    spark_master: str | None = None,
) -> Path:
    """`root/config.yaml`: the ACL cluster with its keys by reference, the workspace, and the
    Spark master when one is named (else the CLI finds the server `spark up` started)."""
    config: dict[str, Any] = {
        "clusters": [{"name": CLUSTER, "namesrv": acl.namesrv_addr, "credentials": refs}],
        "workspace": str(workspace or root / "ws"),
    }
    if spark_master is not None:
        config["spark_master"] = spark_master
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def run_cli(root: Path, env: dict[str, str], *args: str, timeout: float = 600) -> Run:
    """`rmq-console ARGS` as a subprocess, its descendants' argv recorded while it runs."""
    run = Run(root)
    proc = subprocess.Popen(
        [sys.executable, "-m", "console", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    done = threading.Event()
    watcher = threading.Thread(target=_watch, args=(proc.pid, done, run.argvs), daemon=True)
    watcher.start()
    try:
        run.stdout, run.stderr = proc.communicate(timeout=timeout)
    finally:
        done.set()
        watcher.join()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    run.returncode = proc.returncode
    return run


def _watch(root_pid: int, done: threading.Event, seen: set[tuple[int, bytes]]) -> None:
    # Every argv a process shows is kept: a forked child shows its parent's until it execs.
    while not done.wait(0.05):
        for pid in _descendants(root_pid):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue  # exited between the listing and the read
            if argv:  # empty for a zombie
                seen.add((pid, argv))


def _descendants(root_pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name (field 2) is in parentheses and may hold spaces.
        parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    found = {root_pid}
    grew = True
    while grew:
        more = {pid for pid, ppid in parents.items() if ppid in found} - found
        found |= more
        grew = bool(more)
    return found


def files_holding(dirs: list[Path], secret: str) -> list[Path]:
    needle = secret.encode()
    hits = []
    for d in dirs:
        for path in d.rglob("*"):
            if path.is_file() and needle in path.read_bytes():
                hits.append(path)
    return hits


def spec_file(root: Path, strategy: dict[str, Any]) -> Path:
    path = root / "spec.yaml"
    spec = {"scope": {"cluster": CLUSTER, "groups": [ACL_GROUP], "topics": [ACL_TOPIC]}}
    path.write_text(yaml.safe_dump({**spec, "strategy": strategy}))
    return path


def between_batches(acl: AclSandbox) -> int:
    """A store time between the seed's second and third batch: every queue lands mid-way."""
    assert acl.seed is not None
    first, second = acl.seed.batches[1], acl.seed.batches[2]
    return (first.finished_ms + second.started_ms) // 2


async def broker_answers(acl: AclSandbox, ts_ms: int, queues: list[int]) -> dict[int, int]:
    async with acl.admin() as admin:
        return {
            q: await admin.search_offset(acl.broker_addr, ACL_TOPIC, q, ts_ms, BoundaryType.LOWER)
            for q in queues
        }


def names_the_access_key(text: str, access_key: str) -> bool:
    """The refusal names the key it refused (the wording is the error type's own)."""
    return re.search(rf"access key '?{re.escape(access_key)}\b", text) is not None


def plan_rows(plan_dir: Path) -> list[dict[str, Any]]:
    return pq.read_table(plan_dir / "rows.parquet").to_pylist()


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
