"""A to-timestamp plan on the ACL cluster through the session's Spark Connect server: the lookups
run in the server's Python workers, which resolve the cluster's credential references themselves
(`file:` paths readable on the server's side), and find what the broker answers when asked with
the same signature. The secret stays out of the CLI's output, the workspace, and the server's
folder and log."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from console.sandbox.acl import AclSandbox
from console.services.infra.connect_server import ServerHome
from console.services.infra.warm_host import HostFiles
from tests.connect import ConnectServer
from tests.support.acl import (
    between_batches,
    broker_answers,
    file_refs,
    files_holding,
    plan_rows,
    run_cli,
    spec_file,
    write_config,
)


def test_to_timestamp_with_credentials_through_connect(
    acl_cluster: AclSandbox, connect: ConnectServer, tmp_path: Path
) -> None:
    secret = acl_cluster.user.password
    config = write_config(tmp_path, acl_cluster, file_refs(tmp_path, acl_cluster))
    ts = between_batches(acl_cluster)
    spec = spec_file(tmp_path, {"to-timestamp": ts})
    # The server of `spark up` is found through the cache folder; nothing names it on the command.
    env = {k: v for k, v in os.environ.items() if not k.startswith("RMQ_CONSOLE_")}
    env["RMQ_CONSOLE_CACHE"] = str(connect.cache)

    run = run_cli(tmp_path, env, "plan", "--config", str(config), "--spec", str(spec), "--json")
    assert run.returncode == 0, run.stderr

    printed = json.loads(run.stdout)
    plan_dir = Path(printed["dir"].removeprefix("file://"))
    rows = plan_rows(plan_dir)
    assert {r["queue_id"] for r in rows} == {0, 1, 2, 3}
    theirs = asyncio.run(broker_answers(acl_cluster, ts, [0, 1, 2, 3]))
    assert {r["queue_id"]: r["target"] for r in rows} == theirs
    assert all(r["min_offset"] < r["target"] < r["max_offset"] for r in rows)
    # The warm host of `spark up` ran it, on that server: the command started no host of its own.
    assert not (tmp_path / "ws" / "logs" / "spark-host.log").exists()
    host_log = HostFiles(ServerHome(connect.cache / "spark-connect")).log_path.read_text()
    assert f"warm Spark host on {connect.url}" in host_log

    assert secret not in run.stdout + run.stderr
    assert [a for _, a in run.argvs if secret.encode() in a] == []
    assert files_holding([tmp_path / "ws", connect.cache], secret) == []
