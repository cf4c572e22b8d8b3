"""What taking or finding a snapshot refuses, in a module of its own: a door names these without
loading pyarrow (console/services/read/snapshots.py reads and writes the Parquet)."""

from __future__ import annotations

from collections.abc import Sequence

from console.domain.gaps import Gap
from console.errors import UserError


class SnapshotNotFound(UserError, LookupError):
    pass


class NothingRead(UserError):
    """A snapshot of which nothing could be read (every broker refused the signature, or did
    not answer): `gaps` says why. Nothing is saved."""

    def __init__(self, gaps: Sequence[Gap]) -> None:
        self.gaps = tuple(gaps)
        why = "; ".join(g.line() for g in self.gaps[:3]) or "no broker answered"
        super().__init__(f"nothing could be read: {why}")


class GroupNotFound(UserError, LookupError):
    """A group asked for is not in the cluster."""

    def __init__(self, group: str, reason: str) -> None:
        super().__init__(reason)
        self.group = group
