"""Snapshots: the offsets of some groups at one instant, kept as Parquet in the workspace.

Taking one reads the cluster (ClusterReader.group_offsets per group, plus the store times at
the ends of each queue); the console can also record the offsets it has just read for a refresh
(`SnapshotStore.record`) so a history builds up with no extra load on the brokers.

A snapshot that lacks pieces (a broker that did not answer, min offsets unknown...) keeps them
in its file's metadata (`SnapshotStore.missing`): a plan from it warns. One of which nothing
could be read is not taken at all (`NothingRead`, with the reasons). The brokers read from a
slave, their master down, are in the metadata too (`SnapshotStore.from_slave`).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from console import json_text
from console.domain.gaps import Gap, Part, gap
from console.domain.offsets import GroupOffsets
from console.domain.plan import SNAPSHOT_COLUMNS, stamp
from console.errors import BadFile
from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import NotFoundError, RocketMQError
from console.services.infra import files
from console.services.infra.workspace import SnapshotRef, Workspace
from console.services.read.client_offset_files import with_client_stores
from console.services.read.reader import ClusterReader
from console.services.read.snapshot_errors import GroupNotFound, NothingRead, SnapshotNotFound

_ARROW = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64(), "double": pa.float64()}
ARROW_SCHEMA = pa.schema([(name, _ARROW[kind]) for name, kind in SNAPSHOT_COLUMNS])
GroupQueueKey = tuple[str, str, str, int]  # group, topic, broker, queue id
DAY_MS = 86_400_000
#: Parquet metadata key of a snapshot's missing pieces (a JSON list of Gap.to_dict()).
MISSING_KEY = b"rmq_console.missing"
#: Parquet metadata key of the brokers read from a slave, master down (a JSON list of names).
FROM_SLAVE_KEY = b"rmq_console.from_slave"


@dataclass(frozen=True, slots=True)
class Snapshot:
    cluster: str
    taken_at_ms: int
    table: pa.Table
    #: What the snapshot lacks; its file says so (SnapshotStore.missing).
    gaps: tuple[Gap, ...] = ()
    #: Brokers whose queues were read from a slave, their master down (complete, but the
    #: slave's committed offsets may be up to a minute older); its file says so too.
    from_slave: tuple[str, ...] = ()

    @property
    def partial(self) -> bool:
        return bool(self.gaps)

    @property
    def snapshot_id(self) -> str:
        return stamp(self.taken_at_ms)

    @property
    def groups(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.table.column("group").to_pylist())))


@dataclass(frozen=True, slots=True)
class Retention:
    """Keep at most `keep` snapshots per cluster, none older than `max_age_days`."""

    keep: int | None = 500
    max_age_days: float | None = 30.0


def snapshot_table(
    cluster: str,
    offsets: Iterable[GroupOffsets],
    broker_addrs: Mapping[str, str],
    times: Mapping[GroupQueueKey, tuple[int | None, int | None]] | None = None,
    *,
    taken_at_ms: int | None = None,
) -> pa.Table:
    """One row per (group, queue). `times` gives the store times of a queue's first and last
    message; unknown ones stay null rather than 0, which would read as 1970."""
    times = times or {}
    rows: list[dict[str, Any]] = []
    for o in offsets:
        taken = taken_at_ms if taken_at_ms is not None else o.taken_at_ms
        for q in o.queues:
            first, last = times.get((o.group, q.topic, q.broker, q.queue_id), (None, None))
            rows.append(
                {
                    "cluster": cluster,
                    "broker": q.broker,
                    "broker_addr": broker_addrs.get(q.broker),
                    "topic": q.topic,
                    "queue_id": q.queue_id,
                    "group": o.group,
                    "min_offset": q.min_offset,
                    "max_offset": q.max_offset,
                    "committed": q.committed,
                    "last_timestamp": q.last_timestamp or None,
                    "min_timestamp": first or None,
                    "max_timestamp": last or None,
                    "clients": len(o.clients),
                    "message_model": o.message_model,
                    "consume_tps": o.consume_tps,
                    "taken_at": taken,
                }
            )
    return pa.Table.from_pylist(rows, schema=ARROW_SCHEMA)


async def take_snapshot(
    reader: ClusterReader,
    cluster: str,
    groups: Sequence[str],
    *,
    with_times: bool = True,
    client_offset_dirs: Sequence[str] = (),
) -> Snapshot:
    """Read the offsets of `groups` now; an unknown group raises GroupNotFound. What could not
    be read is in the snapshot's `gaps`; when nothing could, NothingRead says why.

    A BROADCASTING group has no offsets on the brokers: its rows are those of its client's
    offsets.json when exactly one readable file of it is found under `client_offset_dirs`."""
    batch = await reader.batch()
    batch.expect(len(groups))
    if batch.routes is None:
        batch.routes = await reader.routes()  # what the name server says is the error
    # The addresses a plan from this snapshot writes to: masters only, never a slave.
    brokers = {n: r.master_addr for n, r in batch.routes.items() if r.master_addr}
    answers = await asyncio.gather(
        *(reader.group_offsets(g, batch=batch) for g in groups), return_exceptions=True
    )
    offsets: list[GroupOffsets] = []
    gaps: list[Gap] = []
    for group, answer in zip(groups, answers, strict=True):
        if isinstance(answer, NotFoundError):
            raise GroupNotFound(group, str(answer))
        if isinstance(answer, RocketMQError):
            gaps.append(gap(Part.GROUP, group, answer))
            continue
        if isinstance(answer, BaseException):
            raise answer
        if client_offset_dirs:
            answer = client_file_rows(await with_client_stores(reader, answer, client_offset_dirs))
        gaps.extend(answer.gaps)
        if answer.answered:
            offsets.append(answer)
    if not offsets or (gaps and not any(o.queues for o in offsets)):
        # Not a snapshot of anything: saved, it would read as "no offsets" to a plan.
        raise NothingRead(gaps)
    times = await store_times(reader.admin, brokers, offsets) if with_times else {}
    taken_at = min(o.taken_at_ms for o in offsets)
    table = snapshot_table(cluster, offsets, brokers, times)
    return Snapshot(cluster, taken_at, table, tuple(gaps), brokers_read_from_slave(offsets))


def brokers_read_from_slave(offsets: Iterable[GroupOffsets]) -> tuple[str, ...]:
    """The brokers any of these reads went to a slave for, by name."""
    return tuple(sorted({b for o in offsets for b in o.from_slave}))


def client_file_rows(offsets: GroupOffsets) -> GroupOffsets:
    """A BROADCASTING group read with its client stores: its queues are those of the one
    readable client file (none when there are several: which client to plan for is then the
    operator's choice, and planning says so)."""
    if len(offsets.client_stores) != 1 or offsets.client_stores[0].error is not None:
        return offsets
    return replace(offsets, queues=offsets.client_stores[0].queues)


async def store_times(
    admin: AdminClient, brokers: Mapping[str, str], offsets: Sequence[GroupOffsets]
) -> dict[GroupQueueKey, tuple[int | None, int | None]]:
    """First and last store time per queue, one QUERY_CONSUME_TIME_SPAN per (group, topic,
    broker). Best effort: a broker that cannot answer leaves its queues without times."""
    cells = sorted(
        {(o.group, q.topic, q.broker) for o in offsets for q in o.queues if q.broker in brokers}
    )
    answers = await asyncio.gather(
        *(admin.consume_time_span(brokers[b], t, g) for g, t, b in cells), return_exceptions=True
    )
    out: dict[GroupQueueKey, tuple[int | None, int | None]] = {}
    for (group, _, _), answer in zip(cells, answers, strict=True):
        if isinstance(answer, RocketMQError):
            continue
        if isinstance(answer, BaseException):
            raise answer
        for mq, span in answer.items():
            key = (group, mq.topic, mq.broker_name, mq.queue_id)
            out[key] = (span.min_timestamp or None, span.max_timestamp or None)
    return out


class SnapshotStore:
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def save(self, snapshot: Snapshot) -> SnapshotRef:
        uri = self.workspace.snapshot_uri(snapshot.cluster, snapshot.snapshot_id)
        fs, path = files.filesystem(uri)
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        # Written under a temporary name and moved: a listing never shows half a file.
        tmp = f"{path}.tmp-{os.getpid()}"
        table = snapshot.table
        metadata: dict[bytes, bytes] = {}
        if snapshot.gaps:
            metadata[MISSING_KEY] = json.dumps([g.to_dict() for g in snapshot.gaps]).encode()
        if snapshot.from_slave:
            metadata[FROM_SLAVE_KEY] = json.dumps(list(snapshot.from_slave)).encode()
        if metadata:
            table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
        pq.write_table(table, tmp, filesystem=fs)
        fs.move(tmp, path)
        return SnapshotRef(snapshot.cluster, snapshot.snapshot_id, snapshot.taken_at_ms, uri)

    def record(
        self,
        cluster: str,
        offsets: Sequence[GroupOffsets],
        broker_addrs: Mapping[str, str],
        retention: Retention | None = None,
    ) -> SnapshotRef | None:
        """Keep what a refresh has just read; prune by `retention`. None if nothing was read."""
        if not offsets:
            return None
        taken_at = min(o.taken_at_ms for o in offsets)
        table = snapshot_table(cluster, offsets, broker_addrs, taken_at_ms=taken_at)
        gaps = tuple(g for o in offsets for g in o.gaps)
        ref = self.save(Snapshot(cluster, taken_at, table, gaps, brokers_read_from_slave(offsets)))
        if retention is not None:
            self.prune(cluster, retention, now_ms=taken_at)
        return ref

    def history(self, cluster: str) -> list[SnapshotRef]:
        return self.workspace.snapshots(cluster)

    def load(self, ref: SnapshotRef) -> pa.Table:
        """The snapshot's rows; a file that is not a snapshot is a BadFile naming it."""
        names = files.read_parquet_schema(ref.uri).names
        lacking = [name for name, _ in SNAPSHOT_COLUMNS if name not in names]
        if lacking:
            raise BadFile(ref.uri, f"not a snapshot: no column {', '.join(lacking[:3])}")
        return files.read_parquet(ref.uri, schema=ARROW_SCHEMA)

    def missing(self, ref: SnapshotRef) -> tuple[Gap, ...]:
        """What the snapshot lacks, as its file records it (none: it is whole)."""
        raw = self._metadata(ref).get(MISSING_KEY)
        try:
            return tuple(Gap.from_dict(d) for d in json_text.loads(raw)) if raw else ()
        except (ValueError, KeyError, TypeError):
            raise BadFile(ref.uri, "its record of what it lacks cannot be read") from None

    def from_slave(self, ref: SnapshotRef) -> tuple[str, ...]:
        """The brokers the snapshot read from a slave, master down, as its file records it."""
        raw = self._metadata(ref).get(FROM_SLAVE_KEY)
        try:
            names = json_text.loads(raw) if raw else []
        except ValueError:
            names = None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise BadFile(ref.uri, "its record of the brokers read from a slave cannot be read")
        return tuple(names)

    def _metadata(self, ref: SnapshotRef) -> dict[bytes, bytes]:
        return dict(files.read_parquet_schema(ref.uri).metadata or {})

    def groups_in(self, ref: SnapshotRef) -> set[str]:
        table = files.read_parquet(ref.uri, columns=["group"])
        if "group" not in table.column_names:
            raise BadFile(ref.uri, "not a snapshot (no group column)")
        return set(table.column(0).to_pylist())

    def find(self, cluster: str, snapshot_id: str) -> SnapshotRef:
        refs = self.history(cluster)
        for ref in refs:
            if ref.snapshot_id == snapshot_id:
                return ref
        recent = ", ".join(r.snapshot_id for r in refs[-3:]) or "none"
        raise SnapshotNotFound(
            f"no snapshot {snapshot_id!r} of cluster {cluster!r} (most recent: {recent})"
        )

    def at(self, cluster: str, groups: Sequence[str], at_ms: int) -> SnapshotRef:
        """The newest snapshot taken at or before `at_ms` that holds every one of `groups`."""
        for ref in reversed(self.history(cluster)):
            if ref.taken_at_ms <= at_ms and set(groups) <= self.groups_in(ref):
                return ref
        raise SnapshotNotFound(
            f"no snapshot of cluster {cluster!r} taken at or before {stamp(at_ms)} "
            f"holds {', '.join(groups)}"
        )

    def prune(self, cluster: str, retention: Retention, *, now_ms: int) -> list[SnapshotRef]:
        """Delete what the retention does not keep; returns what was deleted."""
        refs = self.history(cluster)
        keep = set()
        newest_first = list(reversed(refs))
        if retention.keep is not None:
            newest_first = newest_first[: retention.keep]
        for ref in newest_first:
            age = now_ms - ref.taken_at_ms
            if retention.max_age_days is None or age <= retention.max_age_days * DAY_MS:
                keep.add(ref.uri)
        gone = [r for r in refs if r.uri not in keep]
        for ref in gone:
            files.delete(ref.uri)
        return gone
