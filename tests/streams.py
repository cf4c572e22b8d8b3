"""`make test`'s pytest run as three processes at once.

Most of the suite's time is spent waiting: on brokers (a consumer's commit interval, a long
poll, a JVM starting), on Spark, on a terminal. One process leaves both cores mostly idle, so
the tests run in three streams, each a pytest session of its own:

- `apart`: unit, UI and Spark tests, and the integration tests whose clusters are their own
  (the 4.9.7 broker, the master/slave pair, the newest release enforcing mutual TLS with
  RocksDB offsets: test_tls.py, and test_newest_release.py, which runs main-sandbox tests on
  it): no main sandbox is started;
- `sandbox-1`, `sandbox-2`: the tests against the main sandbox (and the ACL cluster's, all in
  the second), split by their measured cost, each stream with a sandbox of its own (the tests
  make groups of their own, so nothing depends on which tests ran before in the same sandbox).

Each stream's output is printed whole when it ends, then one line per stream; the exit code is
the first failing stream's. `python -m tests.streams -- ARGS` passes ARGS to every stream.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INTEGRATION = ROOT / "tests" / "integration"

#: A test function that takes the main sandbox (`sandbox: Sandbox`, or a fixture of it).
_MAIN = re.compile(r"\bsandbox\s*:\s*(Sandbox|Any)\b")
#: The ACL cluster: its files share one stream, so it starts once.
_ACL = re.compile(r"\bacl_cluster\b")

#: Seconds a file takes against a warm sandbox (measured; a file not listed counts DEFAULT_S).
COST_S = {
    "test_acl_plan.py": 80,
    "test_acl_standalone.py": 45,
    "test_access_denied.py": 40,
    "test_acl.py": 30,
    "test_walkthroughs_ui.py": 150,
    "test_apply.py": 110,
    "test_apply_client_push.py": 105,
    "test_partial_reads.py": 100,
    "test_broadcast_offsets.py": 90,
    "test_apply_killed.py": 80,
    "test_ui_apply.py": 60,
    "test_apply_online.py": 60,
    "test_walkthroughs_tmux.py": 55,
    "test_poison_skip.py": 50,
    "test_client_local_and_future.py": 45,
    "test_ui_broker_down.py": 45,
    "test_lag_history.py": 40,
    "test_boundary_messages.py": 40,
    "test_cli_exit_codes.py": 40,
    "test_ui_preview.py": 35,
    "test_plan_cli.py": 30,
    "test_sandbox.py": 30,
    "test_plan_connect.py": 25,
    "test_plan_timestamp.py": 25,
    "test_walkthrough_cli.py": 20,
    "test_ui_tmux.py": 20,
    "test_apply_confirm.py": 15,
}
DEFAULT_S = 15


def streams() -> dict[str, list[str]]:
    """The three streams' arguments for pytest: directories and files, relative to the root.

    Integration files that never take the main sandbox (the 4.9.7 broker, the master/slave
    pair) go with the unit, UI and Spark tests; those taking the ACL cluster go together to the
    second sandbox stream; the rest are shared out by cost, most costly first."""
    apart: list[str] = []
    halves: list[list[str]] = [[], []]
    load = [0, 0]
    rest: list[str] = []
    for path in sorted(INTEGRATION.glob("test_*.py")):
        text = path.read_text()
        if not _MAIN.search(text) and not _ACL.search(text):
            apart.append(path.name)
        elif _ACL.search(text):
            halves[1].append(path.name)
            load[1] += COST_S.get(path.name, DEFAULT_S)
        else:
            rest.append(path.name)
    for f in sorted(rest, key=lambda f: -COST_S.get(f, DEFAULT_S)):
        i = 0 if load[0] <= load[1] else 1
        halves[i].append(f)
        load[i] += COST_S.get(f, DEFAULT_S)
    where = "tests/integration/"
    return {
        "apart": ["tests/unit", "tests/ui", "tests/spark", *(where + f for f in apart)],
        "sandbox-1": [where + f for f in halves[0]],
        "sandbox-2": [where + f for f in halves[1]],
    }


def main(argv: Sequence[str]) -> int:
    extra = list(argv[1:] if argv and argv[0] == "--" else argv)
    started = time.monotonic()
    running: list[tuple[str, subprocess.Popen[bytes], Path]] = []
    logs = Path(tempfile.mkdtemp(prefix="rmq-console-tests-"))
    for name, paths in streams().items():
        log = logs / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "pytest", *paths, *extra],
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        running.append((name, proc, log))
        print(f"stream {name}: {len(paths)} path(s), output in {log}", flush=True)
    results: list[tuple[str, int, float]] = []
    while running:
        for entry in list(running):
            name, proc, log = entry
            code = proc.poll()
            if code is None:
                continue
            running.remove(entry)
            results.append((name, code, time.monotonic() - started))
            print(f"\n{'=' * 30} stream {name} {'=' * 30}", flush=True)
            sys.stdout.write(log.read_text(errors="replace"))
            sys.stdout.flush()
        time.sleep(0.5)
    print()
    for name, code, took in results:
        state = "passed" if code == 0 else f"FAILED (exit {code})"
        print(f"stream {name}: {state}, done after {took:.0f}s")
    print(f"all streams: {time.monotonic() - started:.0f}s")
    return next((code for _, code, _ in results if code != 0), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
