"""A stand-in warm host for tests/unit/test_warm_host.py: the real RPC listener
(serve_listener) on the socket named by RMQ_TEST_SOCKET, with a `ready` that answers (or, with
RMQ_TEST_READY_FAILS, says the session could not start) and a `run` that reports one step and
answers with what it was asked. Its command line names `jobs.host --listen`, as the real one's
does (what a record's pid is checked for)."""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

from console.services.infra.rpc import RemoteError, Reply, serve_listener
from console.services.infra.spark_runner import HostInfo


def ready(reply: Reply) -> HostInfo:
    if os.environ.get("RMQ_TEST_READY_FAILS"):
        raise RemoteError("SparkConnectGrpcException", "the session could not start")
    return HostInfo("sc://localhost:15002", "4.3.0")


def run(reply: Reply, job_id: str, job: str, request: str) -> Any:
    reply.progress("planning", None, 1, 2, 1, 0)
    return f"{job} {request} in {os.getpid()}"


def main() -> int:
    assert sys.argv[1:] == ["jobs.host", "--listen"]
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(os.environ["RMQ_TEST_SOCKET"])
    listener.listen(4)
    serve_listener(listener, {"ready": ready, "run": run})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
