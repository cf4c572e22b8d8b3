"""Full garbage collections while the keyboard is quiet, not in the middle of a key press.

Textual's strips keep themselves in their own caches, so every repaint leaves cyclic garbage that
only a full (generation 2) collection frees. With a 500-group list refreshing, Python's own
schedule runs one about every second, 50-90 ms each on a busy two-core machine, in the middle of
whatever key is being handled at the time. While the console runs, automatic collections stop at
generation 1 (cheap, a few milliseconds) and the app runs the full one itself: once the keyboard
has been quiet for `quiet_s` and `every_s` have passed since the last one, or after `longest_s`
whatever the keyboard does, so memory stays bounded while a key is held down.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass, field

#: A generation-2 threshold no running program reaches: automatic full collections stop.
_NEVER = 1 << 30


@dataclass
class QuietCollector:
    quiet_s: float = 1.0
    every_s: float = 5.0
    longest_s: float = 60.0
    clock: Callable[[], float] = time.monotonic
    collect: Callable[[], object] = gc.collect
    last_key: float = field(default=float("-inf"), init=False)
    last_full: float = field(init=False)
    _saved: tuple[int, int, int] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.last_full = self.clock()

    def install(self) -> None:
        """Take full collections over from the interpreter (until `uninstall`)."""
        if self._saved is None:
            self._saved = gc.get_threshold()
            gen0, gen1, _ = self._saved
            gc.set_threshold(gen0, gen1, _NEVER)

    def uninstall(self) -> None:
        if self._saved is not None:
            gc.set_threshold(*self._saved)
            self._saved = None

    def key_seen(self) -> None:
        self.last_key = self.clock()

    def tick(self) -> bool:
        """Called a few times a second; True when it ran a full collection."""
        now = self.clock()
        since_full = now - self.last_full
        quiet = now - self.last_key >= self.quiet_s
        if (quiet and since_full >= self.every_s) or since_full >= self.longest_s:
            self.collect()
            self.last_full = self.clock()
            return True
        return False
