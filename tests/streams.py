"""`make test`'s pytest run as four processes at once.

Most of the suite's time is spent waiting: on brokers (a consumer's commit interval, a long
poll, a JVM starting), on Spark, on a terminal. One process leaves both cores mostly idle, so
the tests run in four streams, each a pytest session of its own:

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
#: The clusters other than the main sandbox, by the fixture that starts each (once per
#: pytest session that asks for it), and the seconds it takes to start (measured).
CLUSTERS_S = {
    "acl_cluster": 15,
    "legacy_cluster": 80,  # the 4.9.7 broker waits for its commit logs to expire
    "replica_cluster": 20,
    "newest_cluster": 55,
    "proxy_cluster": 25,
}
_CLUSTER = re.compile(r"\b(" + "|".join(CLUSTERS_S) + r")\b")
#: What a sandbox stream spends starting the main sandbox, and the unit, UI and Spark tests.
MAIN_START_S = 60
APART_BASE_S = 500

#: Seconds a file takes once its clusters run (measured; a file not listed counts DEFAULT_S).
COST_S = {
    "test_newest_release.py": 230,
    "test_walkthroughs_ui.py": 150,
    "test_apply.py": 110,
    "test_apply_client_push.py": 105,
    "test_legacy_client_push.py": 100,
    "test_partial_reads.py": 100,
    "test_broadcast_offsets.py": 90,
    "test_acl_plan.py": 80,
    "test_apply_killed.py": 80,
    "test_tls.py": 70,
    "test_ui_apply.py": 60,
    "test_apply_online.py": 60,
    "test_master_slave.py": 60,
    "test_pop_resets.py": 60,
    "test_walkthroughs_tmux.py": 55,
    "test_poison_skip.py": 50,
    "test_acl_standalone.py": 45,
    "test_client_local_and_future.py": 45,
    "test_ui_broker_down.py": 45,
    "test_access_denied.py": 40,
    "test_lag_history.py": 40,
    "test_boundary_messages.py": 40,
    "test_cli_exit_codes.py": 40,
    "test_legacy_broker.py": 40,
    "test_pop_reads.py": 40,
    "test_ui_preview.py": 35,
    "test_acl.py": 30,
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
    """The streams' arguments for pytest: directories and files, relative to the root.

    Files that share a cluster other than the main sandbox (the ACL cluster, the 4.9.7 broker,
    the master/slave pair, the newest release, the proxy) run in one stream, so that cluster
    starts once; a group with a file that also takes the main sandbox runs in a sandbox stream.
    Groups are shared out by cost, most costly first, to the stream least loaded so far: the
    unit, UI and Spark tests start `apart` off, the main sandbox's start the sandbox streams.
    Half the suite's time is waiting (JVMs, commit intervals, a terminal): a fourth stream
    keeps both cores busier, which three did not."""
    files = sorted(INTEGRATION.glob("test_*.py"))
    needs = {f.name: set(_CLUSTER.findall(f.read_text())) for f in files}
    main = {f.name for f in files if _MAIN.search(f.read_text())}
    # Files joined by a cluster they share: one group each.
    groups: list[tuple[set[str], set[str]]] = []
    for name in sorted(needs):
        joined = [g for g in groups if g[1] & needs[name]]
        merged = ({name}, set(needs[name]))
        for g in joined:
            groups.remove(g)
            merged[0].update(g[0])
            merged[1].update(g[1])
        groups.append(merged)

    def cost(group: tuple[set[str], set[str]]) -> int:
        names, clusters = group
        return sum(COST_S.get(n, DEFAULT_S) for n in names) + sum(CLUSTERS_S[c] for c in clusters)

    order = ("apart", "clusters", "sandbox-1", "sandbox-2")
    chosen: dict[str, list[str]] = {k: [] for k in order}
    load = {"apart": APART_BASE_S, "clusters": 0, "sandbox-1": MAIN_START_S}
    load["sandbox-2"] = MAIN_START_S
    with_main = [g for g in groups if g[0] & main]
    alone = [g for g in groups if not g[0] & main]
    for candidates, pending in ((order[2:], with_main), (order, alone)):
        for group in sorted(pending, key=lambda g: (-cost(g), sorted(g[0]))):
            stream = min(candidates, key=lambda k: load[k])
            chosen[stream].extend(sorted(group[0]))
            load[stream] += cost(group)
    where = "tests/integration/"
    out = {k: [where + f for f in chosen[k]] for k in order}
    out["apart"] = ["tests/unit", "tests/ui", "tests/spark", *out["apart"]]
    return {k: v for k, v in out.items() if v}


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
