"""Timing helpers shared by the benchmark modules."""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Callable, Sequence

RUNS = 5


def median_of(runs: int, fn: Callable[[], float]) -> float:
    return statistics.median(fn() for _ in range(runs))


def time_process(
    argv: Sequence[str],
    env: dict[str, str] | None = None,
    check: Callable[[str], object] | None = None,
) -> float:
    """Wall time of one whole process, start to exit; a failing process fails the benchmark,
    and so does an output `check` refuses (it raises), checked after the clock stopped."""
    started = time.perf_counter()
    done = subprocess.run(argv, check=True, capture_output=True, env=env, text=True)
    elapsed = time.perf_counter() - started
    if check is not None:
        check(done.stdout)
    return elapsed
