"""`rmq-console apply PLAN` and `rmq-console history`: move offsets as a plan says, and list
what was applied.

`apply` reads the cluster again (drift, who is online, the reset path), prints what it would do
and the equivalent mqadmin commands, asks for the group name (or takes `--confirm GROUP`), then
writes through the journal and reads every queue back. Exit codes: 0 every queue verified; 1 a
queue failed or is not verified yet; 2 refused before writing (bad input, a changed or expired
plan, drift, a read-only cluster, consumers online on the offline path).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from console.cli.lag_history import duration_ms
from console.cli.plan import add_engine_arguments
from console.cli.render import dump_json, table, timestamp
from console.cli.target import Target, resolve_target, target_parent
from console.domain.journal import ApplyStatus, Journal, QueueState
from console.domain.plan import PLAN_MAX_AGE_MIN
from console.redact import redact_text
from console.services.journal_store import AuditLog, JournalStore, Unreadable
from console.services.workspace import Workspace

if TYPE_CHECKING:
    from console.services.apply import ApplyProgress
    from console.services.apply_check import ApplyCheck
    from console.services.plan_load import LoadedPlan
    from console.services.reset_flow import ResetFlow


REFUSED = 2
NOT_VERIFIED = 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parent = target_parent()
    p = sub.add_parser(
        "apply",
        help="apply a plan: confirm, write, verify (journaled, undoable)",
        description="Move the offsets a plan changes. The cluster is read again first: a queue "
        "that moved since the plan was made is drift and stops the apply unless accepted. Every "
        "queue is written through the journal and read back.",
        parents=[parent],
    )
    p.add_argument("plan", metavar="PLAN", help="a plan id of the workspace, or a plan directory")
    p.add_argument(
        "--confirm",
        action="append",
        metavar="GROUP",
        help="the group name(s) of the plan, typed: without it the console asks on a terminal",
    )
    p.add_argument("--accept-drift", action="store_true", help="write although queues moved")
    p.add_argument(
        "--max-age",
        type=float,
        metavar="MIN",
        default=PLAN_MAX_AGE_MIN,
        help="refuse plans older than this many minutes (default %(default).0f)",
    )
    p.add_argument("--json", action="store_true", help="print the journal as JSON")
    p.set_defaults(handler=_apply)

    p = sub.add_parser(
        "undo",
        help="put back what an apply wrote: plan, confirm, write, verify (journaled too)",
        description="Plan every queue an apply wrote back to its before-image (from the "
        "apply's journal), show the plan, and apply it as an apply of its own, drift-checked, "
        "confirmed, verified and journaled.",
        parents=[parent],
    )
    p.add_argument("apply_id", metavar="APPLY_ID", help="the apply to undo (see `history`)")
    p.add_argument("--confirm", action="append", metavar="GROUP", help="the group name(s), typed")
    p.add_argument("--accept-drift", action="store_true", help="write although queues moved")
    add_engine_arguments(p)
    p.add_argument("--json", action="store_true", help="print the undo's journal as JSON")
    p.set_defaults(handler=_undo)

    p = sub.add_parser(
        "resume",
        help="finish an apply that stopped part-way (killed, ctrl-c, a broker lost)",
        description="Read every queue the apply did not verify again: one already at its "
        "target is verified without a write, one still at its before-image is written, one "
        "moved by someone else is drift. Written in the apply's own journal.",
        parents=[parent],
    )
    p.add_argument("apply_id", metavar="APPLY_ID", help="the apply to finish (see `history`)")
    p.add_argument("--accept-drift", action="store_true", help="write although queues moved")
    p.add_argument("--json", action="store_true", help="print the journal as JSON")
    p.set_defaults(handler=_resume)

    p = sub.add_parser(
        "history",
        help="applies and undos of the workspace, newest last; with --lag, a group's lag",
        description="Journals of the workspace: what was applied, by whom, and how it ended. "
        "With -g GROUP --lag: the group's lag as the console recorded it on every refresh, the "
        "applies and undos of that time, and the Burrow evaluation of the window.",
        parents=[parent],
    )
    p.add_argument(
        "-g", "--group", metavar="GROUP", help="only this group's applies (its lag with --lag)"
    )
    p.add_argument("--lag", action="store_true", help="the group's lag history (needs -g)")
    p.add_argument(
        "--since",
        type=duration_ms,
        metavar="DURATION",
        help="with --lag: how far back, e.g. 90m, 1h, 24h, 7d (default 1h)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=_history)


def _apply(args: argparse.Namespace) -> int:
    from console.services.plan_load import PlanRefused, load_plan

    target = resolve_target(args)
    root = writable_root(target)
    if isinstance(root, int):
        return root
    workspace = Workspace(target.config.workspace_path)
    offer_unfinished(root, target.cluster.name)
    try:
        plan = load_plan(
            workspace,
            args.plan,
            cluster=target.cluster.name,
            now_ms=int(time.time() * 1000),
            max_age_s=args.max_age * 60,
        )
    except PlanRefused as exc:
        return _refused(exc.reasons)
    return asyncio.run(_apply_plan(args, target, plan, root))


async def _apply_plan(
    args: argparse.Namespace,
    target: Target,
    plan: LoadedPlan,
    root: Path,
    *,
    undo_of: str | None = None,
) -> int:
    return (await apply_loaded(args, target, plan, root, undo_of=undo_of))[0]


async def apply_loaded(
    args: argparse.Namespace,
    target: Target,
    plan: LoadedPlan,
    root: Path,
    *,
    undo_of: str | None = None,
    flow: ResetFlow | None = None,
) -> tuple[int, Journal | None]:
    """Check, confirm (`args.confirm` or a terminal), write and verify a loaded plan, printing
    as `apply` does; the exit code and the journal (None when refused before writing). A
    walkthrough's `flow`, when given, is told each step as the console's preview tells it."""
    from console.services.apply import Applier
    from console.services.apply_check import check_apply
    from console.services.cluster import ClusterReader
    from console.services.plan_load import PlanRefused

    with _narration(args):
        async with target.admin(write=True) as admin:
            reader = ClusterReader(admin, target.cluster.rocketmq_cluster)
            if flow is not None:
                flow.begin_apply()
            check = await check_apply(reader, plan)
            brokers = {w.row.broker: w.broker_addr for w in check.writes}
            _print_check(check, target, brokers)
            refusals = check.refusals(accept_drift=args.accept_drift)
            if not refusals and not check.writes:
                refusals = ("the plan changes no queue: nothing to apply",)
            if refusals:
                return _refused(refusals, flow), None
            if flow is not None:
                flow.checked(check)
            groups = sorted({g.group for g in check.groups})
            if not _confirmed(groups, args.confirm):
                if flow is not None:
                    flow.declined()
                return REFUSED, None
            if flow is not None:
                flow.confirmed(args.accept_drift)

            def progressed(p: ApplyProgress) -> None:
                _progress(p)
                if flow is not None:
                    flow.apply_progressed(p)

            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            loop.add_signal_handler(signal.SIGINT, stop.set)
            try:
                journal = await Applier(reader, root, cluster=target.cluster.name).apply(
                    check,
                    accept_drift=args.accept_drift,
                    kind="apply" if undo_of is None else "undo",
                    undo_of=undo_of,
                    on_progress=progressed,
                    stop=stop,
                )
            except PlanRefused as exc:
                return _refused(exc.reasons, flow), None
            finally:
                loop.remove_signal_handler(signal.SIGINT)
    if flow is not None:
        flow.applied(journal, str(JournalStore(root).path(journal.apply_id)))
    return _report(args, journal, root), journal


def _narration(args: argparse.Namespace) -> contextlib.AbstractContextManager[object]:
    """With --json, what the command says on the way goes to stderr: stdout holds the JSON."""
    if args.json:
        return contextlib.redirect_stdout(sys.stderr)
    return contextlib.nullcontext()


def _report(args: argparse.Namespace, journal: Journal, root: Path) -> int:
    if args.json:
        dump_json(journal.to_json())
    else:
        _print_journal(journal, JournalStore(root).path(journal.apply_id))
    verified = journal.count(QueueState.VERIFIED) == len(journal.queues)
    return 0 if verified and journal.status is ApplyStatus.FINISHED else NOT_VERIFIED


def writable_root(target: Target) -> Path | int:
    """The local workspace root an apply keeps its evidence in, or the exit code of a refusal
    (a read-only cluster, a workspace on another machine)."""
    if target.cluster.read_only:
        print(
            f"rmq-console: cluster {target.cluster.name} is read-only (read_only: true in the "
            "config): nothing is written to it",
            file=sys.stderr,
        )
        return REFUSED
    workspace = Workspace(target.config.workspace_path)
    root = workspace.local_root
    if root is None:
        print(
            f"rmq-console: the workspace {workspace.uri} is not on this machine: an apply keeps "
            "its journal and audit log there, so it needs a local workspace",
            file=sys.stderr,
        )
        return REFUSED
    return root


def _applied(args: argparse.Namespace) -> tuple[Target, Path, Journal] | int:
    """For `undo` and `resume`: the target, the workspace root and the journal of
    `args.apply_id`, or the exit code of a refusal (read-only, remote workspace, an unknown,
    unreadable or other cluster's apply)."""
    from console.services.journal_actions import load_applied
    from console.services.plan_load import PlanRefused

    target = resolve_target(args)
    root = writable_root(target)
    if isinstance(root, int):
        return root
    try:
        journal = load_applied(root, args.apply_id, target.cluster.name)
    except PlanRefused as exc:
        return _refused(exc.reasons)
    return target, root, journal


# ---- undo ---------------------------------------------------------------------------------


def _undo(args: argparse.Namespace) -> int:
    from console.cli.plan import finish_plan, run_plan
    from console.services.journal_actions import undo_of
    from console.services.plan_load import PlanRefused, load_plan
    from console.services.snapshots import NothingRead
    from console.services.spark_engine import EngineUnavailable, choose_engine

    found = _applied(args)
    if isinstance(found, int):
        return found
    target, root, journal = found
    with _narration(args):
        try:
            undo = undo_of(journal, str(JournalStore(root).path(journal.apply_id)))
        except PlanRefused as exc:
            return _refused(exc.reasons)
        for note in undo.notes:
            print(note, file=sys.stderr if note.startswith("warning:") else sys.stdout)
        try:
            engine = choose_engine(
                args.master, target.config.spark_master, local_fallback=args.local_fallback
            )
        except EngineUnavailable as exc:
            print(f"rmq-console: {exc}", file=sys.stderr)
            return 1
        workspace = Workspace(target.config.workspace_path)
        try:
            flow, failure = run_plan(target, workspace, engine, target.cluster.name, undo.spec)
        except NothingRead as exc:
            return _refused([f"the cluster could not be read for the undo's plan: {exc}"])
        code, result = finish_plan(flow, failure, workspace, as_json=False)
        if result is None or code != 0:
            return _refused(["the undo's plan is not whole: nothing was written"])
        try:
            plan = load_plan(
                workspace, result.uri, cluster=target.cluster.name, now_ms=int(time.time() * 1000)
            )
        except PlanRefused as exc:
            return _refused(exc.reasons)
    return asyncio.run(_apply_plan(args, target, plan, root, undo_of=journal.apply_id))


# ---- resume -------------------------------------------------------------------------------


def _resume(args: argparse.Namespace) -> int:
    found = _applied(args)
    if isinstance(found, int):
        return found
    target, root, journal = found
    if not journal.unfinished:
        print(f"apply {journal.apply_id}: every queue is verified; nothing to resume")
        return 0
    return asyncio.run(_resume_journal(args, target, journal, root))


async def _resume_journal(
    args: argparse.Namespace, target: Target, journal: Journal, root: Path
) -> int:
    from console.domain.journal import JournalError
    from console.services.apply import Applier
    from console.services.cluster import ClusterReader
    from console.services.mqadmin_commands import queue_resets, with_tls
    from console.services.plan_load import PlanRefused
    from console.services.resume_check import check_resume

    with _narration(args):
        async with target.admin(write=True) as admin:
            reader = ClusterReader(admin, target.cluster.rocketmq_cluster)
            check = await check_resume(reader, journal)
            for line in check.lines():
                print(line)
            moves = [
                (w.row.group, w.row.topic, w.broker_addr, w.row.queue_id, w.target)
                for w in check.writes
            ]
            if moves:
                print("the same with mqadmin:")
                resets = queue_resets(target.cluster.namesrv, moves)
                for line in with_tls(resets, target.cluster.tls):
                    print(f"  {line}")
            refusals = check.refusals(accept_drift=args.accept_drift)
            if refusals:
                return _refused(refusals)
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            loop.add_signal_handler(signal.SIGINT, stop.set)
            try:
                done = await Applier(reader, root, cluster=target.cluster.name).resume(
                    check, accept_drift=args.accept_drift, on_progress=_progress, stop=stop
                )
            except (PlanRefused, JournalError) as exc:
                reasons = exc.reasons if isinstance(exc, PlanRefused) else (str(exc),)
                return _refused(reasons)
            finally:
                loop.remove_signal_handler(signal.SIGINT)
    return _report(args, done, root)


def _print_check(check: ApplyCheck, target: Target, brokers: dict[str, str]) -> None:
    from console.services.mqadmin_commands import with_tls
    from console.services.planning import mqadmin_lines

    h = check.plan.header
    print(f"plan {h.plan_id} on cluster {target.cluster.name} ({len(check.writes)} queues change)")
    for t in h.totals:
        if t.topic is None:
            print(f"  {t.group}: re-consume {t.re_consume}, skip {t.skip}, lag after {t.lag_after}")
    for g in check.groups:
        online = f"{g.consumers_online} consumer(s) online" if g.consumers_online else "offline"
        print(f"reset path for {g.group} ({online}): {g.path.kind} - {g.path.reason}")
        planned = g.planned_path
        if planned is not None and planned.kind is not g.path.kind:
            print(f"  the plan said {planned.kind}: the cluster changed since")
    for r in check.reclamped:
        print(f"warning: {r.line}")
    if check.drift:
        print(f"drift: {len(check.drift)} queue(s) moved since the plan was made")
        for d in check.drift:
            print(f"  {d.line()}")
    print("the same with mqadmin:")
    rows = [w.row for w in check.writes]
    lines = mqadmin_lines(h, rows, target.cluster.namesrv, brokers, limit=10)
    for line in with_tls(lines, target.cluster.tls):
        print(f"  {line}")


def _confirmed(groups: Sequence[str], given: Sequence[str] | None) -> bool:
    """The operator typed every group name of the plan, on the command line or when asked."""
    if given is not None:
        missing = sorted(set(groups) - set(given))
        extra = sorted(set(given) - set(groups))
        if missing or extra:
            wrong = ", ".join(extra) if extra else "nothing"
            _refused([f"--confirm names {wrong}; the plan's group(s): {', '.join(groups)}"])
            return False
        return True
    if not sys.stdin.isatty():
        _refused([f"confirm with --confirm {' --confirm '.join(groups)} (no terminal to ask on)"])
        return False
    for group in groups:
        try:
            typed = input(f"type the group name to apply ({group}): ").strip()
        except EOFError:
            typed = ""
        if typed != group:
            _refused([f"typed {typed!r}, not {group!r}: nothing was written"])
            return False
    return True


def _progress(p: ApplyProgress) -> None:
    if sys.stderr.isatty():
        done = f"{p.settled}/{p.total} answered, {p.verified} verified"
        sys.stderr.write(f"\r\033[K{p.stage}: {done}")
        if p.stage == "done":
            sys.stderr.write("\n")
        sys.stderr.flush()


def _print_journal(j: Journal, path: Path) -> None:
    counts = {s: j.count(s) for s in QueueState if j.count(s)}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items())
    what = "apply" if j.undo_of is None else f"undo of {j.undo_of},"
    print(f"{what} {j.apply_id}: {j.status} - {summary} (of {len(j.queues)})")
    if j.stopped_because:
        print(f"stopped: {j.stopped_because}")
    bad = [q for q in j.queues if q.state is not QueueState.VERIFIED]
    for q in bad[:20]:
        held = "-" if q.stored is None else q.stored
        print(
            f"  {q.state}: {q.group} {q.topic}/{q.broker}/{q.queue_id} target {q.target}, "
            f"holds {held}{': ' + q.detail if q.detail else ''}"
        )
    if len(bad) > 20:
        print(f"  ... and {len(bad) - 20} more (see the journal)")
    print(f"journal {path}")
    if j.unfinished:
        print(
            f"to finish it: rmq-console resume {j.apply_id}; to put back what it wrote: "
            f"rmq-console undo {j.apply_id}"
        )


def _refused(reasons: Sequence[str], flow: ResetFlow | None = None) -> int:
    if flow is not None:
        flow.apply_refused(tuple(reasons))
    for reason in reasons:
        print(redact_text(f"rmq-console: refused: {reason}"), file=sys.stderr)
    print("rmq-console: nothing was written", file=sys.stderr)
    return REFUSED


# ---- history ------------------------------------------------------------------------------


def _status(store: JournalStore, j: Journal) -> str:
    """The journal's status, with "running" told apart: a console writing it now, or one that
    died mid-apply ("interrupted": resume or undo it)."""
    if j.status is ApplyStatus.RUNNING and not store.running(j.apply_id):
        return "interrupted"
    return str(j.status)


def offer_unfinished(root: Path, cluster: str) -> None:
    """Name the applies on `cluster` a console left part-way, and what to do about each."""
    from console.services.journal_store import unfinished_lines

    for line in unfinished_lines(root, cluster):
        print(f"rmq-console: {line}", file=sys.stderr)


def _history(args: argparse.Namespace) -> int:
    if args.lag:
        from console.cli.lag_history import show_lag_history

        return show_lag_history(args)
    if args.since is not None:
        print("rmq-console: error: --since goes with --lag", file=sys.stderr)
        return REFUSED
    target = resolve_target(args)
    root = Workspace(target.config.workspace_path).local_root
    if root is None:
        print("rmq-console: the workspace is not on this machine: no journals", file=sys.stderr)
        return REFUSED
    store = JournalStore(root)
    entries = [
        e
        for e in store.all()
        if not args.group or isinstance(e, Unreadable) or args.group in e.groups
    ]
    rows: list[dict[str, Any]] = []
    for e in entries:
        if isinstance(e, Unreadable):
            rows.append({"apply_id": e.apply_id, "error": e.error})
            continue
        rows.append(
            {
                "apply_id": e.apply_id,
                "kind": e.kind,
                "started_at": timestamp(e.started_at_ms),
                "who": e.who,
                "cluster": e.cluster,
                "groups": list(e.groups),
                "status": _status(store, e),
                "queues": len(e.queues),
                "verified": e.count(QueueState.VERIFIED),
                "undo_of": e.undo_of,
            }
        )
    if args.json:
        dump_json({"applies": rows, "audit_lines": sum(1 for _ in AuditLog(root).read())})
    else:
        table(
            ["APPLY", "KIND", "STARTED", "WHO", "GROUPS", "STATUS", "VERIFIED"],
            [
                [
                    r["apply_id"],
                    r.get("kind", "?"),
                    r.get("started_at"),
                    r.get("who"),
                    ", ".join(r.get("groups", [])),
                    r.get("status", f"unreadable: {r.get('error')}"),
                    f"{r['verified']}/{r['queues']}" if "queues" in r else None,
                ]
                for r in rows
            ],
        )
    return 1 if any("error" in r for r in rows) else 0
