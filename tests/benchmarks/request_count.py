"""`python -m tests.benchmarks.request_count ARGS…`: run `rmq-console ARGS…` in this process and
print how many requests it sent (every one passes ConnectionPool.request), its answer thrown
away: the fleet benchmark's floor is that count over the wire's rate (tests.benchmarks.fleet)."""

from __future__ import annotations

import contextlib
import io
import sys
from typing import Any

from console.cli import main as console_main
from console.rocketmq.connection import ConnectionPool


def main(argv: list[str]) -> int:
    sent = 0
    request = ConnectionPool.request

    async def counted(self: ConnectionPool, *args: Any, **kw: Any) -> Any:
        nonlocal sent
        sent += 1
        return await request(self, *args, **kw)

    ConnectionPool.request = counted  # type: ignore[method-assign]
    with contextlib.redirect_stdout(io.StringIO()):
        code = console_main(argv)
    print(sent)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
