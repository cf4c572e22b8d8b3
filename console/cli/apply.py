"""`rmq-console apply PLAN` and `rmq-console history`: move offsets as a plan says, and list
what was applied.

`apply`, `undo` and `resume` each run one apply session (console/services/apply/session.py) in
the terminal: the session reads the cluster (drift, who is online, the reset path), this module
prints what it would do and the equivalent mqadmin commands and collects the group name (from
`--confirm GROUP`, or asked on a terminal), and the session reads the cluster again, writes
through the journal and reads every queue back. Exit codes: 0 every queue verified; 1 a queue
failed or is not verified yet; 2 refused before writing (bad input, a changed or expired plan,
drift, a read-only cluster, consumers online on the offline path, the cluster moved while the
prompt waited, no confirmation).

One piece (over 400 lines): `apply`, `undo`, `resume` and `history` share the terminal door of
the apply session (its prompt, its rendering of the session's events); the session is
console.services.apply's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from console.cli.arguments import target_parent
from console.cli.lag_history import duration_ms, show_lag_history
from console.cli.plan import add_engine_arguments, finish_plan, run_plan
from console.cli.render import dump_json, table, timestamp
from console.cli.target import Target, resolve_target
from console.domain.journal import ApplyStatus, Journal, QueueState
from console.domain.mqadmin import plan_resets, queue_resets, with_tls
from console.domain.plan import PLAN_MAX_AGE_MIN
from console.errors import Refused
from console.redact import redact_text
from console.services.apply.check import ApplyCheck
from console.services.apply.intents import ApplyPlan, ResumeApply, UndoApply
from console.services.apply.journal_actions import UndoCheck
from console.services.apply.resume_check import ResumeCheck
from console.services.apply.session import Confirmation, QuietEvents, SessionResult, run_session
from console.services.infra.journal_store import (
    AuditLog,
    JournalStore,
    Unreadable,
    unfinished_lines,
)
from console.services.infra.spark_engine import EngineUnavailable, choose_engine
from console.services.infra.workspace import Workspace
from console.services.read.snapshot_errors import NothingRead

if TYPE_CHECKING:
    from console.config import ClusterConfig, Config
    from console.services.apply.journal_actions import UndoIntent
    from console.services.apply.progress import ApplyProgress
    from console.services.apply.session import ApplyEvents, Intent, WriteCheck
    from console.services.infra.spark_jobs import JobProgress
    from console.services.read.reader import ClusterReader


REFUSED = 2


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
    p.add_argument("--confirm", action="append", metavar="GROUP", help="the group name(s), typed")
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
    target = resolve_target(args)
    _offer_unfinished(target)
    return write_in_terminal(args, target, ApplyPlan(args.plan, max_age_s=args.max_age * 60))


def _undo(args: argparse.Namespace) -> int:
    target = resolve_target(args)
    planner = _TerminalUndoPlanner(args, target)
    return write_in_terminal(args, target, UndoApply(args.apply_id, planner))


def _resume(args: argparse.Namespace) -> int:
    target = resolve_target(args)
    return write_in_terminal(args, target, ResumeApply(args.apply_id))


def write_in_terminal(
    args: argparse.Namespace,
    target: Target,
    intent: Intent,
    *,
    also: ApplyEvents | None = None,
) -> int:
    """Run `intent` as an apply session in this terminal: the check printed, the confirmation
    from `--confirm` (or asked on the terminal), the writes' progress on stderr, the journal
    printed (or as JSON); the exit code. `also` is told every event too (a walkthrough's flow)."""
    return write_in_terminal_result(args, target, intent, also=also).exit_code


def write_in_terminal_result(
    args: argparse.Namespace,
    target: Target,
    intent: Intent,
    *,
    also: ApplyEvents | None = None,
) -> SessionResult:
    terminal = _Terminal(args, target)
    events: ApplyEvents = terminal if also is None else _Both(terminal, also)

    async def go() -> SessionResult:
        terminal.stop = asyncio.Event()
        try:
            return await run_session(
                target.cluster, target.config, intent, terminal.confirm, events, terminal.stop
            )
        finally:
            terminal.forget_ctrl_c()

    with _narration(args):
        result = asyncio.run(go())
        j = result.journal
        if not result.written and j is not None:
            print(f"{j.kind} {j.apply_id}: {_nothing_left(j)}")
    if result.journal is not None and result.journal_path is not None:
        if args.json:
            dump_json(result.journal.to_json())
        else:
            _print_journal(result.journal, Path(result.journal_path))
    return result


class _Terminal(QuietEvents):
    """The apply session in a terminal: what it found, asked and did, as `apply` prints it."""

    def __init__(self, args: argparse.Namespace, target: Target) -> None:
        self.args = args
        self.target = target
        #: Set by ctrl-c once the write is confirmed (console/services/apply/session.py).
        self.stop = asyncio.Event()
        #: The kinds of wait already named on stderr (not a terminal: one line each).
        self.waits_told: list[str] = []
        self._ctrl_c: asyncio.AbstractEventLoop | None = None

    def confirmed(self, accept_drift: bool) -> None:
        # From here ctrl-c stops the session instead of the command: no more writes go out,
        # what was sent is read back and recorded. Before, it ends the command (nothing was
        # written). Only the main thread can take a signal.
        if threading.current_thread() is threading.main_thread():
            loop = asyncio.get_running_loop()
            loop.add_signal_handler(signal.SIGINT, self.stop.set)
            self._ctrl_c = loop

    def forget_ctrl_c(self) -> None:
        if self._ctrl_c is not None:
            self._ctrl_c.remove_signal_handler(signal.SIGINT)
            self._ctrl_c = None

    def checked(self, check: WriteCheck) -> None:
        for line in check_lines(check, self.target):
            print(line)

    async def confirm(self, check: WriteCheck) -> Confirmation | None:
        """The group names typed: given with --confirm, or asked on the terminal (after the
        check is printed). Drift not accepted with --accept-drift needs no typing: the session
        refuses it with the queues that moved."""

        accept = bool(self.args.accept_drift)
        if check.has_drift and not accept:
            return Confirmation((), accept_drift=False)
        given: Sequence[str] | None = self.args.confirm
        if given is not None:
            return Confirmation(tuple(given), accept_drift=accept)
        names = check.names
        if not sys.stdin.isatty():
            print(
                "rmq-console: refused: confirm with "
                f"--confirm {' --confirm '.join(names)} (no terminal to ask on)",
                file=sys.stderr,
            )
            return None
        typed: list[str] = []
        for group in names:
            # Asked on the session's own thread, blocking it: ctrl-c at the prompt then ends
            # the command at once (a prompt on another thread would hold the exit until enter).
            answer = _ask(f"type the group name to apply ({group}): ")
            if answer != group:
                return Confirmation((*typed, answer), accept_drift=accept)
            typed.append(answer)
        return Confirmation(tuple(typed), accept_drift=accept)

    def declined(self) -> None:
        print("rmq-console: nothing was written", file=sys.stderr)

    def writing(self, progress: ApplyProgress) -> None:
        _progress(progress, self.waits_told)

    def refused(self, reasons: tuple[str, ...]) -> None:
        for reason in reasons:
            print(redact_text(f"rmq-console: refused: {reason}"), file=sys.stderr)
        print("rmq-console: nothing was written", file=sys.stderr)


class _Both(QuietEvents):
    """Every event to the terminal, then to a walkthrough's flow."""

    def __init__(self, first: ApplyEvents, second: ApplyEvents) -> None:
        self.first, self.second = first, second

    def checking(self) -> None:
        self.first.checking()
        self.second.checking()

    def planning(self, progress: JobProgress) -> None:
        self.first.planning(progress)
        self.second.planning(progress)

    def checked(self, check: WriteCheck) -> None:
        self.first.checked(check)
        self.second.checked(check)

    def confirmed(self, accept_drift: bool) -> None:
        self.first.confirmed(accept_drift)
        self.second.confirmed(accept_drift)

    def declined(self) -> None:
        self.first.declined()
        self.second.declined()

    def writing(self, progress: ApplyProgress) -> None:
        self.first.writing(progress)
        self.second.writing(progress)

    def applied(self, journal: Journal, journal_path: str) -> None:
        self.first.applied(journal, journal_path)
        self.second.applied(journal, journal_path)

    def refused(self, reasons: tuple[str, ...]) -> None:
        self.first.refused(reasons)
        self.second.refused(reasons)


class _TerminalUndoPlanner:
    """Plans an undo as `plan` would, printing the plan; the plan's URI."""

    def __init__(self, args: argparse.Namespace, target: Target) -> None:
        self.args = args
        self.target = target

    async def __call__(
        self,
        cluster: ClusterConfig,
        config: Config,
        reader: ClusterReader,
        undo: UndoIntent,
        progress: Callable[[JobProgress], object],
    ) -> str:
        for note in undo.notes:
            print(note, file=sys.stderr if note.startswith("warning:") else sys.stdout)
        return await asyncio.to_thread(self._plan, cluster, config, undo)

    def _plan(self, cluster: ClusterConfig, config: Config, undo: UndoIntent) -> str:
        args, target = self.args, self.target
        try:
            engine = choose_engine(
                args.master, config.spark_master, local_fallback=args.local_fallback
            )
        except EngineUnavailable as exc:
            raise Refused([str(exc)]) from None
        workspace = Workspace(config.workspace_path)
        try:
            flow, failure = run_plan(target, workspace, engine, cluster.name, undo.spec)
        except NothingRead as exc:
            raise Refused([f"the cluster could not be read for the undo's plan: {exc}"]) from None
        code, result = finish_plan(flow, failure, workspace, as_json=False)
        if result is None or code != 0:
            raise Refused(["the undo's plan is not whole: nothing was written"])
        return result.uri


def check_lines(check: WriteCheck, target: Target) -> list[str]:
    """What an apply, an undo or a resume would do, one fact a line, with the mqadmin lines
    that would do the same: what the terminal shows before asking."""

    if isinstance(check, UndoCheck):
        return _plan_check_lines(check.check, target)
    if isinstance(check, ApplyCheck):
        return _plan_check_lines(check, target)
    assert isinstance(check, ResumeCheck)
    lines = check.lines()
    moves = [
        (w.row.group, w.row.topic, w.broker_addr, w.row.queue_id, w.target) for w in check.writes
    ]
    if moves:
        lines.append("the same with mqadmin:")
        resets = queue_resets(target.cluster.namesrv, moves)
        lines += [f"  {line}" for line in with_tls(resets, target.cluster.tls)]
    return lines


def _plan_check_lines(check: ApplyCheck, target: Target) -> list[str]:
    h = check.plan.header
    changed = check.changed
    lines = [f"plan {h.plan_id} on cluster {target.cluster.name} ({len(changed)} queues change)"]
    for t in h.totals:
        if t.topic is None:
            lines.append(
                f"  {t.group}: re-consume {t.re_consume}, skip {t.skip}, lag after {t.lag_after}"
            )
    for g in check.groups:
        online = f"{g.consumers_online} consumer(s) online" if g.consumers_online else "offline"
        lines.append(f"reset path for {g.group} ({online}): {g.path.kind} - {g.path.reason}")
        planned = g.planned_path
        if planned is not None and planned.kind is not g.path.kind:
            lines.append(f"  the plan said {planned.kind}: the cluster changed since")
    also = len(check.writes) - len(changed)
    if also:
        lines.append(
            f"the client push also moves {also} queue(s) the plan leaves unchanged (every queue "
            "of a topic on a broker): they are journaled and read back too"
        )
    lines += [f"warning: {r.line}" for r in check.reclamped]
    if check.drift:
        lines.append(f"drift: {len(check.drift)} queue(s) moved since the plan was made")
        lines += [f"  {d.line()}" for d in check.drift]
    lines.append("the same with mqadmin:")
    brokers = {w.row.broker: w.broker_addr for w in check.writes}
    rows = [w.row for w in changed]
    commands = plan_resets(h, rows, target.cluster.namesrv, brokers, limit=10)
    lines += [f"  {line}" for line in with_tls(commands, target.cluster.tls)]
    return lines


def _nothing_left(j: Journal) -> str:
    """Why a resume of `j` writes nothing: every queue is done, verified or not."""
    past = j.count(QueueState.PAST_TARGET)
    if not past:
        return "every queue is verified; nothing to write"
    return (
        f"nothing to write: {j.count(QueueState.VERIFIED)} verified, {past} past the target, "
        "the reset not seen (not verified, and left as they are: writing the target again "
        "would move the group back)"
    )


def _ask(prompt: str) -> str:
    try:
        return input(prompt).strip()
    except EOFError:
        return ""


def _narration(args: argparse.Namespace) -> contextlib.AbstractContextManager[object]:
    """With --json, what the command says on the way goes to stderr: stdout holds the JSON."""
    if args.json:
        return contextlib.redirect_stdout(sys.stderr)
    return contextlib.nullcontext()


def _offer_unfinished(target: Target) -> None:
    """Name the applies on the target's cluster a console left part-way, and what to do."""

    root = Workspace(target.config.workspace_path).local_root
    if root is not None:
        read_only = [target.cluster.name] if target.cluster.read_only else []
        for line in unfinished_lines(root, target.cluster.name, read_only=read_only):
            print(f"rmq-console: {line}", file=sys.stderr)


def _progress(p: ApplyProgress, told: list[str]) -> None:
    """The writes' progress on stderr: on a terminal one line kept up to date, with what they
    wait for; elsewhere (a log) a line each time a wait of another kind begins."""
    if sys.stderr.isatty():
        done = f"{p.settled}/{p.total} answered, {p.verified} verified"
        wait = f" · {p.waiting}" if p.waiting else ""
        sys.stderr.write(f"\r\033[K{p.stage}: {done}{wait}")
        if p.stage == "done":
            sys.stderr.write("\n")
        sys.stderr.flush()
        return
    kind = p.waiting.split(" (", 1)[0] if p.waiting else None
    if kind is not None and (not told or told[-1] != kind):
        told.append(kind)
        print(f"rmq-console: {p.waiting}", file=sys.stderr, flush=True)


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


# ---- history ------------------------------------------------------------------------------


def _status(store: JournalStore, j: Journal) -> str:
    """The journal's status, with "running" told apart: a console writing it now, or one that
    died mid-apply ("interrupted": resume or undo it)."""
    if j.status is ApplyStatus.RUNNING and not store.running(j.apply_id):
        return "interrupted"
    return str(j.status)


def _history(args: argparse.Namespace) -> int:
    if args.lag:
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
    audit = AuditLog(root).scan()
    for problem in audit.problems:
        print(redact_text(f"rmq-console: warning: {problem}"), file=sys.stderr)
    unreadable = any("error" in r for r in rows) or bool(audit.problems)
    if args.json:
        dump_json(
            {
                "applies": rows,
                "audit_lines": len(audit.lines),
                "partial": unreadable,
                "warnings": list(audit.problems),
            }
        )
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
    # Something could not be read: the listing is partial, never a clean 0.
    return 1 if unreadable else 0
