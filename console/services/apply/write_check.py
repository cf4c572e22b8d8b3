"""What a write shows before writing and what the operator answers: the check of an apply, an
undo or a resume (console/services/apply/check.py, resume_check.py, journal_actions.py) as the
session (session.py) and its doors see it, and the confirmation."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from console.services.apply.check import GroupWrites, QueueWrite


@dataclass(frozen=True, slots=True)
class Confirmation:
    """The operator's answer to a check: the group names as typed, and the drift accepted."""

    typed: tuple[str, ...]
    accept_drift: bool = False


class WriteCheck(Protocol):
    """What a session shows before writing (an apply's, an undo's or a resume's check)."""

    @property
    def groups(self) -> tuple[GroupWrites, ...]: ...

    @property
    def writes(self) -> tuple[QueueWrite, ...]: ...

    @property
    def names(self) -> tuple[str, ...]:
        """The group names the operator types to confirm, sorted."""
        ...

    @property
    def has_drift(self) -> bool: ...

    @property
    def blockers(self) -> tuple[str, ...]: ...

    def refusals(self, *, accept_drift: bool) -> tuple[str, ...]: ...

    def seen(self) -> Mapping[str, object]:
        """What the operator confirms, by a name for each fact: read again right before
        writing, every fact must be the same."""
        ...
