"""How far an apply session's writes have come: what a door shows while they go out (the writer
reports it, console/services/apply/writer.py; the session passes it on)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ApplyProgress:
    """How far the writes have come: what a door shows while they go out."""

    total: int
    settled: int  # queues with an answer (written, failed, verified ...)
    verified: int
    stage: str  # "writing", "verifying", "done"
    #: What the writes wait for right now, and for how long at most (None: nothing): no wait
    #: of the write path is silent.
    waiting: str | None = None
