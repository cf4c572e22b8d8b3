"""The apply session's guarantees, whatever door runs it: nothing is written before a
confirmation naming every group; what the operator confirmed is read again after the
confirmation, and a cluster that moved meanwhile is refused with what moved; what blocks ends the
session before anyone is asked. Against the real brokers: tests/integration (the CLI, the
console, the walkthroughs)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from console.domain.journal import ApplyProgress, ApplyStatus, Journal, JournalQueue, QueueState
from console.services.apply.check import ApplyCheck
from console.services.apply.events import (
    Checked,
    Confirmed,
    Declined,
    SessionEvent,
    WriteRefused,
)
from console.services.apply.session import ApplySession
from console.services.apply.write_access import WriteAccess
from console.services.apply.write_check import Confirmation, WriteCheck
from tests.support.checks import drifted_check, plain_check
from tests.support.writes import write_access


class Intent:
    """Reads the checks given, one per read; writes nothing but a verified journal."""

    kind = "apply"

    def __init__(self, *checks: ApplyCheck, done: Journal | None = None) -> None:
        self.checks = list(checks)
        self.done = done
        self.reads = 0
        self.written: list[bool] = []

    async def prepare(self, access: WriteAccess, events: Any) -> Journal | None:
        return self.done

    async def read(self, access: WriteAccess) -> WriteCheck:
        self.reads += 1
        return self.checks.pop(0) if len(self.checks) > 1 else self.checks[0]

    async def write(
        self,
        applier: Any,
        check: WriteCheck,
        *,
        accept_drift: bool,
        on_progress: Callable[[ApplyProgress], object],
        stop: asyncio.Event,
    ) -> Journal:
        self.written.append(accept_drift)
        return journal(QueueState.VERIFIED)


def journal(state: QueueState) -> Journal:
    q = JournalQueue("billing", "orders", "broker-a", "10.1.0.1:10911", 0, 100, 90, state)
    return Journal(
        "20261125T000000000Z-apply-billing-aaaaaa",
        "apply",
        "p",
        "sha256:0",
        "staging",
        {"billing": "server-side reset"},
        "ops@host",
        0,
        (q,),
        ApplyStatus.FINISHED,
    )


class Told:
    """The events a door was told, as short names."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def __call__(self, event: SessionEvent) -> None:
        match event:
            case Checked():
                self.events.append("checked")
            case Confirmed(accept_drift):
                self.events.append(f"confirmed {accept_drift}")
            case Declined():
                self.events.append("declined")
            case WriteRefused():
                self.events.append("refused")


def answering(*typed: str, accept_drift: bool = False) -> Any:
    async def confirm(check: WriteCheck) -> Confirmation:
        return Confirmation(typed, accept_drift)

    return confirm


def session(tmp_path: Path, intent: Intent) -> ApplySession:
    applier: Any = lambda access: None  # noqa: E731 (the intent writes)
    return ApplySession(write_access(None, tmp_path, "staging"), intent, applier=applier)


async def test_a_confirmed_apply_is_read_again_then_written(tmp_path: Path) -> None:
    intent, told = Intent(plain_check()), Told()
    result = await session(tmp_path, intent).run(answering("billing"), told)
    assert intent.reads == 2  # the check, and again after the confirmation
    assert intent.written == [False]
    assert told.events == ["checked", "confirmed False"]
    assert result.exit_code == 0


async def test_a_name_mistyped_writes_nothing(tmp_path: Path) -> None:
    intent = Intent(plain_check())
    result = await session(tmp_path, intent).run(answering("biling"))
    assert result.refused == ("typed 'biling', not 'billing': nothing was written",)
    assert (intent.written, result.exit_code) == ([], 2)


async def test_a_cluster_that_moved_while_confirming_is_refused_with_what_moved(
    tmp_path: Path,
) -> None:
    check = plain_check()
    moved = check.writes[0]
    was = replace(moved, before=7)  # a second writer set the queue to 7 meanwhile
    group = replace(check.groups[0], writes=(was, *check.writes[1:]))
    intent = Intent(check, replace(check, groups=(group,)))
    result = await session(tmp_path, intent).run(answering("billing"))
    assert intent.written == []
    head, *lines = result.refused
    assert head.startswith("the cluster moved while the apply waited for its confirmation")
    assert lines == ["billing orders/broker-a/0: offset: 100 when confirmed, 7 now"]


async def test_drift_is_written_only_when_accepted(tmp_path: Path) -> None:
    intent = Intent(drifted_check())
    refused = await session(tmp_path, intent).run(answering("billing"))
    assert "1 queue(s) moved since the plan was made" in refused.refused[0]
    assert intent.written == []
    accepted = await session(tmp_path, intent).run(answering("billing", accept_drift=True))
    assert (intent.written, accepted.exit_code) == ([True], 0)


async def test_what_blocks_ends_the_session_before_anyone_is_asked(tmp_path: Path) -> None:
    blocked = replace(plain_check(), blockers=("broker broker-b is not registered",))
    asked: list[WriteCheck] = []

    async def confirm(check: WriteCheck) -> Confirmation:
        asked.append(check)
        return Confirmation(("billing",))

    result = await session(tmp_path, Intent(blocked)).run(confirm)
    assert (asked, result.refused) == ([], ("broker broker-b is not registered",))


async def test_declined_writes_nothing(tmp_path: Path) -> None:
    async def cancel(check: WriteCheck) -> None:
        return None

    intent, told = Intent(plain_check()), Told()
    result = await session(tmp_path, intent).run(cancel, told)
    assert (result.declined, result.exit_code, intent.written) == (True, 2, [])
    assert told.events == ["checked", "declined"]


async def test_nothing_left_to_write_is_the_journal_as_it_stands(tmp_path: Path) -> None:
    done = journal(QueueState.VERIFIED)
    intent = Intent(plain_check(), done=done)
    result = await session(tmp_path, intent).run(answering())
    assert (result.journal, result.written, result.exit_code) == (done, False, 0)
    assert intent.reads == 0


def test_the_exit_code_says_whether_every_queue_was_proved() -> None:
    from console.services.apply.session import SessionResult

    past = journal(QueueState.PAST_TARGET)
    assert SessionResult(past, "j").exit_code == 1
    assert SessionResult(journal(QueueState.VERIFIED), "j").exit_code == 0
    assert SessionResult(refused=("no",)).exit_code == 2
