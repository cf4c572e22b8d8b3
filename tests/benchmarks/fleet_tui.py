"""The console on the largest fleet: the group list of 10,000 groups, in a pseudo-terminal (80x24).

The groups are those of `fleet` (fleet_seed.py: 16 queues each, committed at their own offset;
seeded here when this module runs alone). Each run is a new console process, started on the
cluster overview; the clock starts when `g` opens the group list.

- `tui_10k_groups_listed_s`: until the list's title counts every group (`groups · N/N`, each
  row listed, its lag still to come), median of RUNS (target < 1).
- `tui_10k_groups_all_lags_s`: until every group's lag is on screen, median of RUNS (target
  < 6): the first refresh shows the lags, then asks the time behind of the lagging groups (the
  status line counts it: `time behind d/N`). Checked: the status line names no group
  unreadable or partly read, and the group of the largest lag the seed committed, filtered out
  of the 10,000, shows it.
- `tui_10k_groups_all_behind_s`: until that first refresh is done, the time behind of every
  lagging group in too (`refreshed … ago`), median of RUNS.
- `tui_keypress_p95_ms_10k`: key press until its repaint, filter edits typed while the
  10,000-group refresh runs without pause (as tests.benchmarks.tui does for 500), 95th
  percentile (target < 100).
Where the time went (py-spy on both processes, marks on the terminal; 10,000 groups, load ~2):
the network process reads them in ~3.2 s (tests.benchmarks.fleet); the first refresh's
screen then waited for the time behind of every lagging group (20,000 QUERY_CONSUME_TIME_SPAN,
~2.2 s), the pickle of the read from one process to the other (1.5 s: a dataclass's own
pickling walks its fields in Python, for 160,000 QueueOffsets), and the lag history written
first (10,000 files appended, ~6 s of a thread's time on a first refresh, which creates them).
Now the lags are shown first and the time behind fills in after; QueueOffsets pickle as their
values (0.7 s both ends); the history is written while the time behind is asked; what is left
before the lags show is the read, its pickle, and the summaries and rows of 10,000 groups
(~0.8 s).
Marks on the terminal, 3 runs each interleaved with the checkout before on one sandbox of the
10,000: the read ends 3.0-3.5 s after `g` (3.6-3.9 s before; see tests.benchmarks.fleet for
what changed), and the lags show 1.4 s after that (1.7-1.9 s before). Of those 1.4 s the UI
process spends ~0.5 s unpickling the read, ~0.27 s making its samples (one pass now, 0.43 s
in four), ~0.23 s judging 160,000 queues by the status rules and the rest on rows and the
screen; the time behind is no longer looked for before any was asked (0.11 s). The lags show
4.4-4.9 s after `g`, against 5.4-5.8 s.
The status rules then judged each queue into a Verdict with its reason written, for 160,000
queues where one line a group is shown; they now judge into a Judgement (its status, rule and
facts) and write the worst queue's reason only (console/domain/triage.py): 38 -> 10 us of CPU
for a group of 16 queues nobody consumes (best of 5 over 2,000 groups, twice each, interleaved
with the code before, at a load of ~29), ~0.3 s less for the 10,000.
The list's first refresh then waited, after the network process's last read, for: the read
pickled there (0.30 s), unpickled here (~0.2 s; 0.5 s on the interpreter's own collection
schedule), each group's sample (~0.2 s), its status (~0.2 s) and its row (0.58 s: a row read the
group's totals four times, each a walk of its queues). Now the network process hands the reads
of the first refresh over as they come (ClusterOperations.read_groups' `parts`, every 0.25 s;
console/ui/screens/groups_intake.py), and this process samples, judges and makes each row while
the others are read; a group's totals and topic queues are worked out once (0.58 -> 0.26 s for
the rows); a group crosses with its queues as plain tuples (pickled in 0.19 s instead of 0.30).
After the last read, 0.08 s pass until the rows are posted (0.2 s with the two sorts of
before). Interleaved with the checkout before on one sandbox of the 10,000 (load ~3): lags on
screen 6.58 and 6.79 s before, 5.70-5.78 s after; the command line's scan of the same sandbox
4.4-5.2 s. Later refreshes keep their rows on screen while reading and still take the reads
whole: taken in parts, the UI process's work ran beside every key press, and the filter's 95th
percentile went from 44-47 ms to 55-83 ms; as it is, 40-57 ms.

- `tui_10k_console_mb`, `tui_10k_network_mb`: the most memory (VmHWM) the console's process
  and its network process held, after the key presses (target < 400 for the console).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
from pathlib import Path

from tests.benchmarks.fleet_seed import fleet, seed
from tests.benchmarks.stats import RUNS
from tests.benchmarks.tui import (
    Terminal,
    _broker_names,
    _console,
    _env,
    _group_count,
    filter_keypress_p95_ms,
)

GROUPS = 10_000


def run() -> dict[str, float]:
    namesrv = os.environ["RMQ_BENCH_NAMESRV"]
    expected = asyncio.run(seed(namesrv, fleet(GROUPS))).expected
    worst = max(expected.items(), key=lambda kv: kv[1])
    total = asyncio.run(_group_count(namesrv))
    brokers = asyncio.run(_broker_names(namesrv))
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="rmq-bench-fleet-tui-") as tmp:
        config = Path(tmp) / "config.yaml"
        config.write_text(f"workspace: {Path(tmp) / 'ws'}\n")
        env = _env(config)
        listed, all_lags, all_behind = [], [], []
        for _ in range(RUNS):
            shown, read, behind = _list_once(namesrv, env, brokers, total, worst)
            listed.append(shown)
            all_lags.append(read)
            all_behind.append(behind)
        out["tui_10k_groups_listed_s"] = statistics.median(listed)
        out["tui_10k_groups_all_lags_s"] = statistics.median(all_lags)
        out["tui_10k_groups_all_behind_s"] = statistics.median(all_behind)
        p95, memory = _keys_while_refreshing(namesrv, {**env, "RMQ_CONSOLE_REFRESH": "0.1"}, total)
        out["tui_keypress_p95_ms_10k"] = p95
        out["tui_10k_console_mb"] = memory["console"]
        out["tui_10k_network_mb"] = memory["network"]
    return out


def _open_groups(namesrv: str, env: dict[str, str], brokers: list[str]) -> tuple[Terminal, float]:
    term = Terminal(_console(namesrv), env)
    term.wait_for(*(b.encode() for b in brokers), timeout=60)  # the overview, the brokers on it
    return term, term.send(b"g")


def _list_once(
    namesrv: str, env: dict[str, str], brokers: list[str], total: int, worst: tuple[str, int]
) -> tuple[float, float, float]:
    """Seconds from `g` until every group is listed, until every lag is on screen, and until
    the time behind is too."""
    term, pressed = _open_groups(namesrv, env, brokers)
    try:
        listed = term.wait_for(f"groups · {total}/{total}".encode(), timeout=120) - pressed
        term.forget()
        read = term.wait_for(b"time behind ", b" ago", timeout=300, every=False) - pressed
        seen = term.seen
        behind = term.wait_for(b" ago", timeout=300) - pressed
        # The refresh's screen, checked after the clock: every group read whole, and the worst
        # group (filtered out of the list: its rank is not the list's first) with its lag.
        seen += term.seen
        term.send(b"/")
        term.wait_for(b"filter:")
        seen += term.seen
        term.send(worst[0].encode())
        term.wait_for(f"1/{total}".encode(), f" {worst[1]} ".encode(), timeout=30)
        for problem in (b"unreadable", b"partly read"):
            if problem in seen + term.seen:
                raise RuntimeError(f"the refresh of {total} groups: {problem!r} on screen")
        return listed, read, behind
    finally:
        term.close()


def _keys_while_refreshing(
    namesrv: str, env: dict[str, str], total: int
) -> tuple[float, dict[str, float]]:
    term = Terminal(_console(namesrv), env)
    try:
        term.wait_for(b"brokers", timeout=60)
        p95 = filter_keypress_p95_ms(term, total, first_refresh_s=300)
        return p95, _memory_mb(term.proc.pid)
    finally:
        term.close()


def _memory_mb(pid: int) -> dict[str, float]:
    """The peak resident memory of the console (`pid`) and of its network process (its child
    that runs console.remote.network_process), in MiB."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    network = [c for c in children if b"console.remote" in Path(f"/proc/{c}/cmdline").read_bytes()]
    if len(network) != 1:
        raise RuntimeError(f"the console's network process not found among {children}")
    return {"console": _peak_mb(pid), "network": _peak_mb(int(network[0]))}


def _peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")
