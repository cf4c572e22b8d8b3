"""`make test`'s pytest run as four processes at once.

Most of the suite's time is spent waiting: on brokers (a consumer's commit interval, a long
poll, a JVM starting), on Spark, on a terminal. One process leaves both cores mostly idle, so
the tests run in four streams, each a pytest session of its own:

- `apart` and `clusters`: the unit, UI and Spark directories, and the integration files whose
  clusters are their own (the newest release enforcing mutual TLS, the proxy, the master/slave
  pair), when no file sharing such a cluster also takes the main sandbox;
- `sandbox-1`, `sandbox-2`: the files that take the main sandbox, each stream with a sandbox of
  its own (the tests make groups of their own, so nothing depends on which tests ran before).

Files that share a cluster run in one stream, so it starts once. The Spark Connect server is
one for all four streams (tests/connect.py), started beside them. The split balances the streams
by the seconds each file took when last measured (tests/durations.json) plus each cluster's
start. Each stream's output is printed whole when it ends, then one line per stream; the exit
code is the first failing stream's. `python -m tests.streams -- ARGS` passes ARGS to every
stream; `python -m tests.streams --record` also writes what each integration file and each of
`apart`'s directories took (tests/durations.json, which the next split balances by).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from tests.connect import SHARED_ENV, start_shared, stop_shared, use_quick_spark_jvms

ROOT = Path(__file__).resolve().parent.parent
INTEGRATION = ROOT / "tests" / "integration"

#: A test function that takes the main sandbox (`sandbox: Sandbox`, or a fixture of it).
_MAIN = re.compile(r"\bsandbox\s*:\s*(Sandbox|Any)\b")
#: The clusters other than the main sandbox, by the fixture that starts each (once per
#: pytest session that asks for it), and the seconds it takes to start (measured).
CLUSTERS_S = {
    "acl_cluster": 15,
    "controller_cluster": 50,
    "dledger_cluster": 45,  # 37-65 s measured: three 4.9.7 peers elect, then copy the seed
    "far_cluster": 15,
    "legacy_cluster": 80,  # the 4.9.7 broker waits for its commit logs to expire
    "replica_cluster": 20,
    "newest_cluster": 80,  # with its proxy and a lite client
    "proxy_cluster": 25,
}
_CLUSTER = re.compile(r"\b(" + "|".join(CLUSTERS_S) + r")\b")
#: The clusters tests/integration/conftest.py begins as its session starts, when a test takes
#: them (their start is mostly waiting): a stream runs their files first, so they are not left
#: idle while its other files run, and each is stopped after its last test.
BEGUN_EARLY = frozenset(
    {"legacy_cluster", "replica_cluster", "proxy_cluster", "controller_cluster"}
)
#: What a sandbox stream spends starting the main sandbox.
MAIN_START_S = 60
#: The directories of tests that take no cluster, each shared out as a whole (as a file is),
#: and what each takes when not measured yet.
APART_DIRS = ("tests/unit", "tests/ui", "tests/spark")
APART_DIR_S = 350.0

#: Seconds each integration file took in its stream, as last measured (`--record`): what the
#: two sandbox streams are balanced by. A file not measured yet counts DEFAULT_S.
DURATIONS = ROOT / "tests" / "durations.json"
DEFAULT_S = 15.0


def durations() -> dict[str, float]:
    """The measured seconds of each integration file, by file name, and of each of `apart`'s
    directories, by path."""
    try:
        data = json.loads(DURATIONS.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return {str(name): float(seconds) for name, seconds in data.items()}


def measured(reports: Sequence[Path]) -> dict[str, float]:
    """Seconds per integration file, and per directory of `apart` (APART_DIRS), from pytest's
    JUnit reports: their tests' times, summed."""
    took: dict[str, float] = {}
    for report in reports:
        for case in ET.parse(report).getroot().iter("testcase"):
            module = case.get("classname", "").split(".")
            name = next((f"{part}.py" for part in module if part.startswith("test_")), None)
            if module[:2] == ["tests", "integration"] and name is not None:
                key = name
            elif "/".join(module[:2]) in APART_DIRS:
                key = "/".join(module[:2])
            else:
                continue
            took[key] = took.get(key, 0.0) + float(case.get("time") or 0)
    return took


def streams() -> dict[str, list[str]]:
    """The streams' arguments for pytest: directories and files, relative to the root.

    Files that share a cluster other than the main sandbox (the ACL cluster, the 4.9.7 broker,
    the master/slave pair, the newest release, the proxy) run in one stream, so that cluster
    starts once; a group with a file that also takes the main sandbox runs in a sandbox stream.
    Groups are shared out by cost, most costly first, to the stream least loaded so far (the
    main sandbox's start counts in the sandbox streams'); the unit, UI and Spark directories
    are groups as well, of their measured seconds: one stream running all three ended minutes
    after the others.
    Half the suite's time is waiting (JVMs, commit intervals, a terminal): a fourth stream
    keeps both cores busier, which three did not. A third main sandbox (a fifth of the
    integration files in the `clusters` stream) made every stream slower: its brokers, live
    consumers and producers took more of the two cores than the balance gave back."""
    took = durations()
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

    def cost(group: tuple[set[str], set[str]]) -> float:
        names, clusters = group
        files = sum(took.get(n, APART_DIR_S if n in APART_DIRS else DEFAULT_S) for n in names)
        return files + sum(CLUSTERS_S[c] for c in clusters)

    order = ("apart", "clusters", "sandbox-1", "sandbox-2")
    chosen: dict[str, list[str]] = {k: [] for k in order}
    load: dict[str, float] = {"apart": 0.0, "clusters": 0.0}
    load |= {"sandbox-1": MAIN_START_S, "sandbox-2": MAIN_START_S}
    with_main = [g for g in groups if g[0] & main]
    alone = [g for g in groups if not g[0] & main]
    alone += [({d}, set()) for d in APART_DIRS]
    placed: dict[str, list[tuple[set[str], set[str]]]] = {k: [] for k in order}
    for candidates, pending in ((order[2:], with_main), (order, alone)):
        for group in sorted(pending, key=lambda g: (-cost(g), sorted(g[0]))):
            stream = min(candidates, key=lambda k: load[k])
            placed[stream].append(group)
            load[stream] += cost(group)
    for stream, its_groups in placed.items():
        # sorted() is stable: the groups of a cluster begun early first, the rest as placed.
        for names, _ in sorted(its_groups, key=lambda g: not g[1] & BEGUN_EARLY):
            chosen[stream].extend(sorted(names))

    def path(name: str) -> str:
        return name if name in APART_DIRS else f"tests/integration/{name}"

    out = {k: [path(f) for f in chosen[k]] for k in order}
    return {k: v for k, v in out.items() if v}


def main(argv: Sequence[str]) -> int:
    record = "--record" in argv[:1]
    args = list(argv[1:] if record else argv)
    extra = args[1:] if args and args[0] == "--" else args
    started = time.monotonic()
    running: list[tuple[str, subprocess.Popen[bytes], Path]] = []
    logs = Path(tempfile.mkdtemp(prefix="rmq-console-tests-"))
    # One Spark Connect server for every stream (tests/connect.py), started beside them.
    shared = logs / "spark-connect"
    shared.mkdir()
    use_quick_spark_jvms()  # the shared server's JVM, and the streams'
    starting = threading.Thread(target=start_shared, args=(shared,), daemon=True)
    starting.start()
    env = {**os.environ, SHARED_ENV: str(shared)}
    try:
        for name, paths in streams().items():
            log = logs / f"{name}.log"
            report = ["--junitxml", str(logs / f"{name}.xml")]
            with log.open("wb") as out:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "pytest", *paths, *report, *extra],
                    cwd=ROOT,
                    env=env,
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
    finally:
        starting.join()
        stop_shared(shared)
    print()
    for name, code, took in results:
        state = "passed" if code == 0 else f"FAILED (exit {code})"
        print(f"stream {name}: {state}, done after {took:.0f}s")
    print(f"all streams: {time.monotonic() - started:.0f}s")
    failed = next((code for _, code, _ in results if code != 0), 0)
    if record and not failed:
        took = {**durations(), **measured(sorted(logs.glob("*.xml")))}
        rounded = {name: round(seconds) for name, seconds in sorted(took.items())}
        DURATIONS.write_text(json.dumps(rounded, indent=2) + "\n", encoding="utf-8")
        print(f"measured seconds per integration file written to {DURATIONS}")
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
