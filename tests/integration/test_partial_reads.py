"""A partial answer is shown as partial, never as lag 0, against the real sandbox and the real
ACL cluster:

- a broker that does not answer (its JVM paused, as in test_cli_exit_codes.py): `lag`, `groups`
  and `snapshot` name it, mark what they print as partial and exit 1; the snapshot's file
  records what it lacks, and a plan from that snapshot warns and exits 1;
- many groups read while a broker stops answering part way: every row either agrees with a calm
  full read or is marked partial;
- the fleet scan asks the name server once for the whole scan, and never has more than the
  batch's bound of requests in flight to one broker;
- a wrong secret: `lag` and `groups` exit 2 naming the refused signature and the access key,
  `snapshot` saves nothing; no credentials at all: `lag`, `groups` and `plan` exit 2 naming
  the refusal and saying to set credentials, with no lag of 0 anywhere.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from console.cli import main
from console.cli.browse import _group_row
from console.domain.gaps import Part, Why
from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import RequestCode
from console.sandbox import scenario
from console.sandbox.acl import ACL_BROKER, ACL_GROUP, AclSandbox
from console.sandbox.runner import Sandbox
from console.services.apply.offset_writer import OffsetWrite, OffsetWriter
from console.services.infra.access import ClusterClient
from console.services.infra.fanout import gather_bounded
from console.services.infra.workspace import Workspace
from console.services.read.batch import BROKER_IN_FLIGHT
from console.services.read.reader import ClusterReader
from console.services.read.snapshots import MISSING_KEY
from tests.connect import ConnectServer
from tests.integration.faults import broker_answers

DOWN = "broker-b"
GROUP = scenario.GROUP_OFFLINE
#: The name the partial snapshot is filed under, and the cluster of the spec planned from it.
NAME = "sandbox"
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
    path.write_text(yaml.safe_dump({"workspace": str(workspace), "spark_master": "local[2]"}))
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


@pytest.fixture(scope="module")
def partial_snapshot(
    sandbox: Sandbox, config: Path
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`snapshot` of GROUP taken while broker-b is paused (resumed before the tests run): the
    run, and the summary it printed."""
    os.kill(sandbox.pids()[DOWN], signal.SIGSTOP)
    try:
        target = ("--namesrv", sandbox.namesrv_addr, "--timeout", "1", "--name", NAME)
        argv = ("snapshot", "-g", GROUP, "--no-times", "--json", *target)
        result = rmq_console(*argv, config=config)
    finally:
        _resume(sandbox, DOWN)
    return result, json.loads(result.stdout or "{}")


def test_a_snapshot_with_a_broker_down_records_what_it_lacks(
    workspace: Path, partial_snapshot: tuple[subprocess.CompletedProcess[str], dict[str, Any]]
) -> None:
    result, summary = partial_snapshot
    assert result.returncode == 1, result.stderr
    assert any(f"broker {DOWN} timed out" in line for line in stderr_lines(result))
    assert summary["partial"] is True
    assert [m["name"] for m in summary["missing"]] == [DOWN]
    path = Path(summary["path"].removeprefix("file://"))
    recorded = json.loads(pq.read_schema(path).metadata[MISSING_KEY])
    assert [(m["part"], m["name"], m["why"]) for m in recorded] == [("broker", DOWN, "timed out")]
    refs = Workspace(workspace).snapshots(NAME)
    assert [r.snapshot_id for r in refs] == [summary["snapshot"]]


def test_a_plan_from_a_partial_snapshot_warns_and_exits_1(
    sandbox: Sandbox,
    config: Path,
    warm_cli: ConnectServer,
    tmp_path: Path,
    partial_snapshot: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    _, summary = partial_snapshot
    snapshot_id = summary["snapshot"]
    spec = tmp_path / "spec.yaml"
    scope = {"cluster": NAME, "groups": [GROUP], "topics": [scenario.TOPIC_ORDERS]}
    spec.write_text(yaml.safe_dump({"scope": scope, "strategy": {"shift-by": -1}}))
    target = ("--namesrv", sandbox.namesrv_addr)
    result = rmq_console(
        "plan", "--spec", str(spec), "--snapshot", snapshot_id, "--json", *target, config=config
    )
    # The plan is made (broker-b answers again by now), but from what the snapshot holds.
    assert result.returncode == 1, result.stderr
    lines = stderr_lines(result)
    assert (
        f"rmq-console: warning: snapshot {snapshot_id} is partial: the plan lacks what it lacks "
        "(queues of a broker that did not answer are not in it)"
    ) in lines
    assert any(line.startswith(f"rmq-console: broker {DOWN} timed out: ") for line in lines)
    document = json.loads(result.stdout)
    assert document["partial"] is True
    assert [(m["part"], m["name"], m["why"]) for m in document["missing"]] == [
        ("broker", DOWN, "timed out")
    ]
    assert document["plan"]["snapshot"]["id"] == snapshot_id
    assert document["plan"]["rows"] == scenario.topic_plan(scenario.TOPIC_ORDERS).queues_per_broker


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


def test_a_fleet_scan_asks_the_name_server_once_and_bounds_each_broker(
    sandbox: Sandbox,
    fleet: list[str],
    config: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """`groups` over the sandbox's groups and the fleet's, every request of the command's own
    client counted where all of them pass (`call`) on their way to the real cluster. (The
    sandbox's trickle producer sends from this process too, with a client of its own, on its
    loop's thread: not counted, or one of its sends at the scan's peak reads as a 33rd.)"""
    asked: Counter[tuple[str, int]] = Counter()
    in_flight: Counter[str] = Counter()
    most: Counter[str] = Counter()
    call = AdminClient.call

    async def counted(self: ClusterClient, addr: str, code: int, *args: Any, **kw: Any) -> Any:
        if threading.current_thread() is not threading.main_thread():
            # The trickle producer's sends (the sandbox's loop runs on a thread of its own).
            return await call(self, addr, code, *args, **kw)
        asked[(addr, int(code))] += 1
        in_flight[addr] += 1
        most[addr] = max(most[addr], in_flight[addr])
        try:
            return await call(self, addr, code, *args, **kw)
        finally:
            in_flight[addr] -= 1

    monkeypatch.setattr(ClusterClient, "call", counted)
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config))
    assert main(["groups", "--json", "--namesrv", sandbox.namesrv_addr]) == 0
    document = json.loads(capfd.readouterr().out)
    read = {r["group"]: r for r in document["groups"]}
    assert set(fleet) <= set(read)
    assert all(not read[g]["partial"] and read[g]["total_lag"] > 0 for g in fleet)

    # The name server: the brokers and the topics once for the whole scan, not per group.
    namesrv = {code: n for (addr, code), n in asked.items() if addr == sandbox.namesrv_addr}
    assert namesrv == {
        RequestCode.GET_BROKER_CLUSTER_INFO: 1,
        RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: 1,
    }
    # Each broker: hundreds of requests (a consume-stats per group at least), at most the
    # batch's bound at a time, and the bound reached (the scan is held by it, not by luck).
    for addr in sandbox.broker_addrs.values():
        sent = sum(n for (a, _), n in asked.items() if a == addr)
        assert sent >= len(fleet), (addr, sent)
        assert most[addr] == BROKER_IN_FLIGHT, (addr, most[addr])


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


# ---- no credentials at all ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def no_credentials(acl_cluster: AclSandbox, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A config naming the ACL cluster with no credentials: every request goes unsigned."""
    root = tmp_path_factory.mktemp("acl-unsigned")
    config = {
        "clusters": [{"name": "acl", "namesrv": acl_cluster.namesrv_addr}],
        "workspace": str(root / "ws"),
        "spark_master": "local[2]",
    }
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    spec = {"scope": {"cluster": "acl", "groups": [ACL_GROUP]}, "strategy": {"shift-by": -1}}
    (root / "spec.yaml").write_text(yaml.safe_dump(spec))
    return path


#: Stands for the spec file the fixture wrote, in a command line below.
SPEC = "<spec>"


def _says_to_set_credentials(line: str) -> bool:
    return line.startswith(
        f"rmq-console: broker {ACL_BROKER} {Why.AUTHENTICATION}: {ACL_BROKER} accepts signed "
        "requests only: set credentials (access key and secret) for this cluster in the config"
    )


@pytest.mark.parametrize(
    "command",
    [
        ["lag", "-g", ACL_GROUP],
        ["lag", "-g", ACL_GROUP, "--json"],
        ["groups", "--json"],
        ["plan", "--spec", SPEC],
    ],
    ids=["lag", "lag-json", "groups-json", "plan"],
)
def test_no_credentials_is_named_as_a_refusal_and_reads_no_lag(
    acl_cluster: AclSandbox, no_credentials: Path, command: list[str], warm_cli: ConnectServer
) -> None:
    spec = str(no_credentials.parent / "spec.yaml")
    argv = [spec if a == SPEC else a for a in command]
    result = rmq_console(*argv, config=no_credentials)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = stderr_lines(result)
    if argv[0] == "plan":
        # The cluster's answer, not the spec's fault, and no plan left behind.
        assert lines[0] == "rmq-console: no plan: the snapshot could not be taken"
        lines = lines[1:]
        assert not (no_credentials.parent / "ws" / "plans").exists()
    assert len(lines) == 1, result.stderr
    assert _says_to_set_credentials(lines[0]), lines[0]
    assert "has no offsets" not in result.stderr
    if "--json" in argv:
        document = json.loads(result.stdout)
        assert document["partial"] is True
        assert [(m["part"], m["why"]) for m in document["missing"]] == [
            (str(Part.BROKER), str(Why.AUTHENTICATION))
        ]
        assert document.get("total_lag") is None
        assert not document.get("groups")
        assert not document.get("queues")
    else:
        assert result.stdout == ""
