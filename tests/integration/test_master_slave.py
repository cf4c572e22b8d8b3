"""Masters and slaves, on a real master/slave pair (fixture `replica_cluster`: one master, its
slave in a JVM of its own).

`brokers` shows every address with its role and broker id. With the master hung (SIGSTOP: still
listed, silent) or stopped (the name server then lists the slave alone), `lag` reads the
broker's queues from the slave: the values the master had, marked "from slave, master down",
exit 0 (a complete answer, README "Exit codes"); so do `groups` and `snapshot` (in its file too),
and the console shows the slave beside its master and marks the group read from it. No write
goes to the slave, though a 5.3.3 slave would take it (UPDATE_CONSUMER_OFFSET answers SUCCESS).

The tests that need the master up come first in this file; `master_stopped` stops it for the
rest (the cluster is this module's alone, and stays that way until the session ends).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from console.config import ClusterConfig, Config
from console.domain.gaps import Part, Why
from console.domain.offsets import FROM_SLAVE
from console.remote.proxy import remote_sources
from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import RequestCode
from console.rocketmq.errors import ConnectError, NotMaster, RequestTimeout
from console.rocketmq.models import MessageQueue
from console.sandbox.replica import ReplicaSandbox
from console.services.apply.offset_writer import OffsetWrite, OffsetWriter, WriteOutcome
from console.services.infra.access import open_admin
from console.services.infra.workspace import Workspace
from console.services.read.reader import ClusterReader
from console.services.read.snapshots import SnapshotStore, take_snapshot
from console.ui.app import make_app
from console.ui.themes import PROJECT_THEMES
from tests.ui.helpers import settle, shown, status, text_of

QueueKey = tuple[str, str, int]


def rmq_console(*args: str, config: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("rmq-console")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RMQ_CONSOLE_CONFIG": str(config)}
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "config.yaml"
    path.write_text("{}\n")
    return path


def brokers_json(replica: ReplicaSandbox, config: Path) -> tuple[int, list[dict[str, Any]], str]:
    result = rmq_console("brokers", "--json", "--namesrv", replica.namesrv_addr, config=config)
    return result.returncode, json.loads(result.stdout), result.stderr


def lag(replica: ReplicaSandbox, config: Path, *mode: str) -> subprocess.CompletedProcess[str]:
    assert replica.seed is not None
    return rmq_console(
        "lag", "-g", replica.seed.group, *mode, "--namesrv", replica.namesrv_addr, config=config
    )


def queues(document: dict[str, Any]) -> dict[QueueKey, tuple[int, int | None]]:
    return {
        (q["topic"], q["broker"], q["queue_id"]): (q["max_offset"], q["committed"])
        for q in document["queues"]
    }


def test_brokers_lists_the_master_and_the_slave_with_role_and_id(
    replica_cluster: ReplicaSandbox, config: Path
) -> None:
    code, rows, stderr = brokers_json(replica_cluster, config)
    assert (code, stderr) == (0, "")
    assert [(r["broker"], r["broker_id"], r["role"], r["addr"], r["status"]) for r in rows] == [
        ("broker-r", 0, "MASTER", replica_cluster.master_addr, "UP"),
        ("broker-r", 1, "SLAVE", replica_cluster.slave_addr, "UP"),
    ]
    assert all(r["version"] == "V5_3_3" for r in rows)
    text = rmq_console("brokers", "--namesrv", replica_cluster.namesrv_addr, config=config)
    assert text.returncode == 0
    lines = [line.split() for line in text.stdout.splitlines()]
    assert lines[0][:3] == ["BROKER", "ID", "ROLE"]
    assert ["broker-r", "0", "MASTER", "ReplicaCluster", replica_cluster.master_addr] in [
        line[:5] for line in lines
    ]
    assert ["broker-r", "1", "SLAVE", "ReplicaCluster", replica_cluster.slave_addr] in [
        line[:5] for line in lines
    ]


def test_lag_reads_the_master_while_it_is_up(replica_cluster: ReplicaSandbox, config: Path) -> None:
    seed = replica_cluster.seed
    assert seed is not None
    result = lag(replica_cluster, config, "--json")
    assert (result.returncode, result.stderr) == (0, "")
    document = json.loads(result.stdout)
    assert document["from_slave"] == []
    assert queues(document) == {
        (mq.topic, mq.broker_name, mq.queue_id): (seed.max_offsets[mq], c)
        for mq, c in seed.committed.items()
    }


@pytest.fixture
def master_paused(replica_cluster: ReplicaSandbox) -> Iterator[None]:
    """The master's JVM stopped with SIGSTOP (still listed by the name server, which drops a
    silent broker only after 120 s, answering nothing), then resumed."""
    replica_cluster.pause_master()
    try:
        yield
    finally:
        replica_cluster.resume_master()


def test_lag_reads_from_the_slave_while_the_master_hangs(
    replica_cluster: ReplicaSandbox, config: Path, master_paused: None
) -> None:
    seed = replica_cluster.seed
    assert seed is not None
    result = lag(replica_cluster, config, "--json", "--timeout", "2")
    assert (result.returncode, result.stderr) == (0, "")
    document = json.loads(result.stdout)
    assert document["from_slave"] == [replica_cluster.broker]
    assert document["unreachable_brokers"] == []
    assert queues(document) == {
        (mq.topic, mq.broker_name, mq.queue_id): (seed.max_offsets[mq], c)
        for mq, c in seed.committed.items()
    }


async def _master_view(replica: ReplicaSandbox) -> dict[QueueKey, tuple[int, int | None]]:
    async with replica.admin() as admin:
        assert replica.seed is not None
        o = await ClusterReader(admin).group_offsets(replica.seed.group)
        assert o.from_slave == ()
        return {q.key: (q.max_offset, q.committed) for q in o.queues}


async def _only_slave_listed(replica: ReplicaSandbox, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    async with replica.admin() as admin:
        while True:
            addrs = (await admin.cluster_info()).brokers[replica.broker].addrs
            if addrs == {1: replica.slave_addr}:
                return
            assert time.monotonic() < deadline, f"the name server still lists {addrs}"
            await asyncio.sleep(0.5)


#: A group committed on the master while its slave could copy nothing (paused), just before
#: the master stopped: the slave never had it, as a slave that joined shortly before its master
#: went down (a 5.3.3 slave copies groups and offsets every 60 s).
LATE_GROUP = "replica-late"


async def _commit_late_group(replica: ReplicaSandbox) -> None:
    assert replica.seed is not None
    async with replica.admin() as admin:
        await admin.create_group(replica.master_addr, LATE_GROUP)
        report = await OffsetWriter(admin).write(
            OffsetWrite(replica.master_addr, LATE_GROUP, mq.topic, mq.queue_id, 2)
            for mq in replica.seed.max_offsets
        )
        assert report.ok, report.summary()


@pytest.fixture(scope="module")
def master_stopped(replica_cluster: ReplicaSandbox) -> dict[QueueKey, tuple[int, int | None]]:
    """What the master held (read from it just before), then the master's JVM stopped and the
    name server listing the slave alone. Just before the stop, with the slave paused (a few
    seconds: the name server keeps it listed), LATE_GROUP was committed on the master."""
    held = asyncio.run(_master_view(replica_cluster))
    replica_cluster.pause_slave()
    try:
        asyncio.run(_commit_late_group(replica_cluster))
        asyncio.run(replica_cluster.stop_master())
    finally:
        replica_cluster.resume_slave()
    asyncio.run(_only_slave_listed(replica_cluster))
    return held


def test_lag_reads_from_the_slave_when_the_master_is_down(
    replica_cluster: ReplicaSandbox, config: Path, master_stopped: dict[QueueKey, Any]
) -> None:
    result = lag(replica_cluster, config, "--json")
    # Every queue read, values exact: complete, so exit 0 (README "Exit codes").
    assert (result.returncode, result.stderr) == (0, "")
    document = json.loads(result.stdout)
    assert document["from_slave"] == [replica_cluster.broker]
    assert document["unreachable_brokers"] == []
    assert queues(document) == master_stopped
    assert len(master_stopped) == 4
    # The slave checked before it is believed: caught up, nothing missing.
    assert document["partial"] is False
    (ha,) = document["slave_lag"]
    assert ha["broker"] == replica_cluster.broker
    expected_lag = sum(m - (c or 0) for (t, _, _), (m, c) in master_stopped.items())
    assert document["total_lag"] == expected_lag == 24

    text = lag(replica_cluster, config)
    assert text.returncode == 0
    assert f"from slave, master down: {replica_cluster.broker}" in text.stdout
    assert f"total lag {expected_lag}" in text.stdout


def test_a_group_the_slave_never_copied_reads_partial_with_the_reason(
    replica_cluster: ReplicaSandbox, config: Path, master_stopped: dict[QueueKey, Any]
) -> None:
    result = rmq_console(
        "lag", "-g", LATE_GROUP, "--json", "--namesrv", replica_cluster.namesrv_addr, config=config
    )
    # Not "not found" (exit 2), not lag 0 (exit 0): partial, and why.
    assert result.returncode == 1
    document = json.loads(result.stdout)
    assert document["partial"] is True
    assert document["from_slave"] == [replica_cluster.broker]
    assert [(m["part"], m["name"], m["why"]) for m in document["missing"]] == [
        ("broker", replica_cluster.broker, "not synced yet")
    ]
    assert "has not copied the group" in document["missing"][0]["detail"]
    assert document["queues"] == []
    (ha,) = document["slave_lag"]
    assert ha["slave_addr"] == replica_cluster.slave_addr
    assert "not synced yet" in result.stderr


async def test_a_slave_read_that_could_not_be_checked_is_partial_with_the_reason(
    replica_cluster: ReplicaSandbox,
    master_stopped: dict[QueueKey, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The real slave's answer, whole; then the slave's group list, then the topic's route, made
    # to fail (no cheap way to make the real slave or name server refuse one request alone).
    seed = replica_cluster.seed
    assert seed is not None
    broker, slave = replica_cluster.broker, replica_cluster.slave_addr
    async with replica_cluster.admin() as admin:
        reader = ClusterReader(admin)
        o = await reader.group_offsets(seed.group)
        assert (o.from_slave, o.partial, len(o.queues)) == ((broker,), False, 4)

        async def no_group_list(addr: str) -> Any:
            raise RequestTimeout(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, admin.timeout)

        monkeypatch.setattr(admin, "subscription_groups", no_group_list)
        o = await reader.group_offsets(seed.group)
        assert [(g.part, g.name, g.why) for g in o.gaps] == [(Part.BROKER, broker, Why.UNCHECKED)]
        assert f"read from slave {slave}, whose group list could not be read" in o.gaps[0].detail
        assert len(o.queues) == 4  # what the slave holds is still shown, as a lower bound
        monkeypatch.undo()

        async def no_route(topic: str) -> Any:
            raise ConnectError(replica_cluster.namesrv_addr, "refused")

        monkeypatch.setattr(admin, "topic_route", no_route)
        o = await reader.group_offsets(seed.group)
        assert [(g.part, g.name, g.why) for g in o.gaps] == [
            (Part.QUEUES, f"{seed.topic}/{broker}", Why.UNCHECKED)
        ]
        assert f"the route of {seed.topic} could not be read" in o.gaps[0].detail


def test_brokers_shows_the_master_down_and_the_slave_up(
    replica_cluster: ReplicaSandbox, config: Path, master_stopped: dict[QueueKey, Any]
) -> None:
    code, rows, stderr = brokers_json(replica_cluster, config)
    assert code == 1
    assert [(r["broker"], r["broker_id"], r["role"], r["addr"], r["status"]) for r in rows] == [
        ("broker-r", 0, "MASTER", None, "DOWN"),
        ("broker-r", 1, "SLAVE", replica_cluster.slave_addr, "UP"),
    ]
    assert "master not registered" in rows[0]["error"]
    (line,) = stderr.splitlines()
    assert line.startswith("rmq-console: broker down: broker-r: master not registered")


def test_groups_and_a_snapshot_name_the_broker_read_from_the_slave(
    replica_cluster: ReplicaSandbox, tmp_path: Path, master_stopped: dict[QueueKey, Any]
) -> None:
    seed = replica_cluster.seed
    assert seed is not None
    broker = replica_cluster.broker
    workspace = tmp_path / "ws"
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"workspace": str(workspace)}))
    target = ("--namesrv", replica_cluster.namesrv_addr)

    result = rmq_console("groups", "--json", *target, config=config)
    assert (result.returncode, result.stderr) == (0, "")  # complete: every queue was read
    document = json.loads(result.stdout)
    assert (document["partial"], document["from_slave"]) == (False, [broker])
    row = next(r for r in document["groups"] if r["group"] == seed.group)
    assert row["from_slave"] == [broker]
    assert row["total_lag"] == 24  # what the master held (test_lag_reads_from_the_slave_...)
    text = rmq_console("groups", *target, config=config)
    assert text.returncode == 0
    (line,) = [row for row in text.stdout.splitlines() if row.startswith(seed.group)]
    assert f"{FROM_SLAVE}: {broker}" in line

    args = ("snapshot", "-g", seed.group, "--no-times", "--name", "replica", *target)
    snap = rmq_console(*args, "--json", config=config)
    assert (snap.returncode, snap.stderr) == (0, "")
    summary = json.loads(snap.stdout)
    assert (summary["partial"], summary["from_slave"], summary["queues"]) == (False, [broker], 4)
    (ref,) = Workspace(workspace).snapshots("replica")
    assert SnapshotStore(Workspace(workspace)).from_slave(ref) == (broker,)
    text = rmq_console(*args, config=config)
    assert text.returncode == 0
    assert f"{FROM_SLAVE}: {broker}" in text.stdout.splitlines()


async def test_the_console_shows_the_slave_and_the_group_read_from_it(
    replica_cluster: ReplicaSandbox, master_stopped: dict[QueueKey, Any]
) -> None:
    seed = replica_cluster.seed
    assert seed is not None
    broker = replica_cluster.broker
    cluster = ClusterConfig(name="replica", namesrv=(replica_cluster.namesrv_addr,))
    config = Config(clusters=(cluster,), refresh_interval=3600, theme="rmq-dark")
    app = make_app(config, remote_sources(config), cluster=cluster, theme_paths=[PROJECT_THEMES])
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        rows = [(r["broker"], r["role"], r["addr"], r["state"]) for r in shown(app)]
        assert rows == [
            (broker, "MASTER", "", "DOWN"),
            (broker, "SLAVE 1", replica_cluster.slave_addr, "UP"),
        ]
        assert text_of(app, "#totals").startswith("1 broker + 1 slave (1 down)")
        assert f"DOWN: {broker}" in status(app)
        notes = text_of(app, "#notes")
        assert (
            f"{broker}: {FROM_SLAVE}: reads go to slave 1 at {replica_cluster.slave_addr}, "
            "nothing is written to it"
        ) in notes

        await pilot.press("g")
        await settle(pilot)
        await pilot.press("slash", *seed.group, "enter", "enter")
        await settle(pilot)
        summary = text_of(app, "#summary")
        assert f"{FROM_SLAVE}: {broker}" in summary
        # Every queue read there: the lag is the master's, whole (no lower bound).
        assert "lag 24" in summary
        assert "≥" not in summary
        assert len(shown(app, "#queues")) == 4


async def _slave_committed(
    admin: AdminClient, replica: ReplicaSandbox, queue_id: int
) -> int | None:
    assert replica.seed is not None
    seed = replica.seed
    return await admin.query_consumer_offset(replica.slave_addr, seed.group, seed.topic, queue_id)


async def test_no_write_goes_to_the_slave(
    replica_cluster: ReplicaSandbox, master_stopped: dict[QueueKey, Any]
) -> None:
    seed = replica_cluster.seed
    assert seed is not None
    cluster = ClusterConfig(name="replica", namesrv=(replica_cluster.namesrv_addr,))
    async with open_admin(cluster, write=True) as admin:
        before = await _slave_committed(admin, replica_cluster, 0)
        assert before == seed.committed[MessageQueue(seed.topic, replica_cluster.broker, 0)]
        assert before is not None

        # Where offsets are written: masters only, and this broker has none now.
        reader = ClusterReader(admin)
        assert await reader.brokers() == {}
        # A snapshot (what plans are made from) names no address to write to.
        snapshot = await take_snapshot(reader, "replica", [seed.group])
        assert snapshot.table.num_rows == 4
        assert set(snapshot.table.column("broker_addr").to_pylist()) == {None}

        # Handed the slave's address anyway, the writer refuses it before sending.
        report = await OffsetWriter(admin).write(
            [OffsetWrite(replica_cluster.slave_addr, seed.group, seed.topic, 0, before + 5)]
        )
        (result,) = report.results
        assert result.outcome is WriteOutcome.FAILED
        assert isinstance(result.error, NotMaster)
        assert not result.sent
        assert "never to a slave" in str(result.error)
        # So does the client, whatever operation would write.
        with pytest.raises(NotMaster):
            await admin.update_consumer_offset(
                replica_cluster.slave_addr, seed.group, seed.topic, 0, before + 5
            )
        with pytest.raises(NotMaster):
            await admin.reset_offset(
                replica_cluster.slave_addr, seed.group, seed.topic, offset=before + 5, queue_id=0
            )
        assert await _slave_committed(admin, replica_cluster, 0) == before
