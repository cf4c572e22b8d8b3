"""`rmq-console ARGS` in a process of its own that stops a broker as its writes begin:
`python -m tests.integration.frozen_console PID ADDR ARGS...` runs the command with every admin
client's offset writes going through `FreezeOnWrite(PID, ADDR)` first (tests/integration/
faults.py). For tests that drive the real command at a terminal (and may kill it) while a
broker hangs mid-apply."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any

from console.cli import main
from console.rocketmq.admin import AdminClient
from tests.integration.faults import FreezeOnWrite

Write = Callable[..., Awaitable[Any]]


def _through(freeze: FreezeOnWrite, write: Write) -> Write:
    async def frozen_first(self: AdminClient, addr: str, *args: Any, **kwargs: Any) -> Any:
        freeze.before_write(addr)
        return await write(self, addr, *args, **kwargs)

    return frozen_first


def run(argv: list[str]) -> int:
    pid, addr, *args = argv
    freeze = FreezeOnWrite(int(pid), addr)
    for name in ("reset_offset", "update_consumer_offset"):
        setattr(AdminClient, name, _through(freeze, getattr(AdminClient, name)))
    return main(args)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
