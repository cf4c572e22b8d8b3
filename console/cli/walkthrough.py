"""`rmq-console walkthrough NAME -g GROUP`: a guided reset for scripts, tickets and SSH sessions
without the console.

It shows the walkthrough's evidence, asks each step (or takes `--answer STEP=VALUE`), plans the
reset on Spark like `plan`, applies it like `apply` (the cluster read again, confirmed by the
group name or `--confirm`, journaled, read back), shows what the cluster did after, and writes
the report to the workspace's reports/. `--dry-run` stops after the plan.

Exit codes: 0 applied and verified (and, for a group with consumers online, they moved on);
1 not verified, or the consumers did not move past the targets, or a partial read; 2 bad input
(an unknown walkthrough or group, an answer that cannot be used), refused, nothing written.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from console.cli.arguments import target_parent
from console.cli.messages import print_boundaries, read_boundaries_of
from console.cli.plan import add_engine_arguments, finish_plan, future_by_ms, run_plan
from console.cli.render import dump_json
from console.cli.target import Target, resolve_target
from console.cli.write_door import write_in_terminal
from console.domain.boundary_messages import boundary_requests
from console.domain.journal import QueueState
from console.domain.spec import SpecError
from console.domain.walkthrough import Evidence, Step
from console.errors import Refused
from console.redact import redact_text
from console.rocketmq.errors import NotFoundError
from console.services.apply.events import tell_flow
from console.services.apply.intents import ApplyPlan
from console.services.infra.journal_store import operator
from console.services.infra.spark_engine import EngineUnavailable, choose_engine
from console.services.infra.workspace import Workspace
from console.services.plan.load import load_plan, warning_counts
from console.services.read.reader import ClusterReader
from console.services.read.snapshot_errors import NothingRead
from console.services.walkthrough.evidence.answers import check_answer
from console.services.walkthrough.evidence.context import EvidenceContext
from console.services.walkthrough.evidence.registry import gather
from console.services.walkthrough.guided_run import AnswerError, WalkthroughRun, load_walkthroughs
from console.services.walkthrough.report import write_report

BAD_INPUT = 2
#: Changed queues whose boundary messages are read for the report (the plan lists them all).
BOUNDARIES = 60


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "walkthrough",
        help="a guided reset: evidence, questions, plan, confirm, apply, verify, report",
        description="Walk through a common reset (replay since a time, skip a poison message, "
        "drain a flood, copy another group's offsets, put a group back, a retry backlog) with "
        "the evidence for each step. Ends in the standard apply and writes a Markdown report "
        "to the workspace.",
        parents=[target_parent()],
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="the walkthrough (see --list)")
    p.add_argument("-g", "--group", help="the consumer group")
    p.add_argument("--list", action="store_true", help="list the walkthroughs and exit")
    p.add_argument(
        "--answer",
        action="append",
        default=[],
        metavar="STEP=VALUE",
        help="answer a step without being asked (repeatable)",
    )
    p.add_argument(
        "--watch",
        type=float,
        metavar="SECONDS",
        help="seconds evidence watches the group (rates, stuck queues); default: the config's "
        "walkthrough_watch (10)",
    )
    p.add_argument("--dry-run", action="store_true", help="stop after the plan: write nothing")
    p.add_argument("--confirm", action="append", metavar="GROUP", help="the group name, typed")
    p.add_argument("--accept-drift", action="store_true", help="write although queues moved")
    add_engine_arguments(p)
    p.add_argument("--json", action="store_true", help="a JSON summary on stdout")
    p.set_defaults(handler=_walkthrough)


def _walkthrough(args: argparse.Namespace) -> int:
    catalogue = load_walkthroughs()
    for problem in catalogue.problems:
        print(f"rmq-console: walkthrough not loaded: {problem}", file=sys.stderr)
    if args.list:
        for w in catalogue.walkthroughs:
            print(f"{w.name:20} {w.title}")
        return 1 if catalogue.problems else 0  # a file not loaded: the list is not whole
    if not args.name or not args.group:
        return _bad("give a walkthrough NAME and -g GROUP (see --list)")
    walkthrough = catalogue.get(args.name)
    if walkthrough is None:
        return _bad(f"no walkthrough {args.name!r}; known: {', '.join(catalogue.names)}")
    answers = _answers(args.answer, [s.id for s in walkthrough.steps])
    if isinstance(answers, int):
        return answers
    target = resolve_target(args)

    run = WalkthroughRun(walkthrough, target.cluster.name, args.group, _now_ms())
    out = sys.stderr if args.json else sys.stdout
    with contextlib.redirect_stdout(out):
        code = _drive(args, target, run, answers)
    if args.json:
        dump_json(_summary(run, code))
    return code


def _drive(args: argparse.Namespace, target: Target, run: WalkthroughRun, answers: Any) -> int:
    print(f"{run.walkthrough.title} for {run.group} on {run.cluster}")
    if run.walkthrough.summary:
        print(run.walkthrough.summary)
    asked = asyncio.run(_ask(args, target, run, answers))
    if asked is not None:
        return asked
    try:
        spec = run.build_spec()
    except SpecError as exc:
        return _bad(str(exc))
    print(f"\n{run.question()}")
    code = _plan(args, target, run, spec)
    if code is not None:
        return _finish(target, run, code)
    if args.dry_run:
        run.ended = "dry run: stopped after the plan"
        return _finish(target, run, 0)
    code = _apply(args, target, run)
    if run.journal is not None:
        after = asyncio.run(_after(args, target, run))
        if after:
            code = max(code, 1)
    return _finish(target, run, code)


# ---- asking ---------------------------------------------------------------------------------


async def _ask(
    args: argparse.Namespace, target: Target, run: WalkthroughRun, given: dict[str, str]
) -> int | None:
    """The evidence and every answer; an exit code when the walkthrough cannot go on."""

    async with target.reader() as reader:
        ctx = _context(args, target, run, reader)
        try:
            await ctx.offsets()
        except NotFoundError as exc:
            return _bad(str(exc))
        _show(run, await _gather(ctx, run.walkthrough.evidence))
        while (step := run.next_step) is not None:
            text = given.pop(step.id, None)
            from_terminal = False
            if text is None:
                text = _prompt(step)
                from_terminal = text is not None
                if text is None and (step.optional or step.default):
                    text = ""  # no terminal: the default, or all for an optional step
                if text is None:
                    return _bad(
                        f"step {step.id}: {step.ask} (no terminal to ask on: give "
                        f"--answer {step.id}=VALUE)"
                    )

            try:
                answer = await check_answer(ctx, step.id, text)
            except AnswerError as exc:
                print(f"  not usable: {exc}", file=sys.stderr)
                if not from_terminal:
                    return _bad(f"step {step.id}: {exc}; nothing was planned")
                continue
            run.take(step, answer)
            print(f"  {step.id}: {run.answers[step.id].shown}")
            _show(run, await _gather(ctx, step.evidence))
    return None


def _prompt(step: Step) -> str | None:
    if not sys.stdin.isatty():
        return None
    print(f"\n{step.ask}")
    if step.why:
        print(f"  ({step.why})")
    for i, o in enumerate(step.options, 1):
        print(f"  {i}. {o.label}")
    default = f" [{step.default}]" if step.default else ""
    try:
        return input(f"{step.id}{default}> ")
    except EOFError:
        return None


async def _gather(ctx: EvidenceContext, names: Sequence[str]) -> list[Evidence]:
    return await gather(ctx, names)


def _show(run: WalkthroughRun, evidence: Sequence[Evidence]) -> None:
    run.show(evidence)
    for e in evidence:
        print(f"\n== {e.title}")
        for line in e.lines:
            print(f"  {line}")


def _context(
    args: argparse.Namespace, target: Target, run: WalkthroughRun, reader: ClusterReader
) -> EvidenceContext:
    config = target.config
    if args.watch is not None:
        config = replace(config, walkthrough_watch=args.watch)
    return EvidenceContext.of(reader, run, config)


# ---- planning and applying ------------------------------------------------------------------


def _plan(args: argparse.Namespace, target: Target, run: WalkthroughRun, spec: Any) -> int | None:
    """Plan the spec as `plan` does; the exit code when there is no plan to apply."""

    if future_by_ms(spec, _now_ms()) is not None:
        return _bad("the time lies in the future: no message is stored there yet")
    try:
        engine = choose_engine(
            args.master, target.config.spark_master, local_fallback=args.local_fallback
        )
    except EngineUnavailable as exc:
        run.ended = str(exc)
        print(f"rmq-console: {exc}", file=sys.stderr)
        return 1
    workspace = Workspace(target.config.workspace_path)
    try:
        flow, failure = run_plan(target, workspace, engine, target.cluster.name, spec)
    except NothingRead as exc:
        run.ended = f"the cluster could not be read for the plan: {exc}"
        print(f"rmq-console: no plan: {run.ended}", file=sys.stderr)
        return 2
    run.flow = flow
    code, result = finish_plan(flow, failure, as_json=False)
    if result is None:
        run.ended = f"no plan: {flow.error or failure or flow.stage}"
        return code
    run.plan_header, run.plan_uri = result.header, result.uri
    run.warnings = warning_counts(result.uri)
    try:
        plan = load_plan(workspace, result.uri, cluster=target.cluster.name, now_ms=_now_ms())
    except Refused as exc:
        run.ended = "; ".join(exc.reasons)
        return 2
    run.plan_rows = tuple(plan.rows)
    run.loaded_plan = plan

    # What the group reads first after the reset (and, for a skip, what it gives up last).
    run.boundaries = tuple(read_boundaries_of(target, boundary_requests(plan.rows)[:BOUNDARIES]))
    print_boundaries(run.boundaries)
    if code != 0:
        run.ended = "the plan is partial: not applied"
        return code
    return None


def _apply(args: argparse.Namespace, target: Target, run: WalkthroughRun) -> int:
    plan, flow = run.loaded_plan, run.flow
    assert plan is not None, "applied only after a plan"
    assert flow is not None
    apply_args = argparse.Namespace(
        json=False, confirm=args.confirm, accept_drift=args.accept_drift
    )
    flow.begin_apply()
    result = write_in_terminal(apply_args, target, ApplyPlan(plan), also=tell_flow(flow))
    if result.journal is None:
        run.ended = "refused before writing: nothing was written"
    else:
        run.journal, run.journal_path = result.journal, result.journal_path
    return result.exit_code


async def _after(args: argparse.Namespace, target: Target, run: WalkthroughRun) -> bool:
    """The after-evidence; True when it shows a problem (consumers that did not move on, or
    what could not be read)."""
    if not run.walkthrough.after:
        return False
    async with target.reader() as reader:
        ctx = _context(args, target, run, reader)
        after = await _gather(ctx, run.walkthrough.after)
    run.after = after
    for e in after:
        print(f"\n== {e.title}")
        for line in e.lines:
            print(f"  {line}")
    return any(e.missing or e.values.get("not_moved") for e in after if e.name == "moved-on")


def _finish(target: Target, run: WalkthroughRun, code: int) -> int:
    where = write_report(
        run, Workspace(target.config.workspace_path), who=operator(), now_ms=_now_ms()
    )
    run.report_path = where
    print(f"\nreport {where}")
    return code


# ---- small pieces -----------------------------------------------------------------------------


def _answers(given: Sequence[str], steps: Sequence[str]) -> dict[str, str] | int:
    out: dict[str, str] = {}
    for item in given:
        step, sep, value = item.partition("=")
        if not sep or step not in steps:
            return _bad(
                f"--answer {item!r}: expected STEP=VALUE with STEP one of {', '.join(steps)}"
            )
        out[step] = value
    return out


def _summary(run: WalkthroughRun, code: int) -> dict[str, Any]:
    j = run.journal
    return {
        "walkthrough": run.walkthrough.name,
        "cluster": run.cluster,
        "group": run.group,
        "question": run.question(),
        "answers": {k: a.shown for k, a in run.answers.items()},
        "evidence": [
            {"name": e.name, "lines": list(e.lines), "missing": list(e.missing)}
            for e in [*run.evidence, *run.after]
        ],
        "plan": run.plan_header.plan_id if run.plan_header else None,
        "apply": j.apply_id if j else None,
        "status": str(j.status) if j else None,
        "verified": j.count(QueueState.VERIFIED) if j else 0,
        "queues": len(j.queues) if j else 0,
        "ended": run.ended,
        "report": run.report_path,
        "exit": code,
    }


def _bad(message: str) -> int:
    print(redact_text(f"rmq-console: error: {message}"), file=sys.stderr)
    return BAD_INPUT


def _now_ms() -> int:
    return int(time.time() * 1000)
