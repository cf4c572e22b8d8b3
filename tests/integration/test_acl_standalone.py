"""The road to a real cluster with ACL on: `rmq-console spark up` on a standalone master with one
worker, then a to-timestamp plan of the ACL cluster through it. The timestamp lookups run in the
executor the worker starts, which resolves the cluster's credential references itself (`file:`
paths readable on the worker's host) and signs its requests: the targets are what the broker
answers when asked with the same signature. The secret is in no process's argv, and in no file
of the workspace, the server's folder, or the cluster's logs and work directories."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from console.sandbox.acl import AclSandbox
from console.services.infra.connect_server import ServerHome
from tests.connect import console_env
from tests.spark.standalone import standalone_cluster
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
from tests.support.processes import processes

#: What points a console process at its cache folder, config, and the test helpers.
_CONSOLE_KEYS = ("RMQ_CONSOLE_CACHE", "RMQ_CONSOLE_CONFIG", "PYTHONPATH")


def argvs_holding(secret: str) -> list[str]:
    """Every running process whose command line holds `secret` (the executors live until the
    server stops, so theirs are among them)."""
    return [p.command_line for p in processes() if secret.encode() in p.argv]


def test_to_timestamp_with_credentials_on_a_standalone_cluster(
    acl_cluster: AclSandbox, tmp_path: Path
) -> None:
    secret = acl_cluster.user.password
    config = write_config(tmp_path, acl_cluster, file_refs(tmp_path, acl_cluster))
    ts = between_batches(acl_cluster)
    spec = spec_file(tmp_path, {"to-timestamp": ts})
    cache = tmp_path / "cache"
    spark_dir = tmp_path / "spark"

    with standalone_cluster(spark_dir) as cluster:
        outside = {k: v for k, v in cluster.env.items() if not k.startswith("RMQ_CONSOLE_")}
        env = {**outside, **{k: console_env(cache, config)[k] for k in _CONSOLE_KEYS}}
        up = run_cli(
            tmp_path,
            env,
            "spark",
            "up",
            "--port",
            "0",
            "--master",
            cluster.master_url,
            # The cluster's daemons run with a small heap (SPARK_DAEMON_MEMORY), and so
            # would the server, which starts as one: give its driver what Spark asks for.
            "--conf",
            "spark.driver.memory=512m",
            "--conf",
            "spark.executor.memory=512m",
            "--conf",
            "spark.executor.cores=2",
        )
        assert up.returncode == 0, up.stdout + up.stderr
        home = ServerHome(cache / "spark-connect")
        try:
            run = run_cli(
                tmp_path, env, "plan", "--config", str(config), "--spec", str(spec), "--json"
            )
            assert run.returncode == 0, run.stderr
            running_with_secret = argvs_holding(secret)
        finally:
            run_cli(tmp_path, env, "spark", "down")

    printed = json.loads(run.stdout)
    rows = plan_rows(Path(printed["dir"].removeprefix("file://")))
    assert {r["queue_id"] for r in rows} == {0, 1, 2, 3}
    theirs = asyncio.run(broker_answers(acl_cluster, ts, [0, 1, 2, 3]))
    assert {r["queue_id"]: r["target"] for r in rows} == theirs
    assert all(r["min_offset"] < r["target"] < r["max_offset"] for r in rows)
    # The lookups ran on the cluster: the server was an application of the master, and the
    # worker ran an executor for it.
    assert "Granted executor ID app-" in home.log_path.read_text()
    assert list((spark_dir / "work").glob("app-*/0"))

    assert secret not in run.stdout + run.stderr
    assert [a for _, a in up.argvs | run.argvs if secret.encode() in a] == []
    assert running_with_secret == []
    assert files_holding([tmp_path / "ws", cache, spark_dir], secret) == []
