"""An apply's before-image as a reset spec: what `undo` plans, previews and applies.

Only queues the apply sent a write for are put back. A queue that had no committed offset
before the apply cannot be put back by a write (RocketMQ has no "forget this queue's offset";
only deleting the whole group does that): it is named, never silently skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

from console.domain.journal import Journal, JournalQueue, QueueState
from console.domain.spec import FileOffset, FromFile, ResetSpec, Scope


@dataclass(frozen=True, slots=True)
class UndoSpec:
    spec: ResetSpec | None  # None: nothing the apply wrote can be put back
    #: Written by the apply but with no committed offset before it: left where they are.
    unrestorable: tuple[JournalQueue, ...]
    #: Never sent by the apply (it stopped first): nothing to put back.
    never_sent: tuple[JournalQueue, ...]


def undo_spec(journal: Journal, source: str) -> UndoSpec:
    """The spec that moves every queue `journal` wrote back to its before-image; `source` names
    the journal file in the plan (as a from-file strategy's path)."""
    rows: list[FileOffset] = []
    unrestorable: list[JournalQueue] = []
    never_sent: list[JournalQueue] = []
    for line, q in enumerate(journal.queues, start=1):
        if q.state is QueueState.PENDING:
            never_sent.append(q)
        elif q.before is None:
            unrestorable.append(q)
        else:
            rows.append(FileOffset(line, q.topic, q.broker, q.queue_id, q.before, q.group))
    spec = None
    if rows:
        groups = tuple(sorted({r.group for r in rows if r.group is not None}))
        scope = Scope(journal.cluster, groups, include_retry=True)
        spec = ResetSpec(scope, FromFile(source, tuple(rows)))
    return UndoSpec(spec, tuple(unrestorable), tuple(never_sent))
