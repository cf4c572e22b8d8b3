"""Which name server to ask: the operator's list in order, the one that answered last first, and
the ones that did not answer lately last.

A name server that did not answer (connection refused, or accepted and silent until the timeout,
or slower than another that answered) is remembered for `REMEMBER_S` seconds and asked only
when every other one fails too, so the calls after the first do not each wait for it. What was
remembered is told once: `news()` hands each name server that did not answer to whoever shows
it (a CLI line on stderr, the console's status line), and `unanswered()` is the state now.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: How long a name server that did not answer is skipped.
REMEMBER_S = 60.0


@dataclass(frozen=True, slots=True)
class Unanswered:
    """A name server that did not answer: why (`timed out`, `connection refused`, ...) and
    which one answered instead (None when none did)."""

    addr: str
    reason: str
    instead: str | None = None

    def line(self) -> str:
        instead = f"; using {self.instead}" if self.instead else ""
        return f"name server {self.addr} did not answer ({self.reason}){instead}"


class NameServers:
    """The order to ask name servers in, learned from their answers (one client's memory)."""

    def __init__(
        self,
        addrs: Sequence[str],
        *,
        remember_for: float = REMEMBER_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not addrs:
            raise ValueError("no name server address given")
        self.addrs = tuple(addrs)
        self.remember_for = remember_for
        self._clock = clock
        self._current = self.addrs[0]
        self._failed: dict[str, tuple[float, Unanswered]] = {}  # addr -> (until, what)
        self._told: set[str] = set()

    @property
    def current(self) -> str:
        """The name server asked first: the one that answered last."""
        return self._current

    def order(self) -> list[str]:
        """Whom to ask, in turn: the current one, the others in the list's order, and those
        that did not answer lately at the end (soonest forgotten first)."""
        now = self._clock()
        start = self.addrs.index(self._current)
        turn = [*self.addrs[start:], *self.addrs[:start]]
        fresh = [a for a in turn if not self._remembered(a, now)]
        skipped = sorted((a for a in turn if self._remembered(a, now)), key=self._until)
        return fresh + skipped

    def answered(self, addr: str) -> None:
        self._current = addr
        self._failed.pop(addr, None)
        for until, what in self._failed.values():
            if what.instead is None:
                self._failed[what.addr] = (until, Unanswered(what.addr, what.reason, addr))

    def failed(self, addr: str, reason: str) -> None:
        instead = self._current if self._current != addr else None
        self._failed[addr] = (self._clock() + self.remember_for, Unanswered(addr, reason, instead))

    def unanswered(self) -> tuple[Unanswered, ...]:
        """The name servers skipped now, in the list's order."""
        now = self._clock()
        return tuple(self._failed[a][1] for a in self.addrs if self._remembered(a, now))

    def news(self) -> tuple[Unanswered, ...]:
        """The name servers skipped now that were not told before; each is told once."""
        new = tuple(u for u in self.unanswered() if u.addr not in self._told)
        self._told.update(u.addr for u in new)
        return new

    def _remembered(self, addr: str, now: float) -> bool:
        entry = self._failed.get(addr)
        return entry is not None and entry[0] > now

    def _until(self, addr: str) -> float:
        return self._failed[addr][0]
