"""A partial answer is shown as partial, never as lag 0 (issue "Honest reads"), against the real
sandbox and the real ACL cluster:

- a broker that does not answer (its JVM paused, as in test_cli_exit_codes.py): `lag`, `groups`
  and `snapshot` name it, mark what they print as partial and exit 1; the snapshot's file
  records what it lacks;
- many groups read while a broker stops answering part way: every row either agrees with a calm
  full read or is marked partial;
- a wrong secret: `lag` and `groups` exit 2 naming the refused signature and the access key,
  `snapshot` saves nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from console.cli.browse import _group_row
from console.domain.gaps import Part, Why
from console.rocketmq.admin import AdminClient
from console.sandbox import scenario
from console.sandbox.acl import ACL_BROKER, ACL_GROUP, AclSandbox
from console.sandbox.runner import Sandbox
from console.services.cluster import ClusterReader
from console.services.fanout import gather_bounded
from console.services.offset_writer import OffsetWrite, OffsetWriter
from console.services.snapshots import MISSING_KEY
from console.services.workspace import Workspace
from tests.integration.faults import broker_answers

DOWN = "broker-b"
GROUP = scenario.GROUP_OFFLINE
FLEET_PREFIX = "it-partial-fleet-"
FLEET_GROUPS = 200
FLEET_TOPIC = "payments"
DELETE_SUBSCRIPTIONGROUP = 207


def rmq_console(
    *args: str, config: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("rmq-console")
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RMQ_CONSOLE_CONFIG": str(config)}
    return subprocess.run(
        [str(exe), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**base, **(env or {})},
        check=False,
    )


def stderr_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    lines = result.stderr.splitlines()
    assert lines, result.stdout
    assert all(line.startswith("rmq-console: ") for line in lines), result.stderr
    return lines


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("partial-ws")


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory, workspace: Path) -> Path:
    path = tmp_path_factory.mktemp("partial-cli") / "config.yaml"
    path.write_text(yaml.safe_dump({"workspace": str(workspace)}))
    return path


def _resume(sandbox: Sandbox, name: str) -> None:
    """SIGCONT, and wait until the broker answers again so later tests see the whole cluster."""
    os.kill(sandbox.pids()[name], signal.SIGCONT)
    deadline = time.monotonic() + 120
    while not asyncio.run(broker_answers(sandbox.namesrv_addr, name, sandbox.broker_addrs[name])):
        assert time.monotonic() < deadline, f"{name} did not answer again within 120 s"
        time.sleep(0.5)


@pytest.fixture
def broker_paused(sandbox: Sandbox) -> Iterator[str]:
    """broker-b paused (registered, answering nothing) for one test."""
    os.kill(sandbox.pids()[DOWN], signal.SIGSTOP)
    try:
        yield sandbox.broker_addrs[DOWN]
    finally:
        _resume(sandbox, DOWN)


# ---- a broker down ------------------------------------------------------------------------------


def test_lag_with_a_broker_down_is_partial(
    sandbox: Sandbox, config: Path, broker_paused: str
) -> None:
    target = ("--namesrv", sandbox.namesrv_addr, "--timeout", "1")
    text = rmq_console("lag", "-g", GROUP, *target, config=config)
    assert text.returncode == 1, text.stderr
    assert all(f"broker {DOWN} timed out: {DOWN} at" in line for line in stderr_lines(text))
    assert f"PARTIAL: missing broker {DOWN} (timed out)" in text.stdout
    assert "total lag ≥" in text.stdout

    document = json.loads(rmq_console("lag", "-g", GROUP, "--json", *target, config=config).stdout)
    assert document["partial"] is True
    assert {(m["part"], m["name"], m["why"]) for m in document["missing"]} == {
        ("broker", DOWN, "timed out")
    }
    assert document["total_lag"] > 0  # broker-a's part, a lower bound
    assert {q["broker"] for q in document["queues"]} == {"broker-a"}


def test_groups_with_a_broker_down_are_all_marked(
    sandbox: Sandbox, config: Path, broker_paused: str
) -> None:
    target = ("--namesrv", sandbox.namesrv_addr, "--timeout", "1")
    result = rmq_console("groups", "--json", *target, config=config)
    assert result.returncode == 1, result.stderr
    assert any(f"broker {DOWN} timed out" in line for line in stderr_lines(result))
    document = json.loads(result.stdout)
    assert document["partial"] is True
    assert document["groups"]
    for row in document["groups"]:
        # broker-b could not say what it holds of any group: no row is whole, none says 0.
        assert row["partial"] is True, row
        assert any(m["name"] == DOWN for m in row["missing"]), row

    text = rmq_console("groups", *target, config=config)
    assert text.returncode == 1
    body = text.stdout.splitlines()[1:]
    assert body, text.stdout
    assert all(f"PARTIAL: {DOWN} timed out" in line for line in body), text.stdout
    assert all("≥" in line for line in body)


def test_a_snapshot_with_a_broker_down_records_what_it_lacks(
    sandbox: Sandbox, config: Path, workspace: Path, broker_paused: str
) -> None:
    target = ("--namesrv", sandbox.namesrv_addr, "--timeout", "1")
    result = rmq_console("snapshot", "-g", GROUP, "--no-times", "--json", *target, config=config)
    assert result.returncode == 1, result.stderr
    assert any(f"broker {DOWN} timed out" in line for line in stderr_lines(result))
    summary = json.loads(result.stdout)
    assert summary["partial"] is True
    assert [m["name"] for m in summary["missing"]] == [DOWN]
    path = Path(summary["path"].removeprefix("file://"))
    recorded = json.loads(pq.read_schema(path).metadata[MISSING_KEY])
    assert [(m["part"], m["name"], m["why"]) for m in recorded] == [("broker", DOWN, "timed out")]
    refs = Workspace(workspace).snapshots(sandbox.namesrv_addr)
    assert [r.snapshot_id for r in refs] == [summary["snapshot"]]


# ---- many groups while a broker stops answering -------------------------------------------------


@pytest.fixture(scope="module")
def fleet(sandbox: Sandbox) -> Iterator[list[str]]:
    """FLEET_GROUPS groups committed halfway on every queue of `payments`; deleted afterwards."""
    groups = [f"{FLEET_PREFIX}{i:03d}" for i in range(FLEET_GROUPS)]
    asyncio.run(_create_fleet(sandbox.namesrv_addr, groups))
    try:
        yield groups
    finally:
        asyncio.run(_delete_fleet(sandbox.namesrv_addr, groups))


async def _create_fleet(namesrv: str, groups: list[str]) -> None:
    async with AdminClient(namesrv, timeout=30) as admin:
        brokers = await admin.master_addrs()
        gate = asyncio.Semaphore(16)

        async def create(addr: str, group: str) -> None:
            async with gate:
                await admin.create_group(addr, group)

        await asyncio.gather(*(create(a, g) for a in brokers.values() for g in groups))
        stats = {a: await admin.topic_stats(a, FLEET_TOPIC) for a in brokers.values()}
        report = await OffsetWriter(admin).write(
            OffsetWrite(addr, g, FLEET_TOPIC, mq.queue_id, (s.min_offset + s.max_offset) // 2)
            for addr, queues in stats.items()
            for mq, s in queues.items()
            for g in groups
        )
        assert report.ok, report.summary()


async def _delete_fleet(namesrv: str, groups: list[str]) -> None:
    async with AdminClient(namesrv, timeout=30) as admin:
        brokers = await admin.master_addrs()
        gate = asyncio.Semaphore(16)

        async def delete(addr: str, group: str) -> None:
            async with gate:
                fields = {"groupName": group, "cleanOffset": True}
                await admin.call(addr, DELETE_SUBSCRIPTIONGROUP, fields)

        await asyncio.gather(*(delete(a, g) for a in brokers.values() for g in groups))


async def _scan(
    namesrv: str, groups: list[str], timeout: float, on_done: Any = None
) -> dict[str, dict[str, Any]]:
    """The rows `groups --json` prints for `groups`, read as the command reads them."""
    async with AdminClient(namesrv, timeout=timeout) as admin:
        reader = ClusterReader(admin)
        batch = await reader.batch(min_offsets=False)
        read = await gather_bounded(
            lambda g: reader.group_offsets(g, batch=batch), groups, limit=64, on_done=on_done
        )
    return {g: _group_row(g, read[g]) for g in groups}


def test_a_broker_stopping_mid_scan_leaves_no_row_wrong_and_unmarked(
    sandbox: Sandbox, fleet: list[str]
) -> None:
    calm = asyncio.run(_scan(sandbox.namesrv_addr, fleet, timeout=10))
    assert all(not r["partial"] and r["total_lag"] > 0 for r in calm.values())
    pid = sandbox.pids()[DOWN]
    stopped = False

    def progress(done: int, total: int) -> None:
        # broker-b stops answering a third of the way through: the reads still waiting on it
        # time out, the later ones find it answering again.
        nonlocal stopped
        if done == total // 3 and not stopped:
            stopped = True
            os.kill(pid, signal.SIGSTOP)
            asyncio.get_running_loop().call_later(1.5, os.kill, pid, signal.SIGCONT)

    try:
        hurried = asyncio.run(_scan(sandbox.namesrv_addr, fleet, timeout=1, on_done=progress))
    finally:
        _resume(sandbox, DOWN)
    assert stopped
    partial = [g for g, r in hurried.items() if r["partial"]]
    wrong = [
        g
        for g, r in hurried.items()
        if not r["partial"] and (r["total_lag"], r["unknown_queues"]) != (calm[g]["total_lag"], 0)
    ]
    assert wrong == []
    assert partial, "broker-b's pause left every read whole"
    for g in partial:
        row = hurried[g]
        assert any(m["name"] == DOWN for m in row["missing"]), row
        assert row["total_lag"] is None or row["total_lag"] <= calm[g]["total_lag"]


# ---- a wrong secret -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wrong_secret(
    acl_cluster: AclSandbox, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, str], Path]:
    root = tmp_path_factory.mktemp("acl-wrong")
    refs = {"access_key": "env:RMQ_TEST_PARTIAL_AK", "secret_key": "env:RMQ_TEST_PARTIAL_SK"}
    config = {
        "clusters": [{"name": "acl", "namesrv": acl_cluster.namesrv_addr, "credentials": refs}],
        "workspace": str(root / "ws"),
    }
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    env = {
        "RMQ_TEST_PARTIAL_AK": acl_cluster.user.username,
        "RMQ_TEST_PARTIAL_SK": "not-the-password-" + acl_cluster.user.password[::-1],
    }
    return path, env, root / "ws"


def _names_the_refused_signature(line: str, access_key: str) -> bool:
    return (
        f"broker {ACL_BROKER} {Why.AUTHENTICATION}: {ACL_BROKER} refused the signature for "
        f"access key {access_key}: check the secret" in line
    )


@pytest.mark.parametrize("command", [["lag", "-g", ACL_GROUP], ["groups"]])
@pytest.mark.parametrize("mode", [[], ["--json"]])
def test_a_wrong_secret_reads_nothing_and_says_why(
    acl_cluster: AclSandbox,
    wrong_secret: tuple[Path, dict[str, str], Path],
    command: list[str],
    mode: list[str],
) -> None:
    config, env, _ = wrong_secret
    result = rmq_console(*command, *mode, config=config, env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = stderr_lines(result)
    assert len(lines) == 1, result.stderr
    assert _names_the_refused_signature(lines[0], acl_cluster.user.username), lines[0]
    assert "code 16" not in result.stderr
    assert "answered request" not in result.stderr
    assert env["RMQ_TEST_PARTIAL_SK"] not in result.stdout + result.stderr
    if mode:
        document = json.loads(result.stdout)
        assert document["partial"] is True
        assert document["missing"][0]["part"] == str(Part.BROKER)
        assert document["missing"][0]["why"] == str(Why.AUTHENTICATION)
        assert document.get("total_lag") is None
        assert not document.get("groups")
        assert not document.get("queues")
    else:
        assert result.stdout == ""


def test_a_wrong_secret_saves_no_snapshot(
    acl_cluster: AclSandbox, wrong_secret: tuple[Path, dict[str, str], Path]
) -> None:
    config, env, ws = wrong_secret
    result = rmq_console("snapshot", "-g", ACL_GROUP, config=config, env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = stderr_lines(result)
    assert lines[0] == "rmq-console: no snapshot saved: nothing could be read"
    assert _names_the_refused_signature(lines[1], acl_cluster.user.username), lines
    assert not list(ws.glob("snapshots/**/*.parquet"))
