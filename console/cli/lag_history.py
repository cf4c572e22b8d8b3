"""`rmq-console history -g GROUP --lag [--since 1h|24h] [--json]`: the group's lag as the console
recorded it on every refresh (the workspace's lag history), with the applies and undos of the
window and its Burrow evaluation.

Exit codes: 0; 1 when the newest sample of the window is partial or unknown (the lag it ends on
is a lower bound, or nothing could be read then); 2 when the window holds no sample, the
workspace is not on this machine, or on bad input. Lines of the history that could not be read
are named on stderr and do not change the exit code.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from datetime import datetime
from typing import Any

from console.cli.render import dump_json, table
from console.cli.target import resolve_target
from console.domain.lag import LagPoint, Mark
from console.domain.triage import Verdict
from console.services.read.lag_history import HOUR_MS, LagHistory, local_root
from console.services.read.lag_report import LagReport, lag_report

DEFAULT_SINCE_MS = HOUR_MS
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
PARTIAL = 1
NOTHING = 2


def duration_ms(text: str) -> int:
    """`90m`, `1h`, `24h`, `7d` as milliseconds (argparse's type for --since)."""
    m = _DURATION.fullmatch(text.strip())
    if not m or float(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration like 90m, 1h, 24h or 7d")
    return int(float(m.group(1)) * _UNIT_MS[m.group(2)])


def local_iso(ms: int) -> str:
    """Epoch ms as this machine's local time with its UTC offset: 2026-11-22 03:01:01+01:00."""
    return datetime.fromtimestamp(ms / 1000).astimezone().isoformat(sep=" ", timespec="seconds")


def lag_text(p: LagPoint) -> str:
    """A total as the operator must read it: `≥N` when parts were missing, `unknown` when
    nothing could be read."""
    if p.total_lag is None:
        return "unknown"
    return f"≥{p.total_lag}" if p.partial else str(p.total_lag)


def show_lag_history(args: argparse.Namespace) -> int:
    if not args.group:
        print("rmq-console: error: --lag needs -g GROUP", file=sys.stderr)
        return NOTHING
    target = resolve_target(args)
    root = local_root(target.config.workspace_path)
    if root is None:
        print("rmq-console: the workspace is not on this machine: no lag history", file=sys.stderr)
        return NOTHING
    now = int(time.time() * 1000)
    since = args.since if args.since is not None else DEFAULT_SINCE_MS
    report = lag_report(
        LagHistory(root),
        target.cluster.name,
        args.group,
        since_ms=now - since,
        until_ms=now,
        journals=root,
    )
    if args.json:
        dump_json(report_document(report))
    else:
        _print_report(report)
    skipped = report.series.skipped
    if skipped:
        print(
            f"rmq-console: {skipped} line(s) of the lag history of {args.group} could not be "
            "read (cut short by a console killed mid-write, or edited) and were skipped: "
            f"{LagHistory(root).path(target.cluster.name, args.group)}",
            file=sys.stderr,
        )
    if not report.series.points:
        print(
            f"rmq-console: no lag history of group {args.group} on {target.cluster.name} since "
            f"{local_iso(now - since)} (the console keeps it on every refresh of the group)",
            file=sys.stderr,
        )
        return NOTHING
    return PARTIAL if report.partial else 0


def _print_report(report: LagReport) -> None:
    points = report.series.points
    partial = sum(1 for p in points if p.partial and p.total_lag is not None)
    unknown = sum(1 for p in points if p.total_lag is None)
    counts = f"{len(points)} samples" + (f", {partial} partial" if partial else "")
    counts += f", {unknown} unknown" if unknown else ""
    print(
        f"group {report.group} on {report.cluster}  from {local_iso(report.since_ms)} "
        f"to {local_iso(report.until_ms)}  {counts}"
    )
    v = report.verdict
    print(f"{v.status.value}  {v.reason}")
    if v.rule:
        print(f"rule: {v.rule}")
    if not points:
        return
    table(
        ["TIME", "LAG", "ONLINE", "MISSING"],
        [[local_iso(p.at_ms), lag_text(p), p.online, ", ".join(p.missing) or None] for p in points],
    )
    if report.marks:
        print()
        table(
            ["APPLIED", "KIND", "APPLY", "STATUS", "VERIFIED"],
            [
                [local_iso(m.at_ms), m.kind, m.apply_id, m.status, f"{m.verified}/{m.queues}"]
                for m in report.marks
            ],
        )


def report_document(report: LagReport) -> dict[str, Any]:
    """`history --lag --json`: every point with its queues; totals null when unknown, lower
    bounds when `partial`."""
    return {
        "cluster": report.cluster,
        "group": report.group,
        "since": local_iso(report.since_ms),
        "until": local_iso(report.until_ms),
        "since_ms": report.since_ms,
        "until_ms": report.until_ms,
        "partial": report.partial,
        "samples": len(report.series.points),
        "skipped_lines": report.series.skipped,
        "evaluation": verdict_document(report.verdict),
        "points": [point_document(p) for p in report.series.points],
        "marks": [mark_document(m) for m in report.marks],
    }


def verdict_document(v: Verdict) -> dict[str, Any]:
    return {
        "status": v.status.value,
        "reason": v.reason,
        "rule": v.rule,
        "complete": v.complete,
        "partial": v.partial,
        "queue": None
        if v.queue is None
        else {"topic": v.queue[0], "broker": v.queue[1], "queue": v.queue[2]},
    }


def point_document(p: LagPoint) -> dict[str, Any]:
    return {
        "at": local_iso(p.at_ms),
        "at_ms": p.at_ms,
        "total_lag": p.total_lag,
        "partial": p.partial,
        "missing": list(p.missing),
        "online": p.online,
        "client_local": p.client_local,
        # False: an old point whose per-queue detail was thinned away (`queues` is then null).
        "detailed": p.detailed,
        "queues": [
            {
                "topic": q.topic,
                "broker": q.broker,
                "queue": q.queue_id,
                "committed": q.committed,
                "max": q.max_offset,
                "lag": q.lag,
            }
            for q in p.queues
        ]
        if p.detailed
        else None,
    }


def mark_document(m: Mark) -> dict[str, Any]:
    return {
        "at": local_iso(m.at_ms),
        "at_ms": m.at_ms,
        "kind": m.kind,
        "apply_id": m.apply_id,
        "status": m.status,
        "queues": m.queues,
        "verified": m.verified,
    }
