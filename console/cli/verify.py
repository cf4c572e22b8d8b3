"""`rmq-console verify APPLY_ID`: whether what an apply wrote still holds now, on each broker's
master (after a switch, the one elected since) and on each replica a switch could elect
(console/services/apply/verify_journal.py). Reads only. Exit codes: 0 every queue holds
everywhere; 1 a queue rolled back, moved, not copied to a replica, or not read; 2 nothing read
or no such apply."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

from console.cli.arguments import target_parent
from console.cli.render import dump_json
from console.cli.target import resolve_target
from console.services.infra.journal_store import JournalStore
from console.services.infra.workspace import Workspace

if TYPE_CHECKING:
    from console.services.apply.verify_journal import Verification

REFUSED = 2


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "verify",
        help="whether what an apply wrote still holds: on the master now and its replicas",
        description="Read every queue an apply verified again, on its broker's master as the "
        "name server names it now (a switch elects another) and on each replica that could "
        "become master: a queue a switch rolled back, or a replica that has not copied the "
        "write yet, is named. Nothing is written.",
        parents=[target_parent()],
    )
    p.add_argument("apply_id", metavar="APPLY_ID", help="the apply to check (see `history`)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=_verify)


def _verify(args: argparse.Namespace) -> int:
    # deferred: the reader and the apply's services load when the command runs
    from console.services.apply.verify_journal import verify_journal
    from console.services.read.open_reader import open_reader

    target = resolve_target(args)
    root = Workspace(target.config.workspace_path).local_root
    if root is None:
        print("rmq-console: the workspace is not on this machine: no journals", file=sys.stderr)
        return REFUSED
    journal = JournalStore(root).load(args.apply_id)

    async def go() -> Verification:
        async with open_reader(target.cluster, target.config) as reader:
            return await verify_journal(reader, journal)

    found = asyncio.run(go())
    if args.json:
        dump_json(
            {
                "apply_id": journal.apply_id,
                "queues": [
                    {
                        **n.queue.to_json(),
                        "master_now": n.master,
                        "stored_now": n.stored,
                        "holds": n.holds,
                        "error": n.error,
                    }
                    for n in found.queues
                ],
                "rolled_back": len(found.rolled_back),
                "not_copied": found.not_copied,
                "replicas": list(found.replicas),
                "unread": list(found.unread),
                "unverified_by_the_apply": found.unverified,
            }
        )
    else:
        for n in found.queues:
            print(n.line())
        for line in found.replicas:
            print(line)
    for line in found.unread:
        print(f"rmq-console: {line}", file=sys.stderr)
    if found.rolled_back:
        back = sum(1 for n in found.rolled_back if n.stored == n.queue.before)
        again = (
            f"`rmq-console resume {journal.apply_id}` writes them again on the master now"
            if back == len(found.rolled_back)
            else f"`rmq-console resume {journal.apply_id}` writes again the {back} back at "
            "their before-image; plan the others again"
        )
        print(
            f"rmq-console: {len(found.rolled_back)} queue(s) no longer hold what apply "
            f"{journal.apply_id} wrote (a switch to a replica that had not copied it): {again}",
            file=sys.stderr,
        )
    if found.unverified:
        print(
            f"rmq-console: {found.unverified} queue(s) the apply did not verify are not "
            "checked here (`rmq-console resume` finishes them)",
            file=sys.stderr,
        )
    return found.exit_code
