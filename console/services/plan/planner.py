"""Planning: spec → snapshot → plan job → plan files in the workspace; plans to and from CSV
(plan_csv.py), each group's reset path (reset_paths.py).

Nothing here writes to a cluster. A `Planner` reads it (a fresh snapshot, broker versions and
reset settings for the reset path), checks the spec against the snapshot before Spark is
involved, and hands the job to a `JobRunner` (the warm out-of-process session in the console
and the CLI, the test session in tests).

Bad input raises `SpecError` (found here) or `JobInputError` (found by the job); both name the
field or the file and line, and in both cases no plan is written. `INPUT_ERRORS` catches both.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow as pa

from console.config import CredentialsRef, TlsRef
from console.domain.checks import check_scope
from console.domain.gaps import Gap
from console.domain.job_requests import ImpactRequest, PlanRequest
from console.domain.plan import Impact, PlanHeader, new_plan_id
from console.domain.reset_paths import ResetPath
from console.domain.spec import (
    FromFile,
    ResetSpec,
    Scope,
    SpecError,
    ToGroup,
    ToSnapshot,
    spec_to_dict,
)
from console.services.infra import files
from console.services.infra.access import cluster_of
from console.services.infra.spark_jobs import JobInputError, ProgressCallback
from console.services.infra.spark_runner import JobHandle, JobRunner
from console.services.infra.workspace import ROWS, SnapshotRef, Workspace
from console.services.plan import plan_csv
from console.services.plan.lite_refusal import refuse_lite
from console.services.plan.paths_now import paths_for, refuse_client_local
from console.services.plan.tables import scope_cells, unborn_rows
from console.services.read.reader import ClusterReader
from console.services.read.snapshot_errors import GroupNotFound, SnapshotNotFound
from console.services.read.snapshots import Snapshot, SnapshotStore, take_snapshot

INPUT_ERRORS = (SpecError, JobInputError)


@dataclass(frozen=True, slots=True)
class PlanResult:
    header: PlanHeader
    uri: str  # the plan directory
    snapshot: SnapshotRef
    #: What the snapshot it was planned from lacks: the plan lacks it too (every door says so).
    missing: tuple[Gap, ...] = ()


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
        opened for, as are its address map and SOCKS proxy. Credentials travel to the job as
        references only, TLS as file paths."""
        self.workspace = workspace
        self.store = SnapshotStore(workspace)
        self.runner = runner
        self.reader = reader
        self.cluster = cluster if cluster is not None else (reader.cluster if reader else None)
        self.namesrv = tuple(namesrv) or (tuple(reader.admin.namesrv) if reader else ())
        opened_for = cluster_of(reader.admin) if reader else None
        self.credentials = credentials or (opened_for.credentials if opened_for else None)
        self.tls = tls or (opened_for.tls if opened_for else None)
        #: Where the job's lookups connect: as the reader's client does.
        self.address_map = opened_for.address_map if opened_for else ()
        self.socks = opened_for.socks if opened_for else None
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
        if self.reader is not None:
            await refuse_lite(self.reader, spec)
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
        if self.reader is not None:
            await refuse_client_local(self.reader, spec, table, self.client_offset_dirs)
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
            address_map=self.address_map,
            socks=self.socks,
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
        missing = await asyncio.to_thread(self.store.missing, ref)
        return PlanResult(header, request.out_uri, ref, missing)

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
        return plan_csv.export_csv(self.rows(plan_uri), dest)

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
        return await asyncio.to_thread(plan_csv.import_spec, path, self.cluster)

    # ---- reset path ----------------------------------------------------------------------

    async def reset_paths(self, spec: ResetSpec, table: pa.Table) -> dict[str, ResetPath]:
        """Per group, the way an apply would move its offsets; empty when not connected."""
        if self.reader is None:
            return {}
        return await paths_for(self.reader, spec, table, self.client_offset_dirs)

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


def _json_list(text: str) -> list[dict[str, object]]:
    value = json.loads(text)
    if not isinstance(value, list):
        raise ValueError("the impact job did not return a list")
    return value
