"""`rmq-console apply PLAN`, `undo APPLY_ID` and `resume APPLY_ID`: move offsets as a plan says,
put back what an apply wrote, finish an apply that stopped part-way.

Each runs one apply session (console/services/apply/session.py) through the terminal's door
(console/cli/write_door.py): the session reads the cluster (drift, who is online, the reset
path), the door prints what it would do and the equivalent mqadmin commands and collects the
group name (from `--confirm GROUP`, or asked on a terminal), and the session reads the cluster
again, writes through the journal and reads every queue back. Exit codes: 0 every queue
verified; 1 a queue failed or is not verified yet; 2 refused before writing (bad input, a changed
or expired plan, drift, a read-only cluster, consumers online on the offline path, the cluster
moved while the prompt waited, no confirmation).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from console.cli.arguments import target_parent
from console.cli.plan import add_engine_arguments, finish_plan, run_plan
from console.cli.target import Target, resolve_target
from console.cli.write_door import offer_unfinished, write_in_terminal
from console.domain.plan import PLAN_MAX_AGE_MIN
from console.errors import Refused
from console.services.apply.intents import ApplyPlan, ResumeApply, UndoApply
from console.services.infra.spark_engine import EngineUnavailable, choose_engine
from console.services.infra.workspace import Workspace
from console.services.read.snapshot_errors import NothingRead

if TYPE_CHECKING:
    from console.config import ClusterConfig, Config
    from console.services.apply.journal_actions import UndoIntent
    from console.services.infra.spark_jobs import JobProgress
    from console.services.read.reader import ClusterReader


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
    add_replica_wait(p)
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
    add_replica_wait(p)
    p.add_argument("--json", action="store_true", help="print the undo's journal as JSON")
    p.set_defaults(handler=_undo)

    p = sub.add_parser(
        "resume",
        help="finish an apply that stopped part-way (killed, ctrl-c, a broker lost), or write "
        "again what a switch rolled back",
        description="Read every queue the apply did not verify again: one already at its "
        "target is verified without a write, one still at its before-image is written, one "
        "moved by someone else is drift. A queue it verified that the master now holds at its "
        "before-image again (a switch to a replica that had not copied it; see `verify`) is "
        "written again on the master named now, unless a later apply or undo wrote it. "
        "Written in the apply's own journal, and waited for on the replicas.",
        parents=[parent],
    )
    p.add_argument("apply_id", metavar="APPLY_ID", help="the apply to finish (see `history`)")
    p.add_argument("--confirm", action="append", metavar="GROUP", help="the group name(s), typed")
    p.add_argument("--accept-drift", action="store_true", help="write although queues moved")
    add_replica_wait(p)
    p.add_argument("--json", action="store_true", help="print the journal as JSON")
    p.set_defaults(handler=_resume)


def add_replica_wait(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--replica-wait",
        type=float,
        metavar="SECONDS",
        help="after the master reads the write back, wait this long at most for each replica "
        "that could become master to hold it too (default: 15 in controller or DLedger mode, "
        "where a replica copies offsets every 10 s; 0 for a classic slave, which copies them "
        "every 60 s); 0 does not wait and says so",
    )


def _apply(args: argparse.Namespace) -> int:
    target = resolve_target(args)
    offer_unfinished(target)
    intent = ApplyPlan(args.plan, max_age_s=args.max_age * 60)
    return write_in_terminal(args, target, intent).exit_code


def _undo(args: argparse.Namespace) -> int:
    target = resolve_target(args)
    planner = _TerminalUndoPlanner(args, target)
    return write_in_terminal(args, target, UndoApply(args.apply_id, planner)).exit_code


def _resume(args: argparse.Namespace) -> int:
    target = resolve_target(args)
    return write_in_terminal(args, target, ResumeApply(args.apply_id)).exit_code


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
        code, result = finish_plan(flow, failure, as_json=False)
        if result is None or code != 0:
            raise Refused(["the undo's plan is not whole: nothing was written"])
        return result.uri
