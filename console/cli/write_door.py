"""The terminal as a door of the apply session: `apply`, `undo`, `resume` and a walkthrough's
apply run one session each (console/services/apply/session.py) through here.

The session reads the cluster; the door prints the check's description (the same the console's
confirm dialog shows: console/services/apply/check_text.py) with the mqadmin commands that would
do the same, collects the group names (`--confirm GROUP`, or asked on a terminal), shows the
writes' progress on stderr and prints the journal (or it as JSON). Ctrl-c before the
confirmation ends the command (nothing written); after it, it stops the session: no more
writes go out, what was sent is read back and recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from console.cli.render import dump_json
from console.cli.target import Target
from console.domain.journal import ApplyProgress, ApplyStatus, Journal, QueueState
from console.redact import redact_text
from console.services.apply.check_text import describe_check
from console.services.apply.events import (
    Confirmed,
    Declined,
    SessionEvent,
    Tell,
    WriteProgressed,
    WriteRefused,
    tell_all,
)
from console.services.apply.session import Intent, SessionResult, run_session
from console.services.apply.write_check import Confirmation, WriteCheck
from console.services.infra.journal_store import unfinished_lines
from console.services.infra.workspace import Workspace


def write_in_terminal(
    args: argparse.Namespace, target: Target, intent: Intent, *, also: Tell | None = None
) -> SessionResult:
    """Run `intent` as an apply session in this terminal: the check printed, the confirmation
    from `--confirm` (or asked on the terminal), the writes' progress on stderr, the journal
    printed (or as JSON). `also` is told every event too (a walkthrough's flow)."""
    door = TerminalDoor(args, target)
    tell = door.tell if also is None else tell_all(door.tell, also)

    async def go() -> SessionResult:
        door.stop = asyncio.Event()
        try:
            return await run_session(
                target.cluster,
                target.config,
                intent,
                door.confirm,
                tell,
                door.stop,
                replica_wait_s=getattr(args, "replica_wait", None),
            )
        finally:
            door.forget_ctrl_c()

    with narration(args):
        result = asyncio.run(go())
        j = result.journal
        if not result.written and j is not None:
            print(f"{j.kind} {j.apply_id}: {nothing_left(j)}")
    if result.journal is not None and result.journal_path is not None:
        if args.json:
            dump_json(result.journal.to_json())
        else:
            print_journal(result.journal, Path(result.journal_path))
    return result


class TerminalDoor:
    """The apply session in a terminal: what it found, asked and did, as `apply` prints it."""

    def __init__(self, args: argparse.Namespace, target: Target) -> None:
        self.args = args
        self.target = target
        #: Set by ctrl-c once the write is confirmed (console/services/apply/session.py).
        self.stop = asyncio.Event()
        #: The kinds of wait already named on stderr (not a terminal: one line each).
        self.waits_told: list[str] = []
        self._ctrl_c: asyncio.AbstractEventLoop | None = None

    def tell(self, event: SessionEvent) -> None:
        match event:
            case Confirmed():
                self._stop_on_ctrl_c()
            case Declined():
                print("rmq-console: nothing was written", file=sys.stderr)
            case WriteProgressed(progress):
                print_progress(progress, self.waits_told)
            case WriteRefused(reasons):
                for reason in reasons:
                    print(redact_text(f"rmq-console: refused: {reason}"), file=sys.stderr)
                print("rmq-console: nothing was written", file=sys.stderr)

    def _stop_on_ctrl_c(self) -> None:
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

    async def confirm(self, check: WriteCheck) -> Confirmation | None:
        """The check printed; the group names typed: given with --confirm, or asked on the
        terminal. Drift not accepted with --accept-drift needs no typing: the session refuses
        it with the queues that moved."""
        for line in check_lines(check, self.target):
            print(line)
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


def check_lines(check: WriteCheck, target: Target) -> list[str]:
    """The check's description as the terminal prints it before asking: its facts, the drift,
    and the mqadmin commands that would do the same (what blocks is the refusal's to say)."""
    text = describe_check(check, target.cluster)
    lines = [*text.facts, *text.drift]
    if text.mqadmin:
        lines.append("the same with mqadmin:")
        lines += [f"  {line}" for line in text.mqadmin]
    return lines


def nothing_left(j: Journal) -> str:
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


def narration(args: argparse.Namespace) -> contextlib.AbstractContextManager[object]:
    """With --json, what the command says on the way goes to stderr: stdout holds the JSON."""
    if args.json:
        return contextlib.redirect_stdout(sys.stderr)
    return contextlib.nullcontext()


def offer_unfinished(target: Target) -> None:
    """Name the applies on the target's cluster a console left part-way, and what to do."""
    root = Workspace(target.config.workspace_path).local_root
    if root is not None:
        read_only = [target.cluster.name] if target.cluster.read_only else []
        for line in unfinished_lines(root, target.cluster.name, read_only=read_only):
            print(f"rmq-console: {line}", file=sys.stderr)


def print_progress(p: ApplyProgress, told: list[str]) -> None:
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


def print_journal(j: Journal, path: Path) -> None:
    counts = {s: j.count(s) for s in QueueState if j.count(s)}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items())
    what = "apply" if j.undo_of is None else f"undo of {j.undo_of},"
    print(f"{what} {j.apply_id}: {j.status} - {summary} (of {len(j.queues)})")
    if j.stopped_because:
        print(f"stopped: {j.stopped_because}")
    for line in j.replicas:
        print(f"  {line}")
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
    if j.status is ApplyStatus.NOT_COPIED:
        print(f"to check the replicas again: rmq-console verify {j.apply_id}")
    if j.unfinished:
        print(
            f"to finish it: rmq-console resume {j.apply_id}; to put back what it wrote: "
            f"rmq-console undo {j.apply_id}"
        )
