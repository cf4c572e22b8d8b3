"""`make bench`: bring up the sandbox once, run every benchmark module, print `key: value` lines.

Each module in MODULES has `run() -> dict[str, float]`. The sandbox's name server address is in
the environment (RMQ_BENCH_NAMESRV) for the modules that need a real cluster.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
from pathlib import Path

MODULES = ("tests.benchmarks.wire",)


def main() -> int:
    from console.sandbox.api import running_sandbox

    with tempfile.TemporaryDirectory(prefix="rmq-bench-") as tmp, running_sandbox(
        Path(tmp)
    ) as sandbox:
        os.environ["RMQ_BENCH_NAMESRV"] = sandbox.namesrv
        for name in MODULES:
            results = importlib.import_module(name).run()
            for key, value in results.items():
                print(f"{key}: {value:.4g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
