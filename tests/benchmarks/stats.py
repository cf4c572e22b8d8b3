"""Timing helpers shared by the benchmark modules."""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Callable, Sequence

RUNS = 5


def median_of(runs: int, fn: Callable[[], float]) -> float:
    return statistics.median(fn() for _ in range(runs))


def time_process(argv: Sequence[str], env: dict[str, str] | None = None) -> float:
    """Wall time of one whole process, start to exit; a failing process fails the benchmark."""
    started = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, env=env)
    return time.perf_counter() - started
