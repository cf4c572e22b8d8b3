"""`rmq-console history`: the applies and undos of the workspace, newest last, and how each
ended (what `resume` or `undo` can still do); with `-g GROUP --lag`, a group's lag history
(console/cli/lag_history.py)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from console.cli.arguments import target_parent
from console.cli.lag_history import duration_ms, show_lag_history
from console.cli.render import dump_json, table, timestamp
from console.cli.target import resolve_target
from console.domain.journal import QueueState
from console.redact import redact_text
from console.services.infra.journal_store import AuditLog, JournalStore, Unreadable
from console.services.infra.workspace import Workspace

REFUSED = 2


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "history",
        help="applies and undos of the workspace, newest last; with --lag, a group's lag",
        description="Journals of the workspace: what was applied, by whom, and how it ended. "
        "With -g GROUP --lag: the group's lag as the console recorded it on every refresh, the "
        "applies and undos of that time, and the Burrow evaluation of the window.",
        parents=[target_parent()],
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
    p.set_defaults(handler=show_history)


def show_history(args: argparse.Namespace) -> int:
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
                "status": store.status(e),
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
