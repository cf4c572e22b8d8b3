"""`make bench`: bring up the sandbox once, run every benchmark module, print `key: value` lines.

Each module in MODULES has `run() -> dict[str, float]`. The sandbox's name server address is in
the environment (RMQ_BENCH_NAMESRV) for the modules that need a real cluster. Its servers take
TLS as well as plaintext (permissive, with a CA of the run's own; its own clients and consumers
stay plaintext): RMQ_BENCH_TLS_CONFIG is a config file whose cluster `bench-tls` is the same
sandbox over TLS, so a TLS read and a plaintext one read the same stores in the same run.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
from pathlib import Path

from console.sandbox.background import BackgroundSandbox
from console.sandbox.cluster import BROKER_NAMES
from console.sandbox.ports import free_ports
from console.sandbox.runner import SandboxOptions

MODULES = (
    "tests.benchmarks.wire",
    "tests.benchmarks.tui",
    "tests.benchmarks.plan",
    "tests.benchmarks.connect",
    "tests.benchmarks.boundary",
    "tests.benchmarks.apply",
    "tests.benchmarks.lag",
    # Last: their 10,000 groups stay in the sandbox, which ends with the run.
    "tests.benchmarks.fleet",
    "tests.benchmarks.fleet_tui",
)
#: Lines made of two others of the same run: (its key, numerator, denominator).
RATIOS = (
    # the console's refresh of 10,000 groups against the command line's scan of them
    ("tui_10k_vs_cli", "tui_10k_groups_all_lags_s", "fleet_10k_groups_s"),
)


def main(argv: list[str]) -> int:
    # `python -m tests.benchmarks apply fleet`: only those modules (all by default);
    # `fleet fleet_tui`: the fleet's figures and their ratio (tui_10k_vs_cli).
    wanted = [f"tests.benchmarks.{name}" for name in argv] or list(MODULES)
    unknown = sorted(set(wanted) - set(MODULES))
    if unknown:
        print(f"no such benchmark: {', '.join(unknown)}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="rmq-bench-") as tmp:
        options = SandboxOptions(
            run_dir=Path(tmp) / "sandbox",
            ports=free_ports(BROKER_NAMES),
            tls=True,
            tls_permissive=True,
            # The figures are throughputs: the brokers compile their hot paths fully, as
            # production brokers do.
            peak_jit=True,
        )
        with BackgroundSandbox(options) as sandbox:
            os.environ["RMQ_BENCH_NAMESRV"] = sandbox.namesrv_addr
            os.environ["RMQ_BENCH_RUN_DIR"] = str(sandbox.run_dir)
            assert sandbox.tls_offered is not None
            tls_config = Path(tmp) / "tls-config.yaml"
            entry = {"name": "bench-tls", "namesrv": [sandbox.namesrv_addr]}
            tls_config.write_text(
                json.dumps({"clusters": [{**entry, "tls": sandbox.tls_offered.to_dict()}]})
            )
            os.environ["RMQ_BENCH_TLS_CONFIG"] = str(tls_config)
            seen: dict[str, float] = {}
            for name in wanted:
                results = importlib.import_module(name).run()
                for key, value in results.items():
                    print(f"{key}: {value:.4g}", flush=True)
                seen |= results
            for key, over, under in RATIOS:
                if over in seen and under in seen:
                    print(f"{key}: {seen[over] / seen[under]:.4g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
