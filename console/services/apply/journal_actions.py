"""An apply's journal as the start of another write: the journal of an apply found for an undo
or a resume, and what an undo plans and checks.

- **Undo**: the apply's before-image as a spec (console/domain/undo.py), planned like any reset,
  read against the cluster (check.py) and applied as an apply of its own (kind "undo",
  naming the apply it reverses).
- **Resume**: every queue the journal left unverified read again (resume_check.py) and finished
  in the apply's own journal.

Both are run by the apply session (console/services/apply/session.py, `UndoApply` and
`ResumeApply`). Importing this module loads no planning code (pyarrow).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from console.domain.journal import Journal, JournalError
from console.domain.spec import ResetSpec
from console.domain.undo import undo_spec
from console.errors import Refused
from console.services.infra.journal_store import JournalStore

if TYPE_CHECKING:
    from console.services.apply.check import ApplyCheck, GroupWrites, QueueWrite


def load_applied(root: Path, apply_id: str, cluster: str) -> Journal:
    """The journal of `apply_id`, made on `cluster`; Refused when it is unknown, unreadable or
    another cluster's."""
    try:
        journal = JournalStore(root).load(apply_id)
    except (JournalError, OSError) as exc:
        raise Refused([str(exc)]) from None
    if journal.cluster != cluster:
        raise Refused(
            [f"apply {apply_id} was made on cluster {journal.cluster!r}, not {cluster!r}"]
        )
    return journal


@dataclass(frozen=True, slots=True)
class UndoIntent:
    """What undoing an apply plans, and what the operator should know first (queues that
    cannot be put back, queues the apply never wrote), one line each."""

    spec: ResetSpec
    notes: tuple[str, ...]


def undo_of(journal: Journal, journal_path: str) -> UndoIntent:
    """The spec that puts back what `journal` wrote; Refused when nothing can be."""
    undo = undo_spec(journal, journal_path)
    notes = [
        f"warning: {q.group} {q.topic}/{q.broker}/{q.queue_id} had no committed offset before "
        f"the apply: RocketMQ cannot forget one queue's offset, it stays at {q.target}"
        for q in undo.unrestorable
    ]
    if undo.never_sent:
        notes.append(f"{len(undo.never_sent)} queue(s) were never written by the apply: left alone")
    if undo.spec is None:
        raise Refused([*notes, f"apply {journal.apply_id} wrote no queue that can be put back"])
    back = len(journal.queues) - len(undo.unrestorable) - len(undo.never_sent)
    notes.append(f"undo of {journal.apply_id}: {back} queue(s) back to their before-image")
    return UndoIntent(undo.spec, tuple(notes))


@dataclass(frozen=True, slots=True)
class UndoCheck:
    """The undo's plan read against the cluster, with what the operator should know first."""

    undone: Journal  # the apply being undone
    notes: tuple[str, ...]  # see UndoIntent
    check: ApplyCheck  # the undo's plan read against the cluster

    @property
    def groups(self) -> tuple[GroupWrites, ...]:
        return self.check.groups

    @property
    def writes(self) -> tuple[QueueWrite, ...]:
        return self.check.writes

    @property
    def names(self) -> tuple[str, ...]:
        return self.check.names

    @property
    def has_drift(self) -> bool:
        return self.check.has_drift

    @property
    def blockers(self) -> tuple[str, ...]:
        return self.check.blockers

    def refusals(self, *, accept_drift: bool) -> tuple[str, ...]:
        return self.check.refusals(accept_drift=accept_drift)

    def seen(self) -> dict[str, object]:
        return self.check.seen()
