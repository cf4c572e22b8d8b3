"""Apply and undo on the ACL cluster through the real CLI, credentials by reference: both sign
every write and read-back, the offsets move and come back exactly, and the secret is in no
journal, no audit line, no file of the workspace, no output and no argv of any process."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from console.locations import CACHE_ENV
from console.sandbox.acl import ACL_GROUP, ACL_TOPIC, AclSandbox
from tests.connect import ConnectServer
from tests.support.acl import configure, files_holding, run_cli, spec_file


async def committed(acl: AclSandbox) -> dict[int, int | None]:
    async with acl.admin() as admin:
        return {
            q: await admin.query_consumer_offset(acl.broker_addr, ACL_GROUP, ACL_TOPIC, q)
            for q in range(4)
        }


def test_apply_and_undo_on_the_acl_cluster_keep_the_secret_out(
    acl_cluster: AclSandbox, connect: ConnectServer, tmp_path: Path
) -> None:
    root = tmp_path
    secret = acl_cluster.user.password
    config, env = configure(root, acl_cluster, secret=secret, secret_by="env")
    # The plans (the apply's and the undo's) go to the session's warm Connect server.
    env[CACHE_ENV] = str(connect.cache)
    before = asyncio.run(committed(acl_cluster))
    spec = spec_file(root, {"shift-by": -1})
    target = ("--config", str(config))
    runs = [run_cli(root, env, "plan", *target, "--spec", str(spec), "--json")]
    assert runs[-1].returncode == 0, runs[-1].stderr
    plan_id = json.loads(runs[-1].stdout)["plan"]["id"]

    runs.append(run_cli(root, env, "apply", plan_id, *target, "--confirm", ACL_GROUP, "--json"))
    assert runs[-1].returncode == 0, runs[-1].stderr
    journal = json.loads(runs[-1].stdout)
    assert {q["state"] for q in journal["queues"]} == {"verified"}
    assert asyncio.run(committed(acl_cluster)) == {
        q: None if v is None else v - 1 for q, v in before.items()
    }

    runs.append(
        run_cli(root, env, "undo", journal["apply_id"], *target, "--confirm", ACL_GROUP, "--json")
    )
    assert runs[-1].returncode == 0, runs[-1].stderr
    assert json.loads(runs[-1].stdout)["undo_of"] == journal["apply_id"]
    assert asyncio.run(committed(acl_cluster)) == before

    workspace = runs[0].workspace
    assert len(list((workspace / "journal").glob("*.json"))) == 2
    assert (workspace / "audit.log").read_text().count("\n") == 2 * len(journal["queues"])
    assert files_holding(runs[0].written_dirs(), secret) == []
    for run in runs:
        assert secret not in run.stdout + run.stderr
        assert [a for _, a in run.argvs if secret.encode() in a] == []
