"""Snapshots and the workspace: rows from a group's offsets, files, lookup, retention."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from console.domain.offsets import Client, GroupOffsets, QueueOffsets
from console.locations import cache_root
from console.rocketmq.errors import BrokerError
from console.rocketmq.models import ConsumeTimeSpan, MessageQueue
from console.services.infra import files
from console.services.infra.workspace import Workspace
from console.services.read.snapshot_errors import SnapshotNotFound
from console.services.read.snapshots import (
    ARROW_SCHEMA,
    Retention,
    Snapshot,
    SnapshotStore,
    snapshot_table,
    store_times,
)

T = 1_795_338_300_000  # 2026-11-22T09:05:00Z
DAY = 86_400_000


def offsets(group: str = "g", taken_at: int = T, committed: int | None = 7) -> GroupOffsets:
    return GroupOffsets(
        group=group,
        taken_at_ms=taken_at,
        queues=(
            QueueOffsets("orders", "broker-a", 0, 2, 9, committed, last_timestamp=T - 5),
            QueueOffsets("orders", "broker-b", 1, 0, 0, None, last_timestamp=0),
        ),
        clients=(Client("c1", "10.0.0.1:1", "JAVA", 479),),
        message_model="CLUSTERING",
        consume_tps=2.5,
    )


def test_rows_keep_unknown_as_null() -> None:
    table = snapshot_table(
        "prod",
        [offsets()],
        {"broker-a": "10.0.0.5:10911"},
        {("g", "orders", "broker-a", 0): (T - 100, T - 1)},
    )
    assert table.schema == ARROW_SCHEMA
    a, b = table.to_pylist()
    assert a == {
        "cluster": "prod",
        "broker": "broker-a",
        "broker_addr": "10.0.0.5:10911",
        "topic": "orders",
        "queue_id": 0,
        "group": "g",
        "min_offset": 2,
        "max_offset": 9,
        "committed": 7,
        "last_timestamp": T - 5,
        "min_timestamp": T - 100,
        "max_timestamp": T - 1,
        "clients": 1,
        "message_model": "CLUSTERING",
        "consume_tps": 2.5,
        "taken_at": T,
    }
    assert (b["committed"], b["last_timestamp"], b["min_timestamp"], b["broker_addr"]) == (
        None,
        None,
        None,
        None,
    )


def test_store_saves_lists_finds_and_prunes(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    store = SnapshotStore(ws)
    refs = [
        store.save(Snapshot("prod", T + i * DAY, snapshot_table("prod", [offsets()], {})))
        for i in range(4)
    ]
    (tmp_path / "snapshots" / "prod" / "notes.txt").write_text("not a snapshot")
    assert [r.snapshot_id for r in store.history("prod")] == [r.snapshot_id for r in refs]
    assert refs[0].uri == f"file://{tmp_path}/snapshots/prod/20261122T090500000Z.parquet"
    assert pq.read_table(str(tmp_path / "snapshots/prod/20261122T090500000Z.parquet")).num_rows == 2
    assert store.find("prod", refs[2].snapshot_id) == refs[2]
    with pytest.raises(SnapshotNotFound, match="most recent: .*20261125T090500000Z"):
        store.find("prod", "nope")
    assert store.at("prod", ["g"], T + DAY + 5) == refs[1]
    with pytest.raises(SnapshotNotFound, match="holds h"):
        store.at("prod", ["h"], T + 9 * DAY)
    assert store.load(refs[0]).equals(snapshot_table("prod", [offsets()], {}))

    gone = store.prune("prod", Retention(keep=3, max_age_days=2.5), now_ms=T + 3 * DAY)
    # keep=3 drops the oldest; 2.5 days drops the one taken 3 days before "now".
    assert [r.snapshot_id for r in gone] == [refs[0].snapshot_id]
    gone = store.prune("prod", Retention(keep=None, max_age_days=1.5), now_ms=T + 3 * DAY)
    assert gone == [refs[1]]
    assert store.history("prod") == refs[2:]
    assert store.prune("prod", Retention(keep=None, max_age_days=None), now_ms=T) == []


def test_record_keeps_a_refresh_and_applies_retention(tmp_path: Path) -> None:
    store = SnapshotStore(Workspace(tmp_path))
    for i in range(3):
        ref = store.record("prod", [offsets(taken_at=T + i)], {}, Retention(keep=2))
        assert ref is not None
    assert [r.taken_at_ms for r in store.history("prod")] == [T + 1, T + 2]
    assert store.record("prod", [], {}) is None


def test_store_times_skip_brokers_that_fail() -> None:
    span = ConsumeTimeSpan(MessageQueue("orders", "broker-a", 0), T - 100, T - 1, T - 50, 0)

    class Admin:
        async def consume_time_span(self, addr: str, topic: str, group: str) -> object:
            if addr == "b":
                raise BrokerError(addr, 1, 1, "down")
            return {span.queue: span}

    got = asyncio.run(
        store_times(Admin(), {"broker-a": "a", "broker-b": "b"}, [offsets()])  # type: ignore[arg-type]
    )
    assert got == {("g", "orders", "broker-a", 0): (T - 100, T - 1)}


def test_workspace_layout_and_names(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "w")
    assert ws.local_root == tmp_path / "w"
    assert ws.plan_uri("p1") == f"file://{tmp_path}/w/plans/p1"
    assert ws.log_path() == tmp_path / "w" / "logs" / "spark-host.log"
    assert ws.plans() == []
    for bad in ("../x", "a/b", ""):
        with pytest.raises(ValueError, match="cannot be used as a file name"):
            ws.plan_uri(bad)
    remote = Workspace("hdfs://nn:8020/rmq")
    assert remote.local_root is None
    # A process cannot append to a remote file: its log goes to the cache directory.
    assert remote.log_path() == cache_root() / "logs" / "spark-host.log"
    assert remote.snapshot_uri("prod", "x") == "hdfs://nn:8020/rmq/snapshots/prod/x.parquet"


def test_files_write_read_delete(tmp_path: Path) -> None:
    uri = files.to_uri(tmp_path / "a" / "b.json")
    files.write_text(uri, "{}")
    assert files.read_text(uri) == "{}"
    assert files.exists(uri)
    assert files.listdir(files.to_uri(tmp_path / "a")) == ["b.json"]
    files.delete(files.to_uri(tmp_path / "a"))
    assert not files.exists(uri)
    files.delete(uri)  # absent is fine
    assert files.to_uri("s3a://bucket/x/") == "s3a://bucket/x"
