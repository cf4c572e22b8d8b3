"""`make test`'s pytest run as three processes at once.

Most of the suite's time is spent waiting: on brokers (a consumer's commit interval, a long
poll, a JVM starting), on Spark, on a terminal. One process leaves both cores mostly idle, so
the tests run in three streams, each a pytest session of its own:

- `apart`: unit, UI and Spark tests, and the integration tests whose clusters are their own
  (the 4.9.7 broker, the master/slave pair, the newest release enforcing mutual TLS with
  RocksDB offsets: test_tls.py, and test_newest_release.py, which runs main-sandbox tests on
  it): no main sandbox is started;
- `sandbox-1`, `sandbox-2`: the tests against the main sandbox (and the ACL cluster's, all in
  the second), split by their measured seconds (tests/durations.json), each stream with a
  sandbox of its own (the tests make groups of their own, so nothing depends on which tests
  ran before in the same sandbox).

Each stream's output is printed whole when it ends, then one line per stream; the exit code is
the first failing stream's. `python -m tests.streams -- ARGS` passes ARGS to every stream;
`python -m tests.streams --record` also writes what each integration file took
(tests/durations.json, which the next split balances by).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INTEGRATION = ROOT / "tests" / "integration"

#: A test function that takes the main sandbox (`sandbox: Sandbox`, or a fixture of it).
_MAIN = re.compile(r"\bsandbox\s*:\s*(Sandbox|Any)\b")
#: The ACL cluster: its files share one stream, so it starts once.
_ACL = re.compile(r"\bacl_cluster\b")

#: Seconds each integration file took in its stream, as last measured (`--record`): what the
#: two sandbox streams are balanced by. A file not measured yet counts DEFAULT_S.
DURATIONS = ROOT / "tests" / "durations.json"
DEFAULT_S = 15.0


def durations() -> dict[str, float]:
    """The measured seconds of each integration file, by file name."""
    try:
        data = json.loads(DURATIONS.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return {str(name): float(seconds) for name, seconds in data.items()}


def measured(reports: Sequence[Path]) -> dict[str, float]:
    """Seconds per integration file from pytest's JUnit reports: its tests' times, summed."""
    took: dict[str, float] = {}
    for report in reports:
        for case in ET.parse(report).getroot().iter("testcase"):
            module = case.get("classname", "").split(".")
            name = next((f"{part}.py" for part in module if part.startswith("test_")), None)
            if module[:2] == ["tests", "integration"] and name is not None:
                took[name] = took.get(name, 0.0) + float(case.get("time") or 0)
    return took


def streams() -> dict[str, list[str]]:
    """The three streams' arguments for pytest: directories and files, relative to the root.

    Integration files that never take the main sandbox (the 4.9.7 broker, the master/slave
    pair) go with the unit, UI and Spark tests; those taking the ACL cluster go together to the
    second sandbox stream; the rest are shared out by their measured seconds, longest first."""
    took = durations()

    def cost(name: str) -> float:
        return took.get(name, DEFAULT_S)

    apart: list[str] = []
    halves: list[list[str]] = [[], []]
    load = [0.0, 0.0]
    rest: list[str] = []
    for path in sorted(INTEGRATION.glob("test_*.py")):
        text = path.read_text()
        if not _MAIN.search(text) and not _ACL.search(text):
            apart.append(path.name)
        elif _ACL.search(text):
            halves[1].append(path.name)
            load[1] += cost(path.name)
        else:
            rest.append(path.name)
    for f in sorted(rest, key=lambda f: (-cost(f), f)):
        i = 0 if load[0] <= load[1] else 1
        halves[i].append(f)
        load[i] += cost(f)
    where = "tests/integration/"
    return {
        "apart": ["tests/unit", "tests/ui", "tests/spark", *(where + f for f in apart)],
        "sandbox-1": [where + f for f in halves[0]],
        "sandbox-2": [where + f for f in halves[1]],
    }


def main(argv: Sequence[str]) -> int:
    record = "--record" in argv[:1]
    args = list(argv[1:] if record else argv)
    extra = args[1:] if args and args[0] == "--" else args
    started = time.monotonic()
    running: list[tuple[str, subprocess.Popen[bytes], Path]] = []
    logs = Path(tempfile.mkdtemp(prefix="rmq-console-tests-"))
    for name, paths in streams().items():
        log = logs / f"{name}.log"
        report = ["--junitxml", str(logs / f"{name}.xml")]
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "pytest", *paths, *report, *extra],
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
    failed = next((code for _, code, _ in results if code != 0), 0)
    if record and not failed:
        took = {**durations(), **measured(sorted(logs.glob("*.xml")))}
        rounded = {name: round(seconds) for name, seconds in sorted(took.items())}
        DURATIONS.write_text(json.dumps(rounded, indent=2) + "\n", encoding="utf-8")
        print(f"measured seconds per integration file written to {DURATIONS}")
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
