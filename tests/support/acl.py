"""The ACL cluster's tests share these: its config and credentials by reference, the CLI run with
its argv and files watched for the secret, and the plans it writes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import yaml

from console.rocketmq.models import BoundaryType
from console.sandbox.acl import ACL_GROUP, ACL_TOPIC, AclSandbox
from tests.support.processes import descendants, processes

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
        for p in descendants(root_pid, processes()):
            if p.argv:  # empty for a zombie
                seen.add((p.pid, p.argv))


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
