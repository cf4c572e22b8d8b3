"""Planning: spec → snapshot → plan job → plan files in the workspace; plans to and from CSV.

Nothing here writes to a cluster. A `Planner` reads it (a fresh snapshot, broker versions and
reset settings for the reset path), checks the spec against the snapshot before Spark is
involved, and hands the job to a `JobRunner` (the warm out-of-process session in the console
and the CLI, the test session in tests).

Bad input raises `SpecError` (found here) or `JobInputError` (found by the job); both name the
field or the file and line, and in both cases no plan is written. `INPUT_ERRORS` catches both.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from console.config import CredentialsRef, TlsRef
from console.domain.checks import ScopeCell, check_scope
from console.domain.job_requests import ImpactRequest, PlanRequest
from console.domain.offsets import GroupOffsets
from console.domain.plan import (
    PLAN_COLUMNS,
    Impact,
    PlanHeader,
    ResetPath,
    choose_reset_path,
    client_file_path,
    new_plan_id,
)
from console.domain.spec import (
    FromFile,
    ResetSpec,
    Scope,
    SpecError,
    ToGroup,
    ToSnapshot,
    parse_offsets_csv,
    spec_to_dict,
)
from console.errors import BadFile, read_text
from console.rocketmq.topics import RETRY_PREFIX
from console.services.infra import files
from console.services.infra.access import cluster_of
from console.services.infra.spark_runner import (
    JobHandle,
    JobInputError,
    JobRunner,
    ProgressCallback,
)
from console.services.infra.workspace import ROWS, SnapshotRef, Workspace
from console.services.read.broker_facts import broker_facts
from console.services.read.client_offsets import find_store_files, with_client_stores
from console.services.read.reader import ClusterReader
from console.services.read.snapshots import (
    GroupNotFound,
    Snapshot,
    SnapshotNotFound,
    SnapshotStore,
    take_snapshot,
)

INPUT_ERRORS = (SpecError, JobInputError)


@dataclass(frozen=True, slots=True)
class PlanResult:
    header: PlanHeader
    uri: str  # the plan directory
    snapshot: SnapshotRef


class Planner:
    def __init__(
        self,
        workspace: Workspace,
        runner: JobRunner,
        *,
        reader: ClusterReader | None = None,
        cluster: str | None = None,
        namesrv: Sequence[str] = (),
        credentials: CredentialsRef | None = None,
        tls: TlsRef | None = None,
        clock: Callable[[], float] = time.time,
        with_times: bool = True,
        client_offset_dirs: Sequence[str] = (),
    ) -> None:
        """`namesrv`, `credentials` and `tls` are what the plan job uses for its own lookups
        (the timestamp strategies); by default those of the cluster the reader's client was
        opened for. Credentials travel to the job as references only, TLS as file paths."""
        self.workspace = workspace
        self.store = SnapshotStore(workspace)
        self.runner = runner
        self.reader = reader
        self.cluster = cluster if cluster is not None else (reader.cluster if reader else None)
        self.namesrv = tuple(namesrv) or (tuple(reader.admin.namesrv) if reader else ())
        opened_for = cluster_of(reader.admin) if reader else None
        self.credentials = credentials or (opened_for.credentials if opened_for else None)
        self.tls = tls or (opened_for.tls if opened_for else None)
        self.clock = clock
        self.with_times = with_times
        #: Where BROADCASTING clients on this host keep offsets.json (config client_offset_dirs).
        self.client_offset_dirs = tuple(client_offset_dirs)

    # ---- snapshot ------------------------------------------------------------------------

    async def snapshot(self, spec: ResetSpec) -> tuple[SnapshotRef, pa.Table]:
        """Take and save a snapshot of the spec's groups (and of a to-group source)."""
        reader = self._reader()
        self._check_cluster(spec.scope)
        groups = list(spec.scope.groups)
        copying = isinstance(spec.strategy, ToGroup)
        if isinstance(spec.strategy, ToGroup):
            groups.append(spec.strategy.group)
        # To-group onto a group that has never committed (a shadow consumer about to start):
        # its offsets are created from the source's, so it has no rows to read yet.
        unborn: list[str] = []
        snap: Snapshot | None = None
        while snap is None:
            try:
                snap = await take_snapshot(
                    reader,
                    spec.scope.cluster,
                    groups,
                    with_times=self.with_times,
                    client_offset_dirs=self.client_offset_dirs,
                )
            except GroupNotFound as exc:
                if copying and exc.group in spec.scope.groups and len(groups) > 1:
                    unborn.append(exc.group)
                    groups.remove(exc.group)
                    continue
                where = (
                    f"scope.groups[{spec.scope.groups.index(exc.group)}]"
                    if exc.group in spec.scope.groups
                    else "strategy.to-group"
                )
                raise SpecError(where, f"no consumer group {exc.group!r} in the cluster") from None
        if isinstance(spec.strategy, ToGroup):
            present = set(snap.table["group"].to_pylist())
            unborn += [g for g in groups if g in spec.scope.groups and g not in present]
            if unborn:
                snap = replace(snap, table=unborn_rows(snap.table, spec.strategy.group, unborn))
        # Local or remote, writing a file is blocking I/O: keep it off the event loop.
        return await asyncio.to_thread(self.store.save, snap), snap.table

    # ---- plan ----------------------------------------------------------------------------

    async def prepare(
        self,
        spec: ResetSpec,
        *,
        snapshot: SnapshotRef | None = None,
        out_uri: str | None = None,
        imported_from: str | None = None,
    ) -> PlanRequest:
        """Everything the plan job needs, checked: raises SpecError before any Spark work."""
        now_ms = int(self.clock() * 1000)
        if snapshot is None:
            ref, table = await self.snapshot(spec)
        else:
            if snapshot.cluster != spec.scope.cluster:
                raise SpecError(
                    "scope.cluster",
                    f"{spec.scope.cluster!r}, but snapshot {snapshot.snapshot_id} is of "
                    f"{snapshot.cluster!r}",
                )
            ref, table = snapshot, await asyncio.to_thread(self.store.load, snapshot)
        await self._refuse_client_local(spec, table)
        check_scope(spec, scope_cells(table, spec), ref.snapshot_id)
        source = self._source_snapshot(spec, now_ms)
        plan_id = new_plan_id(now_ms, spec.scope.groups, spec.strategy.kind, uuid.uuid4().hex)
        rows = spec.strategy.rows if isinstance(spec.strategy, FromFile) else ()
        return PlanRequest(
            plan_id=plan_id,
            spec=spec_to_dict(spec),
            snapshot_uri=ref.uri,
            snapshot=ref.info(),
            out_uri=out_uri or self.workspace.plan_uri(plan_id),
            created_at_ms=now_ms,
            timestamp_ms=spec.timestamp_ms(now_ms),
            namesrv=self.namesrv,
            credentials=self.credentials.to_dict() if self.credentials else None,
            tls=self.tls.to_dict() if self.tls else None,
            file_rows=rows,
            source_snapshot_uri=source.uri if source else None,
            source_snapshot=source.info() if source else None,
            reset_paths={g: p.to_dict() for g, p in (await self.reset_paths(spec, table)).items()},
            imported_from=imported_from,
            prechecked=True,
        )

    async def plan(
        self,
        spec: ResetSpec,
        *,
        on_progress: ProgressCallback | None = None,
        on_submit: Callable[[JobHandle], None] | None = None,
        snapshot: SnapshotRef | None = None,
        out_uri: str | None = None,
        imported_from: str | None = None,
    ) -> PlanResult:
        """Snapshot (unless given), check, run the plan job; `on_submit` gets the job's handle
        (to cancel it), `on_progress` its progress."""
        request = await self.prepare(
            spec, snapshot=snapshot, out_uri=out_uri, imported_from=imported_from
        )
        handle = self.runner.submit("plan", request.to_json(), on_progress)
        if on_submit is not None:
            on_submit(handle)
        header = PlanHeader.from_json(await handle.wait(), request.plan_id)
        ref = SnapshotRef(
            request.snapshot.cluster,
            request.snapshot.snapshot_id,
            request.snapshot.taken_at_ms,
            request.snapshot_uri,
        )
        return PlanResult(header, request.out_uri, ref)

    async def impact(
        self, result: PlanResult, *, on_progress: ProgressCallback | None = None
    ) -> list[Impact]:
        """Catch-up estimates from the snapshot history of the plan's cluster."""
        history = tuple(r.uri for r in self.store.history(result.snapshot.cluster))
        if result.snapshot.uri not in history:
            history += (result.snapshot.uri,)
        request = ImpactRequest(result.uri, history, out_uri=result.uri)
        text = await self.runner.submit("impact", request.to_json(), on_progress).wait()
        return [Impact.from_dict(d) for d in _json_list(text)]

    # ---- reading plans -------------------------------------------------------------------

    def header(self, plan_uri: str) -> PlanHeader:
        return self.workspace.read_header(plan_uri)

    def rows(self, plan_uri: str) -> pa.Table:
        return files.read_parquet(files.join(plan_uri, ROWS))

    def export_csv(self, plan_uri: str, dest: Path) -> Path:
        """The rows as CSV (warnings joined with ';', unknown values empty); imports back."""
        table = self.rows(plan_uri)
        names = [name for name, _ in PLAN_COLUMNS]
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(names)
        for row in table.select(names).to_pylist():
            writer.writerow(
                [
                    ";".join(v) if isinstance(v, list) else ("" if v is None else v)
                    for v in (row[n] for n in names)
                ]
            )
        dest.write_text(out.getvalue(), encoding="utf-8")
        return dest

    async def import_csv(
        self,
        path: Path,
        *,
        on_progress: ProgressCallback | None = None,
        snapshot: SnapshotRef | None = None,
        out_uri: str | None = None,
    ) -> PlanResult:
        """A plan CSV (exported, maybe edited) planned again against the cluster as it is now:
        every row is re-checked (the queue must exist, the target is clamped and warned about)
        and the result is a new plan. Rows without a target are left out."""
        spec = await self.import_spec(path)
        return await self.plan(
            spec,
            on_progress=on_progress,
            snapshot=snapshot,
            out_uri=out_uri,
            imported_from=str(path),
        )

    async def import_spec(self, path: Path) -> ResetSpec:
        """The spec a plan CSV asks for: its rows as a from-file strategy over its groups."""
        text = await asyncio.to_thread(_read_plan_csv, path)
        rows = parse_offsets_csv(text, str(path), skip_blank_offsets=True)
        if any(r.group is None for r in rows):
            raise SpecError(f"{path}:1", "missing column group (a plan names each row's group)")
        cluster = _csv_cluster(text, str(path)) or self.cluster
        if cluster is None:
            raise SpecError(f"{path}:1", "missing column cluster")
        groups = tuple(sorted({r.group for r in rows if r.group is not None}))
        return ResetSpec(
            Scope(cluster=cluster, groups=groups, include_retry=True), FromFile(str(path), rows)
        )

    # ---- reset path ----------------------------------------------------------------------

    async def reset_paths(self, spec: ResetSpec, table: pa.Table) -> dict[str, ResetPath]:
        """Per group, the way an apply would move its offsets; empty when not connected."""
        if self.reader is None:
            return {}
        admin = self.reader.admin
        mine = table.filter(pc.is_in(table["group"], pa.array(list(spec.scope.groups))))
        addrs = dict(zip(mine["broker"].to_pylist(), mine["broker_addr"].to_pylist(), strict=True))

        brokers = list((await broker_facts(admin, addrs)).values())
        per_queue = not spec.one_time_per_topic
        out: dict[str, ResetPath] = {}
        for group in spec.scope.groups:
            rows = mine.filter(pc.equal(mine["group"], group))
            clients = max((c or 0 for c in rows["clients"].to_pylist()), default=0)
            models = set(rows["message_model"].to_pylist())
            if "BROADCASTING" in models and len(rows):
                out[group] = await self._client_file_path(group)
                continue
            path = choose_reset_path(
                brokers,
                consumers_online=clients,
                broadcasting="BROADCASTING" in models,
                per_queue=per_queue,
            )
            if isinstance(spec.strategy, ToGroup) and rows["committed"].null_count == len(rows):
                path = replace(
                    path,
                    reason=f"{group} has no offsets yet: this plan creates them from "
                    f"{spec.strategy.group}'s (the group is created, not moved); " + path.reason,
                )
            out[group] = path
        return out

    async def _client_file_path(self, group: str) -> ResetPath:
        """The way to reset a BROADCASTING group whose rows came from its client's file."""
        assert self.reader is not None
        # The file and who is online; the brokers' min and max were read with the snapshot.
        found = await asyncio.to_thread(find_store_files, self.client_offset_dirs, group)
        if len(found) != 1 or found[0].error is not None:
            return choose_reset_path((), consumers_online=0, broadcasting=True, per_queue=True)
        (store,) = found
        offsets = await self.reader.group_offsets(group)
        online = {c.client_id for c in offsets.clients}
        running = store.client_id in online if offsets.clients_known else None
        return client_file_path(str(store.path), store.client_id, running=running)

    async def _refuse_client_local(self, spec: ResetSpec, table: pa.Table) -> None:
        """A BROADCASTING group has no offsets on the brokers, so no snapshot holds a row of
        it: rather than "no offsets", say where its offsets are and how they are reset."""
        present = set(table["group"].to_pylist())
        missing = [(i, g) for i, g in enumerate(spec.scope.groups) if g not in present]
        if self.reader is None or not missing:
            return
        read = await asyncio.gather(
            *(self.reader.group_offsets(g) for _, g in missing), return_exceptions=True
        )
        for (i, _), offsets in zip(missing, read, strict=True):
            if isinstance(offsets, GroupOffsets) and offsets.client_local:
                found = await with_client_stores(self.reader, offsets, self.client_offset_dirs)
                raise SpecError(
                    f"scope.groups[{i}]", client_local_refusal(found, self.client_offset_dirs)
                )

    # ---- helpers -------------------------------------------------------------------------

    def _reader(self) -> ClusterReader:
        if self.reader is None:
            raise SpecError("scope.cluster", "not connected to a cluster: give a snapshot")
        return self.reader

    def _check_cluster(self, scope: Scope) -> None:
        if self.cluster is not None and scope.cluster != self.cluster:
            raise SpecError(
                "scope.cluster", f"{scope.cluster!r}, but this planner reads {self.cluster!r}"
            )

    def _source_snapshot(self, spec: ResetSpec, now_ms: int) -> SnapshotRef | None:
        s = spec.strategy
        if not isinstance(s, ToSnapshot):
            return None
        try:
            if s.snapshot_id is not None:
                return self.store.find(spec.scope.cluster, s.snapshot_id)
            return self.store.at(spec.scope.cluster, spec.scope.groups, s.at_ms or now_ms)
        except SnapshotNotFound as exc:
            raise SpecError("strategy.to-snapshot", str(exc)) from None


def scope_cells(table: pa.Table, spec: ResetSpec) -> list[ScopeCell]:
    """jobs.plan.scope_cells for a snapshot in memory, with Arrow instead of Spark."""
    ids = list(spec.scope.queue_ids)
    n = table.num_rows
    qid = table["queue_id"]
    selected = pc.is_in(qid, pa.array(ids, pa.int32())) if ids else pa.array([True] * n)
    none = pa.scalar(None, pa.int64())
    up = pc.if_else(selected, pc.subtract(table["max_offset"], table["committed"]), none)
    down = pc.if_else(selected, pc.subtract(table["committed"], table["min_offset"]), none)
    # Typed nulls: a distinct over Arrow's null type crashes pyarrow 26.
    no_id = pa.scalar(None, pa.int32())
    sel_id = pc.if_else(selected, qid, no_id) if ids else pa.nulls(n, pa.int32())
    cells = pa.table(
        {
            "group": table["group"],
            "topic": table["topic"],
            "broker": table["broker"],
            "sel_id": sel_id,
            "up": up,
            "down": down,
        }
    ).group_by(["group", "topic", "broker"])
    agg = cells.aggregate(
        [
            ("sel_id", "distinct", pc.CountOptions(mode="only_valid")),
            ("up", "max"),
            ("down", "max"),
        ]
    )
    return [
        ScopeCell(
            group=r["group"],
            topic=r["topic"],
            broker=r["broker"],
            queue_ids=tuple(sorted(i for i in r["sel_id_distinct"] if i is not None)),
            room_up=r["up_max"],
            room_down=r["down_max"],
        )
        for r in agg.to_pylist()
    ]


def warning_counts(plan_uri: str) -> dict[str, int]:
    """How many queues of a plan carry each warning code, most frequent first."""
    warnings = files.read_parquet(files.join(plan_uri, ROWS), columns=["warnings"])["warnings"]
    counts: dict[str, int] = {}
    for codes in warnings.to_pylist():
        for code in codes or ():
            counts[code] = counts.get(code, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def csv_cluster(path: Path) -> str | None:
    """The cluster a plan CSV names in its `cluster` column (None when it names none); raises
    SpecError when it names several or cannot be read."""
    return _csv_cluster(_read_plan_csv(path), str(path))


def _read_plan_csv(path: Path) -> str:
    try:
        return read_text(path, encoding="utf-8-sig")
    except BadFile as exc:
        where = exc.path if exc.line is None else f"{exc.path}:{exc.line}"
        raise SpecError(where, f"cannot read the plan: {exc.problem}") from None


def _csv_cluster(text: str, name: str) -> str | None:
    reader = csv.DictReader(io.StringIO(text))
    try:
        clusters = {(str(row.get("cluster") or "")).strip() for row in reader} - {""}
    except csv.Error as exc:
        raise SpecError(f"{name}:{reader.line_num}", f"not CSV: {exc}") from None
    if len(clusters) > 1:
        raise SpecError(f"{name}:1", f"rows of several clusters: {', '.join(sorted(clusters))}")
    return next(iter(clusters), None)


def _json_list(text: str) -> list[dict[str, object]]:
    value = json.loads(text)
    if not isinstance(value, list):
        raise ValueError("the impact job did not return a list")
    return value


def unborn_rows(table: pa.Table, source: str, groups: Sequence[str]) -> pa.Table:
    """`table` with rows for `groups`, which have never committed: the source group's queues
    (not its own retry topic), each with nothing committed, no client and no rate."""
    theirs = table.filter(
        pc.and_(
            pc.equal(table["group"], source),
            pc.invert(pc.starts_with(table["topic"], RETRY_PREFIX)),
        )
    )
    n = theirs.num_rows
    added = []
    for group in groups:
        columns = {name: theirs[name] for name in table.column_names}
        columns["group"] = pa.array([group] * n, table.schema.field("group").type)
        for name in ("committed", "last_timestamp"):
            columns[name] = pa.nulls(n, table.schema.field(name).type)
        columns["clients"] = pa.array([0] * n, table.schema.field("clients").type)
        columns["consume_tps"] = pa.array([0.0] * n, table.schema.field("consume_tps").type)
        added.append(pa.table(columns, schema=table.schema))
    return pa.concat_tables([table, *added])


def client_local_refusal(offsets: GroupOffsets, dirs: Sequence[str]) -> str:
    """Why a BROADCASTING group cannot be planned from this host, and what to do instead."""
    group = offsets.group
    head = f"{group!r} is a BROADCASTING group: its offsets live in each client's offsets.json"
    stores = offsets.client_stores
    if not stores:
        where = ", ".join(dirs) or "no directory (client_offset_dirs is empty)"
        return (
            f"{head}, and none of {group} was found here (looked in {where}). On the consumer "
            f"host, stop the client and edit ~/.rocketmq_offsets/<clientId>/{group}/offsets.json "
            "(or run the console there; list other places in client_offset_dirs)"
        )
    unreadable = [s for s in stores if s.error is not None]
    if unreadable:
        return f"{head}; cannot read {unreadable[0].error}"
    clients = ", ".join(s.client_id for s in stores)
    return (
        f"{head}; {len(stores)} clients keep one here ({clients}): plan each client on its own "
        "(name one directory in client_offset_dirs)"
    )
