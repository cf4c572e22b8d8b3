"""What an apply session tells its door, as values: one protocol for every door.

A session (console/services/apply/session.py) calls one `Tell` with each event as it happens, in
this order (any of them may never come): `CheckStarted`, `UndoPlanProgressed` (an undo's plan
job), `Checked`, `Confirmed` or `Declined`, `WriteProgressed`, `Applied`; `WriteRefused` ends
it at any point before a write. The terminal prints them, the console posts them to its screens
as one message, a reset's flow (console/services/plan/preview_flow.py) moves its stage on them;
a door that renders two of these at once tells both (`tell_all`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from console.domain.journal import ApplyProgress, Journal
    from console.services.apply.write_check import WriteCheck
    from console.services.infra.spark_jobs import JobProgress
    from console.services.plan.preview_flow import ResetFlow


@dataclass(frozen=True, slots=True)
class CheckStarted:
    """The intent is prepared and the cluster read; nothing is written."""


@dataclass(frozen=True, slots=True)
class UndoPlanProgressed:
    """An undo's plan job under way (an undo's only)."""

    progress: JobProgress


@dataclass(frozen=True, slots=True)
class Checked:
    """What the cluster holds before anything is written, for the operator to confirm."""

    check: WriteCheck


@dataclass(frozen=True, slots=True)
class Confirmed:
    """The answer confirmed the write: the cluster is read again, then written."""

    accept_drift: bool


@dataclass(frozen=True, slots=True)
class Declined:
    """The operator cancelled: nothing was written."""


@dataclass(frozen=True, slots=True)
class WriteProgressed:
    progress: ApplyProgress


@dataclass(frozen=True, slots=True)
class Applied:
    """Written and read back: the journal says what each queue holds."""

    journal: Journal
    journal_path: str


@dataclass(frozen=True, slots=True)
class WriteRefused:
    """The session cannot go on (bad plan, read-only, drift, consumers online on the offline
    path, the cluster moved while confirming ...); nothing was written."""

    reasons: tuple[str, ...]


SessionEvent = (
    CheckStarted
    | UndoPlanProgressed
    | Checked
    | Confirmed
    | Declined
    | WriteProgressed
    | Applied
    | WriteRefused
)

#: How a door is told a session's events.
Tell = Callable[[SessionEvent], object]


def tell_flow(flow: ResetFlow) -> Callable[[SessionEvent], bool]:
    """A reset's flow told the session's events: its stage moves on those of its stage; the
    `Tell` answers whether it moved (one of another stage, or that says nothing of the flow,
    leaves it as it is)."""

    def tell(event: SessionEvent) -> bool:
        match event:
            case Checked():
                return flow.checked()
            case Confirmed(accept_drift):
                return flow.confirmed(accept_drift)
            case Declined():
                return flow.declined()
            case WriteProgressed(progress):
                return flow.writing(progress)
            case Applied(journal, journal_path):
                return flow.applied(journal, journal_path)
            case WriteRefused(reasons):
                return flow.refused(reasons)
        return False

    return tell


def untold(event: SessionEvent) -> None:
    """A door that renders nothing."""


def tell_all(*doors: Tell) -> Tell:
    """One `Tell` that tells each door in turn."""

    def tell(event: SessionEvent) -> None:
        for door in doors:
            door(event)

    return tell
