"""One write to a cluster, whichever door asks for it: apply a plan, undo an apply, resume one.

The command line (`apply`, `undo`, `resume`, `walkthrough`), the console's preview and its
History screen only render a session's stages and collect the operator's confirmation. Every
guarantee lives here, in `ApplySession.run`, so every door has it:

1. **check**: the intent is prepared (a plan loaded and checked against its hash, cluster and
   age; an undo planned from the apply's journal; a resume's journal read) and read against the
   cluster. Nothing is written. What blocks the write (a broker down, an unreadable queue,
   consumers online on the offline path, a read-only cluster) ends the session here;
2. **confirmation**: the door shows the check and answers with the group names as the operator
   typed them and whether drift is accepted; only every group's name, typed, opens the write;
3. **re-check**: the cluster is read again, after the confirmation however long it took. When
   anything the operator saw has moved (a queue's offset, who is online, the reset path, drift,
   what blocks), nothing is written and the refusal names what moved;
4. **write**: the journal is written with every queue's before-image (read in step 3), the
   writes go out by the reset path, and every queue is read back (console/services/apply/writer.py).

Undo and resume are the same session with another intent: an undo writes the plan that puts the
apply's before-image back (kind "undo"); a resume finishes an apply in its own journal. The
intents are console/services/apply/intents.py's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from console.config import ClusterConfig, Config
from console.domain.journal import ApplyProgress, ApplyStatus, Journal, JournalError, QueueState
from console.errors import Refused
from console.services.apply.events import (
    Applied,
    Checked,
    CheckStarted,
    Confirmed,
    Declined,
    Tell,
    WriteProgressed,
    WriteRefused,
    untold,
)
from console.services.apply.write_check import Confirmation, WriteCheck
from console.services.infra.access import write_refusal
from console.services.infra.journal_store import JournalStore

if TYPE_CHECKING:
    from console.services.apply.write_access import WriteAccess
    from console.services.apply.writer import Applier

#: Exit codes of a session, the same from every door.
VERIFIED_EXIT = 0
NOT_VERIFIED_EXIT = 1
REFUSED_EXIT = 2


#: How a door collects the operator's answer to a check; None: declined.
Confirm = Callable[[WriteCheck], Awaitable[Confirmation | None]]


@dataclass(frozen=True, slots=True)
class SessionResult:
    """How a session ended: a journal (something was written, or resumed), or nothing written
    (refused, with why, or declined)."""

    journal: Journal | None = None
    journal_path: str | None = None
    refused: tuple[str, ...] = ()
    declined: bool = False
    #: False when the journal already said every queue was verified: nothing was written.
    written: bool = True

    @property
    def exit_code(self) -> int:
        """0 every queue verified; 1 some queue not verified (failed, not yet, past the target
        unseen, stopped part-way); 2 nothing written."""
        j = self.journal
        if j is None:
            return REFUSED_EXIT
        whole = j.status is ApplyStatus.FINISHED and j.count(QueueState.VERIFIED) == len(j.queues)
        return VERIFIED_EXIT if whole else NOT_VERIFIED_EXIT


class Intent(Protocol):
    """What a session writes: prepared once, read against the cluster twice (the check and the
    re-check after the confirmation), written once."""

    kind: str

    async def prepare(self, access: WriteAccess, tell: Tell) -> Journal | None:
        """Ready to read; or, when there is nothing left to write, the journal that says so
        (a resume of an apply every queue of which is verified)."""
        ...

    async def read(self, access: WriteAccess) -> WriteCheck: ...

    async def write(
        self,
        applier: Applier,
        check: WriteCheck,
        *,
        accept_drift: bool,
        on_progress: Callable[[ApplyProgress], object],
        stop: asyncio.Event,
    ) -> Journal: ...


class ApplySession:
    """One intent written through one `WriteAccess` (see the module's text for the stages)."""

    def __init__(
        self,
        access: WriteAccess,
        intent: Intent,
        *,
        applier: Callable[[WriteAccess], Applier] | None = None,
        replica_wait_s: float | None = None,
    ) -> None:
        self.access = access
        self.intent = intent
        self._applier = applier
        #: How long the write waits for the replicas (None: by each broker's mode).
        self.replica_wait_s = replica_wait_s

    async def run(
        self, confirm: Confirm, tell: Tell = untold, stop: asyncio.Event | None = None
    ) -> SessionResult:
        try:
            return await self._run(confirm, tell, stop or asyncio.Event())
        except Refused as exc:
            tell(WriteRefused(exc.reasons))
            return SessionResult(refused=exc.reasons)

    async def _run(self, confirm: Confirm, tell: Tell, stop: asyncio.Event) -> SessionResult:
        tell(CheckStarted())
        done = await self.intent.prepare(self.access, tell)
        if done is not None:  # nothing left to write: the journal is the answer
            path = str(JournalStore(self.access.root).path(done.apply_id))
            return SessionResult(done, path, written=False)
        check = await self.intent.read(self.access)
        if check.blockers:
            raise Refused(check.blockers)
        tell(Checked(check))
        answer = await confirm(check)
        if answer is None:
            tell(Declined())
            return SessionResult(declined=True)
        refusals = check.refusals(accept_drift=answer.accept_drift)
        if refusals:
            raise Refused(refusals)
        mistyped = _mistyped(check.names, answer.typed)
        if mistyped is not None:
            raise Refused([mistyped])
        tell(Confirmed(answer.accept_drift))
        fresh = await self.intent.read(self.access)
        if stop.is_set():
            raise Refused([f"stopped on request before the {self.intent.kind} wrote anything"])
        moved = changed(check.seen(), fresh.seen())
        if moved:
            raise Refused(
                [
                    f"the cluster moved while the {self.intent.kind} waited for its "
                    f"confirmation ({len(moved)} change(s)); look at it again:",
                    *moved,
                ]
            )
        applier = self._make_applier()
        try:
            journal = await self.intent.write(
                applier,
                fresh,
                accept_drift=answer.accept_drift,
                on_progress=lambda progress: tell(WriteProgressed(progress)),
                stop=stop,
            )
        except JournalError as exc:  # another console holds the apply's lock
            raise Refused([str(exc)]) from None
        path = str(JournalStore(self.access.root).path(journal.apply_id))
        tell(Applied(journal, path))
        return SessionResult(journal, path)

    def _make_applier(self) -> Applier:
        if self._applier is not None:
            return self._applier(self.access)
        # deferred: the writers (client push, offset writer, client files) load when a session
        # writes, not with the console's first frame (which imports this module)
        from console.services.apply.writer import Applier

        return Applier(self.access, replica_wait_s=self.replica_wait_s)


def _mistyped(names: tuple[str, ...], typed: tuple[str, ...]) -> str | None:
    """Why `typed` does not confirm a write of `names` (None when it does): every name, and
    nothing else."""
    if sorted(typed) == sorted(names):
        return None
    shown = " ".join(typed) if typed else "nothing"
    return f"typed {shown!r}, not {' '.join(sorted(names))!r}: nothing was written"


def changed(confirmed: Mapping[str, object], now: Mapping[str, object]) -> list[str]:
    """One line per fact that differs between what was confirmed and what was read again."""
    lines = []
    for name in sorted(set(confirmed) | set(now), key=str):
        was, is_now = confirmed.get(name, _NOT_THERE), now.get(name, _NOT_THERE)
        if was != is_now:
            lines.append(f"{name}: {_show(was)} when confirmed, {_show(is_now)} now")
    return lines


_NOT_THERE = object()


def _show(value: object) -> str:
    if value is _NOT_THERE:
        return "not there"
    if value is None:
        return "nothing committed"
    if isinstance(value, tuple):
        return "; ".join(_show(v) for v in value) if value else "none"
    return str(value)


#: How a session gets its write access (`open_write_access`,
#: console/services/apply/write_access.py).
OpenAccess = Callable[[ClusterConfig, Config], AbstractAsyncContextManager["WriteAccess"]]


async def run_session(
    cluster: ClusterConfig,
    config: Config,
    intent: Intent,
    confirm: Confirm,
    tell: Tell = untold,
    stop: asyncio.Event | None = None,
    *,
    open_access: OpenAccess | None = None,
    replica_wait_s: float | None = None,
) -> SessionResult:
    """`intent` written to `cluster` as one session, through its write access: a cluster that
    may not be written, or a workspace that is not local, refuses it before anything is
    opened."""
    # deferred: the write access opens the cluster for writing; the console's first frame,
    # which imports this module, never does
    from console.services.apply.write_access import open_write_access

    try:
        refusal = write_refusal(cluster)
        if refusal is not None:
            raise Refused([refusal])
        async with (open_access or open_write_access)(cluster, config) as access:
            session = ApplySession(access, intent, replica_wait_s=replica_wait_s)
            return await session.run(confirm, tell, stop)
    except Refused as exc:
        tell(WriteRefused(exc.reasons))
        return SessionResult(refused=exc.reasons)
