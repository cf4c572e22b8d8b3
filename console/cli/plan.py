"""`rmq-console snapshot` and `rmq-console plan`: record offsets, compute a reset plan.

Both only read the cluster. `plan` is the preview without the UI (a dry run): it takes a fresh
snapshot (or uses `--snapshot ID`), runs the plan job on the warm-session host (Spark master
from the config or `--master`) and writes plan.json + rows.parquet to `--out` or the workspace.

One piece (over 400 lines): the `snapshot` and `plan` commands share their arguments and their
rendering of a plan; the work is console.services.plan's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from console.cli.arguments import target_parent
from console.cli.messages import (
    boundaries_document,
    print_boundaries,
    read_boundaries_of,
    report_unread,
)
from console.cli.render import dump_json, missing, report_missing, table
from console.cli.target import Target, resolve_target
from console.domain.boundary_messages import Boundary, boundary_requests
from console.domain.gaps import EXIT_NOTHING_READ, EXIT_OK, EXIT_PARTIAL, Gap
from console.domain.offsets import CLIENT_LOCAL_NOTE, FROM_SLAVE, GroupOffsets
from console.domain.plan import warning_text
from console.domain.spec import SpecError, ToTimestamp, describe
from console.redact import redact_text
from console.services.infra import files, warm_host
from console.services.infra.connect_server import ServerHome, running
from console.services.infra.spark_engine import EngineUnavailable, choose_engine
from console.services.infra.spark_jobs import JobError
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import Workspace
from console.services.plan.load import warning_counts
from console.services.plan.plan_csv import csv_cluster
from console.services.plan.preview_flow import ResetFlow, Stage, drive_plan
from console.services.plan.spec_files import load_spec
from console.services.read.reader import ClusterReader
from console.services.read.snapshot_errors import NothingRead, SnapshotNotFound

if TYPE_CHECKING:
    # Planning pulls in pyarrow and the Spark runner: imported by the handlers that need them,
    # so that `rmq-console lag` and `groups`, which build this parser too, start fast.
    from console.domain.plan import Impact, PlanHeader, PlanRow
    from console.domain.spec import ResetSpec
    from console.services.infra.spark_engine import Engine
    from console.services.infra.spark_jobs import JobProgress
    from console.services.plan.planner import PlanResult

T = TypeVar("T")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parent = target_parent()
    p = sub.add_parser(
        "snapshot",
        help="record the offsets of consumer groups in the workspace",
        description="Record min, max and committed offsets of every queue of the groups as "
        "a Parquet snapshot in the workspace (snapshots/<cluster>/<taken-at>.parquet).",
        parents=[parent],
    )
    p.add_argument("-g", "--group", action="append", required=True, help="group (repeatable)")
    p.add_argument("--no-times", action="store_true", help="skip the store-time queries")
    p.add_argument(
        "--name",
        help="file the snapshot under this cluster name (with a bare --namesrv; a spec's "
        "scope.cluster finds it)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=_snapshot)

    p = sub.add_parser(
        "plan",
        help="compute a reset plan (dry run: never writes to the cluster)",
        description="Compute what a reset would do, per queue: current -> target, clamping, "
        "warnings, totals, and the reset path an apply would take. Nothing is written to the "
        "cluster.",
        parents=[parent],
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--spec", type=Path, help="reset spec, YAML or JSON")
    what.add_argument(
        "--import", dest="import_csv", type=Path, help="a plan CSV to re-check and plan again"
    )
    p.add_argument("--out", help="plan directory (default: the workspace's plans/<plan-id>)")
    p.add_argument("--snapshot", metavar="ID", help="plan from this snapshot, not a fresh one")
    p.add_argument("--csv", type=Path, metavar="FILE", help="also export the rows as CSV")
    p.add_argument("--impact", action="store_true", help="estimate the catch-up time too")
    p.add_argument(
        "--boundary",
        action="store_true",
        help="also print, per changed queue, the first message consumed after the reset (and "
        "the last one skipped, for a skip)",
    )
    add_engine_arguments(p)
    p.add_argument(
        "--allow-future",
        action="store_true",
        help="plan a to-timestamp that lies in the future (every queue then moves to its max)",
    )
    p.add_argument("--json", action="store_true", help="print the plan header as JSON")
    p.set_defaults(handler=_plan)


def add_engine_arguments(p: argparse.ArgumentParser) -> None:
    """--master and --local-fallback: where a command that plans runs its Spark job."""
    p.add_argument(
        "--master",
        help="Spark master or sc:// URL (default: spark_master, or the server of `spark up`)",
    )
    p.add_argument(
        "--local-fallback",
        action="store_true",
        help="when the Spark Connect server does not answer, plan on a local session",
    )


# ---- snapshot ---------------------------------------------------------------------------------


def _snapshot(args: argparse.Namespace) -> int:
    # deferred: pyarrow (snapshots are Parquet files)
    from console.services.read.snapshots import Retention, SnapshotStore, take_snapshot

    target = resolve_target(args)
    store = SnapshotStore(Workspace(target.config.workspace_path))
    name = _cluster_name(args, target, args.name)

    async def go(reader: ClusterReader) -> int:
        try:
            snap = await take_snapshot(
                reader,
                name,
                args.group,
                with_times=not args.no_times,
                client_offset_dirs=target.config.client_offset_dirs,
            )
        except NothingRead as exc:
            # Nothing saved: a file of no offsets would only mislead a plan later.
            print("rmq-console: no snapshot saved: nothing could be read", file=sys.stderr)
            report_missing(exc.gaps, what="groups")
            return EXIT_NOTHING_READ
        ref = await asyncio.to_thread(store.save, snap)
        retention = Retention(keep=target.config.snapshot_retention, max_age_days=None)
        await asyncio.to_thread(store.prune, name, retention, now_ms=snap.taken_at_ms)
        client_local = await _client_local(reader, [g for g in args.group if g not in snap.groups])
        summary = {
            "cluster": name,
            "snapshot": ref.snapshot_id,
            "groups": list(args.group),
            "queues": snap.table.num_rows,
            "client_local": client_local,
            "path": ref.uri,
            "partial": snap.partial,
            "missing": missing(snap.gaps),
            "from_slave": list(snap.from_slave),
        }
        if args.json:
            dump_json(summary)
        else:
            marker = "PARTIAL snapshot" if snap.partial else "snapshot"
            print(
                f"{marker} {ref.snapshot_id}: {snap.table.num_rows} queues of "
                f"{', '.join(args.group)} -> {ref.uri}"
            )
            for group in client_local:
                print(f"{group}: {CLIENT_LOCAL_NOTE}")
            if snap.from_slave:
                print(f"{FROM_SLAVE}: {', '.join(snap.from_slave)}")
        report_missing(snap.gaps, what="groups")
        return EXIT_PARTIAL if snap.partial else EXIT_OK

    return _with_reader(target, go)


async def _client_local(reader: ClusterReader, groups: Sequence[str]) -> list[str]:
    """Which of these groups (read without a queue) are BROADCASTING; one that cannot be read
    again is simply not named."""
    read = await asyncio.gather(*(reader.group_offsets(g) for g in groups), return_exceptions=True)
    return [o.group for o in read if isinstance(o, GroupOffsets) and o.client_local]


# ---- plan -------------------------------------------------------------------------------------


def _plan(args: argparse.Namespace) -> int:
    target = resolve_target(args)
    workspace = Workspace(target.config.workspace_path)
    spec = load_spec(args.spec) if args.spec else None
    if spec is not None and not args.allow_future:
        ahead = future_by_ms(spec, int(time.time() * 1000))
        if ahead is not None:
            print(
                f"rmq-console: error: strategy.to-timestamp: {_duration(ahead)} in the future: "
                "every queue would move to its max offset, skipping every message not yet "
                "consumed; give --allow-future to plan it anyway",
                file=sys.stderr,
            )
            return 2
    # A plan CSV names its cluster: with a bare --namesrv that is the name to plan under.
    named = spec.scope.cluster if spec else csv_cluster(args.import_csv)
    name = _cluster_name(args, target, named)
    if spec is not None and spec.scope.cluster != name:
        raise SpecError("scope.cluster", f"{spec.scope.cluster!r}, but the target is {name!r}")
    try:
        engine = choose_engine(
            args.master, target.config.spark_master, local_fallback=args.local_fallback
        )
    except EngineUnavailable as exc:
        print(f"rmq-console: {exc}", file=sys.stderr)
        return 1
    if engine.note:
        print(f"rmq-console: {engine.note}", file=sys.stderr)
    out_uri = files.to_uri(args.out) if args.out else None
    wanted: ResetSpec | Path = spec if spec is not None else args.import_csv
    try:
        flow, failure = run_plan(
            target,
            workspace,
            engine,
            name,
            wanted,
            snapshot_id=args.snapshot,
            impact=args.impact,
            out_uri=out_uri,
            csv=args.csv,
            with_rows=args.boundary,
        )
    except SnapshotNotFound as exc:
        print(redact_text(f"rmq-console: error: {exc}"), file=sys.stderr)
        return 2
    except NothingRead as exc:
        # Why the groups have no offsets: the cluster's answer, not the spec's fault.
        print("rmq-console: no plan: the snapshot could not be taken", file=sys.stderr)
        report_missing(exc.gaps, what="groups")
        return EXIT_NOTHING_READ
    boundaries = _boundaries(target, flow) if args.boundary and failure is None else None
    extra = {"boundaries": boundaries_document(boundaries)} if boundaries is not None else {}
    code = finish_plan(flow, failure, as_json=args.json, extra=extra)[0]
    if boundaries is None:
        return code
    if not args.json:
        print_boundaries(boundaries)
    return max(code, report_unread(boundaries))


def _boundaries(target: Target, flow: ResetFlow) -> list[Boundary] | None:
    """The boundary of every queue the plan changes (None: no plan)."""
    if flow.result is None:
        return None
    return read_boundaries_of(target, boundary_requests(flow.rows))


def finish_plan(
    flow: ResetFlow,
    failure: str | None,
    *,
    as_json: bool,
    extra: Mapping[str, Any] | None = None,
) -> tuple[int, PlanResult | None]:
    """Print what `run_plan` gave (the preview, or why there is none); the exit code, and the
    plan when there is one. `extra` goes into the JSON document."""
    if flow.stage is Stage.REJECTED:
        print(redact_text(f"rmq-console: error: {flow.error}"), file=sys.stderr)
        return 2, None
    result = flow.result
    if failure is not None or flow.stage is not Stage.PREVIEWED or result is None:
        print(redact_text(f"rmq-console: plan failed: {failure or flow.stage}"), file=sys.stderr)
        return 1, None
    lacking = result.missing
    warned = warning_counts(result.uri)
    if as_json:
        dump_json(
            {
                "plan": _json(result.header.to_json()),
                "dir": result.uri,
                "impact": [i.to_dict() for i in flow.impact],
                "partial": bool(lacking),
                "missing": missing(lacking),
                "warnings": [
                    {"code": code, "text": warning_text(code), "queues": n}
                    for code, n in warned.items()
                ],
                **(extra or {}),
            }
        )
    else:
        _print_plan(result.header, result.uri, flow.impact, warned)
    return _warn_partial(result.snapshot.snapshot_id, lacking), result


def run_plan(
    target: Target,
    workspace: Workspace,
    engine: Engine,
    name: str,
    wanted: ResetSpec | Path,
    *,
    snapshot_id: str | None = None,
    impact: bool = False,
    out_uri: str | None = None,
    csv: Path | None = None,
    with_rows: bool = False,
) -> tuple[ResetFlow, str | None]:
    """Plan `wanted` (a spec, or a plan CSV to import) on a fresh snapshot or `snapshot_id`,
    with the job's progress on stderr; the flow holds the result, the second value why the job
    failed. Raises SnapshotNotFound and NothingRead."""
    # deferred: pyarrow and the planner
    from console.services.plan.planner import Planner

    async def go(reader: ClusterReader) -> tuple[ResetFlow, str | None]:
        # Started first, so Spark warms up while the snapshot is being taken.
        with _runner(engine, workspace) as runner:
            planner = Planner(
                workspace,
                runner,
                reader=reader,
                cluster=name,
                client_offset_dirs=target.config.client_offset_dirs,
            )
            snapshot = planner.store.find(name, snapshot_id) if snapshot_id else None
            if isinstance(wanted, Path):
                spec = await planner.import_spec(wanted)
                imported_from: str | None = str(wanted)
            else:
                spec, imported_from = wanted, None
            flow = ResetFlow.for_spec(spec)
            flow.begin(spec)
            try:
                result = await drive_plan(
                    planner,
                    spec,
                    _Terminal(flow),
                    flow.switch,
                    with_rows=with_rows,
                    with_impact=impact,
                    snapshot=snapshot,
                    out_uri=out_uri,
                    imported_from=imported_from,
                )
            except JobError as exc:
                # The plan job, or the impact job after a plan was written: either way the
                # command did not do all it was asked.
                flow.failed(str(exc))
                return flow, str(exc)
            if result is not None and csv:
                planner.export_csv(result.uri, csv)
        return flow, None

    return asyncio.run(_reading(target, go))


def _warn_partial(snapshot_id: str, lacking: Sequence[Gap]) -> int:
    """A plan from a partial snapshot lacks what the snapshot lacks: say so, exit 1."""
    if not lacking:
        return EXIT_OK
    print(
        f"rmq-console: warning: snapshot {snapshot_id} is partial: the plan lacks what it "
        "lacks (queues of a broker that did not answer are not in it)",
        file=sys.stderr,
    )
    report_missing(lacking, what="groups")
    return EXIT_PARTIAL


class _Terminal:
    """The flow's events, with the job's progress shown on stderr as it comes."""

    def __init__(self, flow: ResetFlow) -> None:
        self.flow = flow

    def progressed(self, progress: JobProgress) -> None:
        # From the runner's reader thread; the flow only records the latest.
        self.flow.progressed(progress)
        job_progress(progress)

    def computed(self, result: PlanResult, rows: tuple[PlanRow, ...]) -> None:
        self.flow.computed(result, rows)

    def impact_estimated(self, plan_id: str, impact: tuple[Impact, ...]) -> None:
        self.flow.impact_estimated(plan_id, impact)

    def rejected(self, reason: str) -> None:
        self.flow.rejected(reason)

    def cancelled(self) -> None:
        self.flow.cancelled()


def _print_plan(
    header: PlanHeader, uri: str, impact: Sequence[Impact], warned: Mapping[str, int]
) -> None:
    print(
        f"plan {header.plan_id}: {describe(header.spec.strategy)} on snapshot "
        f"{header.snapshot.snapshot_id} ({header.rows} queues)"
    )
    table(
        ["GROUP", "TOPIC", "QUEUES", "CHANGED", "RE-CONSUME", "SKIP", "WARNED", "LAG AFTER"],
        [
            [
                t.group,
                t.topic or "(all)",
                t.queues,
                t.changed,
                t.re_consume,
                t.skip,
                t.warned,
                t.lag_after,
            ]
            for t in header.totals
        ],
    )
    for code, n in warned.items():
        print(f"warning ({n} queue{'s' if n != 1 else ''}): {warning_text(code)}")
    for group, path in sorted(header.reset_paths.items()):
        print(f"reset path for {group}: {path.kind} - {path.reason}")
        if path.blocker:
            print(f"  before applying: {path.blocker}")
    for i in impact:
        if i.topic is None and i.catch_up_s is not None:
            print(
                f"catch-up for {i.group}: ~{i.catch_up_s:.0f}s at {i.rate:.1f} msg/s "
                f"({i.rate_source})"
            )
    print(f"wrote {uri} (content {header.content_hash}); dry run: the cluster was not changed")


#: How far ahead a to-timestamp may be before it is taken for a mistake (clocks differ a little).
FUTURE_SLACK_MS = 60_000


def future_by_ms(spec: ResetSpec, now_ms: int) -> int | None:
    """How far a to-timestamp lies beyond `now_ms` (None when not more than FUTURE_SLACK_MS):
    no message is stored there yet, so the plan would skip every queue to its max."""

    if not isinstance(spec.strategy, ToTimestamp):
        return None
    ahead = spec.strategy.timestamp_ms - now_ms
    return ahead if ahead > FUTURE_SLACK_MS else None


def _duration(ms: int) -> str:
    minutes = ms // 60_000
    if minutes < 120:
        return f"{minutes} minute(s)"
    hours = minutes // 60
    return f"{hours} hour(s)" if hours < 48 else f"{hours // 24} day(s)"


def job_progress(p: JobProgress) -> None:
    if p.step and sys.stderr.isatty():
        tasks = f" {p.done}/{p.total} tasks" if p.total else ""
        sys.stderr.write(f"\r\033[K{p.step}{tasks}")
        sys.stderr.flush()
        if p.state != "running":
            sys.stderr.write("\n")


# ---- shared ---------------------------------------------------------------------------------


def _runner(engine: Engine, workspace: Workspace) -> SparkRunner:
    """The warm host beside the server of `spark up` when the plan goes there and one answers
    (no process to start, no client to import, no session to open), else a host of its own."""
    warm = _warm_runner(engine)
    if warm is not None:
        return warm
    log = workspace.log_path()
    # One plan and exit: a warm-up would only delay it.
    env = {**os.environ, **engine.env}
    return SparkRunner(engine.master, log_path=log, warm_up=False, env=env)


def _warm_runner(engine: Engine) -> SparkRunner | None:
    if not engine.is_connect:
        return None
    home = ServerHome.default()
    server = running(home)
    if server is None or engine.master != server.url:
        return None
    return warm_host.attach(home, server)


def _cluster_name(args: argparse.Namespace, target: Target, from_spec: str | None) -> str:
    """The name snapshots are filed under: the config's cluster name; with a bare --namesrv
    (no config entry) the spec's cluster, else the RocketMQ cluster or the address."""
    if getattr(args, "namesrv", None) and target.cluster.rocketmq_cluster is None:
        return from_spec or target.cluster.name
    return target.cluster.name


def _with_reader(target: Target, body: Callable[[ClusterReader], Awaitable[int]]) -> int:
    return asyncio.run(_reading(target, body))


async def _reading(target: Target, body: Callable[[ClusterReader], Awaitable[T]]) -> T:
    async with target.reader() as reader:
        return await body(reader)


def _json(text: str) -> Any:
    return json.loads(text)
