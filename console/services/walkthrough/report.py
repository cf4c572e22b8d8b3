"""A walkthrough's report: Markdown to paste into a ticket, written to the workspace's reports/.

It holds the question, every answer as understood (times with their zone), the evidence shown,
the plan, the boundary messages (keys, tags, ids and times: never message bodies), the journal
and what the read-back and the consumers showed after. Secrets never reach it: nothing here
reads credentials, and the text goes through the same mask as every other output.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from console.domain.journal import QueueState
from console.domain.plan import stamp, warning_text
from console.domain.spec import describe
from console.domain.walkthrough import Evidence
from console.redact import redact_text
from console.services.infra import files
from console.services.infra.workspace import Workspace
from console.services.walkthrough.guided_run import WalkthroughRun, local_zone, show_time

REPORTS = "reports"
#: Plan and journal rows listed in full; a bigger plan is summed up and its files named.
LISTED_ROWS = 60


def report_markdown(run: WalkthroughRun, *, who: str, now_ms: int) -> str:
    w = run.walkthrough
    out: list[str] = [
        f"# {w.title}: {run.group} on {run.cluster}",
        "",
        f"**Question:** {run.question()}",
        "",
        f"Walkthrough `{w.name}` run by {who}, {show_time(run.started_at_ms)} to "
        f"{show_time(now_ms)} (times in {local_zone()}).",
        "",
        "## Answers",
        "",
    ]
    for step in w.steps:
        a = run.answers.get(step.id)
        out.append(f"- {step.ask} **{a.shown if a is not None else '(not answered)'}**")
    out += ["", "## Evidence", ""]
    out += _evidence(run.evidence)
    out += ["## Plan", ""]
    out += _plan(run)
    if run.boundaries:
        out += ["## Messages at the boundary", ""]
        out += _boundaries(run.boundaries)
    out += ["## Apply", ""]
    out += _apply(run)
    if run.after:
        out += ["## After the apply", ""]
        out += _evidence(run.after)
    out += ["## Result", "", _result(run), ""]
    return redact_text("\n".join(out))


def write_report(run: WalkthroughRun, workspace: Workspace, *, who: str, now_ms: int) -> str:
    """The report's location (a path for a local workspace, else its URI)."""
    name = f"{stamp(now_ms)}-{run.walkthrough.name}-{_safe(run.group)}.md"
    uri = files.join(workspace.uri, REPORTS, name)
    root = workspace.local_root
    text = report_markdown(run, who=who, now_ms=now_ms)
    if root is not None:
        path = root / REPORTS / name
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".md.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        return str(path)
    files.write_text(uri, text)
    return uri


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def _evidence(items: Iterable[Evidence]) -> list[str]:
    out: list[str] = []
    for e in items:
        out += [f"### {e.title}", "", "```text", *e.lines, "```", ""]
        if e.missing:
            out += [f"Could not be read: {', '.join(e.missing)}.", ""]
    return out


def _plan(run: WalkthroughRun) -> list[str]:
    h = run.plan_header
    if h is None:
        spec = f" (spec: {describe(run.spec.strategy)})" if run.spec is not None else ""
        return [f"No plan was made{spec}.", ""]
    strategy = describe(run.spec.strategy) if run.spec is not None else ""
    out = [
        f"Plan `{h.plan_id}` ({strategy}) from snapshot `{h.snapshot.snapshot_id}` taken "
        f"{show_time(h.snapshot.taken_at_ms)}; content hash `{h.content_hash}`.",
        f"Plan files: `{run.plan_uri}`.",
        "",
        "| group | topic | queues | changed | re-consume | skip | lag after |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for t in h.totals:
        out.append(
            f"| {t.group} | {t.topic or '(all)'} | {t.queues} | {t.changed} | {t.re_consume} "
            f"| {t.skip} | {t.lag_after} |"
        )
    out.append("")
    for code, n in run.warnings.items():
        out.append(f"- warning ({n} queue(s)): {warning_text(code)}")
    for group, path in sorted(h.reset_paths.items()):
        out.append(f"- reset path for {group}: {path.kind}: {path.reason}")
        if path.blocker:
            out.append(f"  - before applying: {path.blocker}")
    changed = [r for r in run.plan_rows if r.changed]
    if changed:
        out += [
            "",
            "| topic | broker | queue | current | target | delta | warnings |",
            "|---|---|---:|---:|---:|---:|---|",
        ]
        for r in changed[:LISTED_ROWS]:
            out.append(
                f"| {r.topic} | {r.broker} | {r.queue_id} | {_n(r.current)} | {_n(r.target)} "
                f"| {_n(r.delta)} | {', '.join(r.warnings)} |"
            )
        if len(changed) > LISTED_ROWS:
            out.append(f"\n… and {len(changed) - LISTED_ROWS} more changed queue(s) in the plan.")
    out.append("")
    return out


def _boundaries(items: Sequence[Any]) -> list[str]:
    out = [
        "| queue | at | role | stored | keys | tags | msg id |",
        "|---|---:|---|---|---|---|---|",
    ]
    for b in items[:LISTED_ROWS]:
        r = b.request
        where = f"{r.topic}/{r.broker}/{r.queue_id}"
        for role, m, note in (
            ("first after", b.first, b.first_note),
            ("last skipped", b.last_skipped, b.last_note),
        ):
            if m is None and note is None:
                continue
            if m is None:
                out.append(f"| {where} | | {role} | {note} | | | |")
                continue
            out.append(
                f"| {where} | {m.queue_offset} | {role} | {show_time(m.store_time_ms)} "
                f"| {' '.join(m.keys)} | {m.tags or ''} | {m.msg_id or m.offset_msg_id} |"
            )
    out += ["", "Message bodies are not written to reports.", ""]
    return out


def _apply(run: WalkthroughRun) -> list[str]:
    j = run.journal
    if j is None:
        return [f"Not applied: {run.ended or 'the walkthrough ended before the apply'}.", ""]
    out = [
        f"Journal `{j.apply_id}` ({j.kind}) at `{run.journal_path or j.apply_id}`: {j.status}, "
        f"by {j.who}, started {show_time(j.started_at_ms)}"
        + (f", finished {show_time(j.finished_at_ms)}" if j.finished_at_ms else "")
        + ".",
    ]
    for group, path in sorted(j.paths.items()):
        out.append(f"Reset path for {group}: {path}.")
    if j.drift_accepted:
        out.append(f"Drift accepted on: {', '.join(j.drift_accepted)}.")
    if j.stopped_because:
        out.append(f"Stopped: {j.stopped_because}.")
    out += [
        "",
        "| topic | broker | queue | before | target | read back | state |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for q in j.queues[:LISTED_ROWS]:
        out.append(
            f"| {q.topic} | {q.broker} | {q.queue_id} | {_n(q.before)} | {q.target} "
            f"| {_n(q.stored)} | {q.state} |"
        )
    if len(j.queues) > LISTED_ROWS:
        out.append(f"\n… and {len(j.queues) - LISTED_ROWS} more queue(s) in the journal.")
    out += ["", f"Undo: `rmq-console undo {j.apply_id} --cluster {run.cluster}`.", ""]
    return out


def _result(run: WalkthroughRun) -> str:
    j = run.journal
    if j is None:
        return f"Nothing was written to the cluster ({run.ended or 'no apply'})."
    verified = j.count(QueueState.VERIFIED)
    if verified == len(j.queues):
        return f"Verified: all {verified} queue(s) read back at their targets."
    counts = ", ".join(
        f"{j.count(s)} {s}" for s in QueueState if j.count(s) and s is not QueueState.VERIFIED
    )
    return f"NOT fully verified: {verified}/{len(j.queues)} verified; {counts}."


def _n(value: int | None) -> str:
    return "unknown" if value is None else str(value)
