"""Run a job without the console, e.g. on a cluster with spark-submit:

    python -m jobs package rmq-jobs.zip
    spark-submit --master spark://host:7077 --py-files rmq-jobs.zip jobs/__main__.py \\
        plan request.json
    python -m jobs plan request.json --master local[2]

A request is the JSON the console writes (console.domain.job_requests); the plan header (or the
impact rows) is printed on stdout. Bad input exits with status 2 and the reason on stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script (spark-submit), this file's directory would shadow top-level modules with
# the package's own module names (`requests`, `session`, …): take it off the path first.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import argparse  # noqa: E402
import json  # noqa: E402
import zipfile  # noqa: E402
from collections.abc import Sequence  # noqa: E402

from console.domain.job_requests import ImpactRequest, PlanRequest  # noqa: E402
from console.domain.spec import SpecError  # noqa: E402
from console.services.infra import files  # noqa: E402

ZIPPED = (
    "console/__init__.py",
    "console/config.py",
    "console/errors.py",
    "console/lined_yaml.py",
    "console/locations.py",
    "console/processes.py",
    "console/redact.py",
    "console/domain",
    "console/rocketmq",
    "console/services",
    "jobs",
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobs")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("plan", "impact"):
        p = sub.add_parser(name, help=f"run the {name} job on a request file")
        p.add_argument("request", help="request JSON: a path or a URI")
        p.add_argument("--master", help="Spark master (default: what spark-submit set)")
    p = sub.add_parser("package", help="zip the job code for --py-files")
    p.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    if args.command == "package":
        return _package(args.out)
    return _run(args.command, args.request, args.master)


def _run(command: str, request_location: str, master: str | None) -> int:
    # deferred: pyspark, which `python -m jobs package` does not need
    from jobs.run import PlanExistsError, run_impact, run_plan
    from jobs.spark_session import build_session

    text = files.read_text(files.to_uri(request_location))
    spark = build_session(master)
    try:
        if command == "plan":
            print(run_plan(spark, PlanRequest.from_json(text)).to_json())
        else:
            found = run_impact(spark, ImpactRequest.from_json(text))
            print(json.dumps([i.to_dict() for i in found], indent=2))
    except (SpecError, PlanExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    return 0


def _package(out: Path) -> int:
    root = _HERE.parent
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for item in ZIPPED:
            path = root / item
            sources = [path] if path.is_file() else sorted(path.rglob("*.py"))
            for source in sources:
                z.write(source, source.relative_to(root).as_posix())
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
