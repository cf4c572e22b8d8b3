"""`python -m jobs.probe`: ask a Spark Connect server (URL on stdin) what it runs on.

Prints one JSON line: {"master", "spark_version"} or {"error"}. The console runs this in a
child process because it never imports pyspark itself.
"""

from __future__ import annotations

import json
import re
import sys

from jobs.spark_session import build_session


def main() -> int:
    url = sys.stdin.read().strip()
    try:
        spark = build_session(url)
        answer = {"master": spark.conf.get("spark.master"), "spark_version": spark.version}
    except Exception as exc:  # any failure is the answer
        print(json.dumps({"error": reason(exc)}))
        return 1
    print(json.dumps(answer))
    return 0


def reason(exc: BaseException) -> str:
    """One line: a gRPC failure's status and details, else the message's first line."""
    text = str(exc)
    grpc = re.search(r"status = StatusCode\.(\w+).*?details = \"([^\"]*)\"", text, re.S)
    if grpc:
        return f"{grpc.group(1)}: {grpc.group(2)}"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (lines[0] if lines else type(exc).__name__)[:300]


if __name__ == "__main__":
    raise SystemExit(main())
