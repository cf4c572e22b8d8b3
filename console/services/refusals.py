"""`Refused`: a write (or a plan it needs) that cannot go ahead; nothing was written.

Kept in a module of its own, with nothing heavy imported, so that every door can name it without
loading planning code (pyarrow) or the wire client.
"""

from __future__ import annotations

from collections.abc import Sequence

from console.errors import UserError


class Refused(UserError):
    """Refused before anything was written. `reasons` are one line each."""

    def __init__(self, reasons: Sequence[str]) -> None:
        self.reasons = tuple(reasons)
        super().__init__("; ".join(self.reasons))
