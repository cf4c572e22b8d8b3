"""What a write's check says, in one description every door renders.

The terminal prints it before asking for the group names (`apply`, `undo`, `resume`, a
walkthrough), the console's confirm dialog shows it: what changes, how much is re-consumed or
skipped and over how much time, the reset path of each group and what it means for consumers
online, the targets raised to a min offset that moved, the drift found, what blocks, and the
mqadmin commands that would do the same. Built here once, so the doors cannot tell two stories.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from console.config import ClusterConfig
from console.domain.durations import age_text
from console.domain.mqadmin import plan_resets, queue_resets, with_tls
from console.domain.plan import PlanRow
from console.services.apply.check import ApplyCheck, GroupWrites
from console.services.apply.journal_actions import UndoCheck
from console.services.apply.resume_check import ResumeCheck
from console.services.apply.write_check import WriteCheck

#: How many mqadmin commands a description lists (the rest are counted).
MQADMIN_LIMIT = 10


@dataclass(frozen=True, slots=True)
class CheckText:
    title: str  # the question asked: "Apply to prod?"
    facts: tuple[str, ...]  # what would happen, one fact a line
    drift: tuple[str, ...]  # a head line, then one line per queue that moved (empty: none)
    blockers: tuple[str, ...]  # what forbids writing, one line each
    mqadmin: tuple[str, ...]  # the same writes as mqadmin commands


def describe_check(check: WriteCheck, cluster: ClusterConfig) -> CheckText:
    if isinstance(check, UndoCheck):
        undone = check.undone.apply_id
        plan = _plan_text(check.check, cluster)
        title = f"Undo {undone} on {cluster.name}?"
        return CheckText(
            title, (*check.notes, *plan.facts), plan.drift, plan.blockers, plan.mqadmin
        )
    if isinstance(check, ApplyCheck):
        return _plan_text(check, cluster)
    assert isinstance(check, ResumeCheck)
    return _resume_text(check, cluster)


def _plan_text(check: ApplyCheck, cluster: ClusterConfig) -> CheckText:
    h = check.plan.header
    changed = check.changed
    groups = sorted({g.group for g in check.groups} or {w.row.group for w in changed})
    facts = [
        f"cluster {cluster.name} ({cluster.colour}) · plan {h.plan_id}",
        f"{len(changed)} queue(s) of {', '.join(groups)} change",
    ]
    facts += [
        f"{t.group}: re-consume {t.re_consume} · skip {t.skip} · lag after {t.lag_after}"
        for t in h.totals
        if t.topic is None
    ]
    facts += span_lines([w.row for w in changed])
    facts += _path_lines(check.groups)
    also = len(check.writes) - len(changed)
    if also:
        facts.append(
            f"the client push also moves {also} queue(s) the plan leaves unchanged (every queue "
            "of a topic on a broker): they are journaled and read back too"
        )
    facts += [f"warning: {r.line}" for r in check.reclamped]
    drift = (
        (
            f"drift: {len(check.drift)} queue(s) moved since the plan was made",
            *(f"  {d.line()}" for d in check.drift),
        )
        if check.drift
        else ()
    )
    brokers = {w.row.broker: w.broker_addr for w in check.writes}
    rows = [w.row for w in changed]
    commands = plan_resets(h, rows, cluster.namesrv, brokers, limit=MQADMIN_LIMIT)
    return CheckText(
        f"Apply to {cluster.name}?",
        tuple(facts),
        drift,
        check.blockers,
        tuple(with_tls(commands, cluster.tls)),
    )


def _resume_text(check: ResumeCheck, cluster: ClusterConfig) -> CheckText:
    j = check.journal
    rolled = {q.key for q in check.rolled_back}
    facts = [
        f"cluster {cluster.name} ({cluster.colour})",
        f"resume {j.apply_id} ({j.status}): {len(j.unfinished)} queue(s) not verified; "
        f"{len(check.arrived)} found at their target, {len(check.writes)} to write",
    ]
    if check.rolled_back:
        masters = ", ".join(sorted({w.broker_addr for w in check.writes if w.key in rolled}))
        facts.append(
            f"{len(check.rolled_back)} queue(s) the apply verified were rolled back by a switch "
            f"(the master holds the offset before the apply again): written again on the "
            f"master now ({masters}), then waited for on its replicas"
        )
    if check.past:
        facts.append(
            f"{len(check.past)} queue(s) found past their target with consumers online: "
            "left as they are, not verified (writing the target again would move them back)"
        )
    facts += _path_lines(check.groups)
    facts += [f"warning: {r.line}" for r in check.reclamped]
    drift = (
        (
            f"drift: {len(check.drift)} queue(s) moved since the apply",
            *(f"  {d.line()}" for d in check.drift),
        )
        if check.drift
        else ()
    )
    moves = [
        (w.row.group, w.row.topic, w.broker_addr, w.row.queue_id, w.target) for w in check.writes
    ]
    commands = queue_resets(cluster.namesrv, moves) if moves else []
    return CheckText(
        f"Resume {j.apply_id} on {cluster.name}?",
        tuple(facts),
        drift,
        check.blockers,
        tuple(with_tls(commands, cluster.tls)),
    )


def _path_lines(groups: Sequence[GroupWrites]) -> list[str]:
    """Each group's reset path now, with who is online, and a word when the plan said
    another."""
    lines = []
    for g in groups:
        online = f"{g.consumers_online} consumer(s) online" if g.consumers_online else "offline"
        lines.append(f"reset path for {g.group} ({online}): {g.path.kind} - {g.path.reason}")
        planned = g.planned_path
        if planned is not None and planned.kind is not g.path.kind:
            lines.append(f"  the plan said {planned.kind}: the cluster changed since")
    return lines


def span_lines(rows: Sequence[PlanRow]) -> list[str]:
    """Per group, how much time of messages the writes replay and skip (the longest over its
    queues, from the store times at the current and target offsets), and on how many queues
    the time is not known."""
    lines = []
    for group in sorted({r.group for r in rows}):
        mine = [r for r in rows if r.group == group]
        replay = [r for r in mine if r.span_ms is not None and r.span_ms > 0]
        skip = [r for r in mine if r.span_ms is not None and r.span_ms < 0]
        unknown = sum(1 for r in mine if r.span_ms is None)
        parts = []
        if replay:
            longest = max(replay, key=lambda r: r.span_ms or 0)
            parts.append(
                f"replays up to {age_text(longest.span_ms)} of messages"
                + _since(min((r.target_time for r in replay if r.target_time), default=None))
            )
        if skip:
            longest = min(skip, key=lambda r: r.span_ms or 0)
            parts.append(f"skips up to {age_text(-(longest.span_ms or 0))} of messages")
        if unknown:
            parts.append(f"time not known on {unknown} queue(s)")
        lines.append(f"{group} time span: {' · '.join(parts) or 'no time moved'}")
    return lines


def _since(at_ms: int | None) -> str:
    if at_ms is None:
        return ""
    return f" (stored since {datetime.fromtimestamp(at_ms / 1000, UTC):%Y-%m-%d %H:%M:%S} UTC)"
