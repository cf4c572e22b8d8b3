"""Garbage collection for a read command: it answers once and exits.

A scan of 10,000 groups builds ~160,000 queue values and their dicts, nearly all of them alive
until the answer is printed. On the interpreter's own schedule (a young collection every 700
net allocations, and the whole heap again each time it has grown by a quarter) that scan ran
~900 young and 7 full collections: 0.6-0.9 s of its 3.6-4.3 s of CPU, measured with
gc.get_stats on a 10,000-group sandbox. They freed nothing that mattered: the process's peak
memory was the same without them (110 MB). So a read collects young objects in batches of
YOUNG and never the whole heap on its own; what reference counting frees (nearly everything) is
freed as before.

Only the reads (console/cli/browse.py) ask for it. The console, `sandbox up` and `demo` run for
hours on the interpreter's schedule (the console's QuietCollector times its full collections).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Net allocations between two young collections (the interpreter's default is 700).
YOUNG = 20_000
#: A full-collection threshold no read reaches: the whole heap is not collected on its own.
NEVER = 1 << 30


@contextmanager
def for_one_answer() -> Iterator[None]:
    """Young collections in batches of YOUNG and no automatic full collection, inside."""
    saved = gc.get_threshold()
    gc.set_threshold(YOUNG, saved[1], NEVER)
    try:
        yield
    finally:
        gc.set_threshold(*saved)
