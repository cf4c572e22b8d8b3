"""Lag history benchmarks (files only, no cluster):

- `lag_record_500_groups_ms`: one refresh of a 500-group list stored (16 queues a group), the
  work the group list's refresh thread adds per refresh (target < 100).
- `lag_day_report_ms`: the chart's day window read cold from a file at its bound (a day of 5 s
  refreshes of a 16-queue group, compacted), with the journals and the Burrow evaluation
  (target < 1000; it runs on a worker thread).
- `lag_day_file_kib`: that file's size (bounded by 1 MiB).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from console.domain.offsets import Client, GroupOffsets, QueueOffsets
from console.services.read.lag_history import DAY_MS, LagHistory
from console.services.read.lag_report import lag_report

GROUPS = 500
QUEUES = 16
RUNS = 5
REFRESH_MS = 5_000
T0 = 1_700_000_000_000
ONLINE = (Client("c1", "10.0.0.1:1", "JAVA", 479),)


def read(group: str, i: int) -> GroupOffsets:
    queues = tuple(
        QueueOffsets("orders", f"broker-{q % 2}", q // 2, 0, 10_000 + i * 7, 9_000 + i * 5)
        for q in range(QUEUES)
    )
    return GroupOffsets(group, T0, queues, clients=ONLINE)


def run() -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="rmq-bench-lag-") as tmp:
        root = Path(tmp)
        history = LagHistory(root)
        reads = [read(f"group-{g:03d}", 0) for g in range(GROUPS)]
        times = []
        for i in range(RUNS):
            started = time.perf_counter()
            history.record("bench", reads, T0 + i * REFRESH_MS)
            times.append((time.perf_counter() - started) * 1000)

        day = LagHistory(root)
        for i in range(DAY_MS // REFRESH_MS):
            day.record("bench", [read("busy", i)], T0 + i * REFRESH_MS)
        now = T0 + DAY_MS
        reports = []
        for _ in range(RUNS):
            cold = LagHistory(root)  # nothing cached: the first toggle to the day window
            started = time.perf_counter()
            lag_report(cold, "bench", "busy", since_ms=now - DAY_MS, until_ms=now, journals=root)
            reports.append((time.perf_counter() - started) * 1000)
        size = day.path("bench", "busy").stat().st_size
    return {
        "lag_record_500_groups_ms": statistics.median(times),
        "lag_day_report_ms": statistics.median(reports),
        "lag_day_file_kib": size / 1024,
    }
