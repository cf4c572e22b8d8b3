"""mqadmin's per-queue reset lines, as `resume` prints them for a runbook: one line per queue,
name servers joined the way mqadmin takes them, long lists cut with a count."""

from __future__ import annotations

import shlex

from console.domain.mqadmin import queue_resets


def test_one_line_per_queue_and_a_count_for_the_rest() -> None:
    moves = [("billing", "orders", "127.0.0.1:10911", q, 100 + q) for q in range(12)]
    lines = queue_resets(["10.0.0.1:9876", "10.0.0.2:9876"], moves)
    assert len(lines) == 11
    assert shlex.split(lines[0]) == [
        "mqadmin", "resetOffsetByTime", "-n", "10.0.0.1:9876;10.0.0.2:9876",
        "-g", "billing", "-t", "orders", "-s", "now",
        "-b", "127.0.0.1:10911", "-q", "0", "-o", "100",
    ]  # fmt: skip
    assert lines[-1] == "# ... and 2 more queues (see the journal)"
    assert queue_resets(["n:9876"], moves[:1], limit=10)[0].endswith("-q 0 -o 100")
