"""Helpers for tests that stop a broker of a shared cluster and must give it back whole."""

from __future__ import annotations

import os
import signal
from typing import Any

from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import RocketMQError


async def broker_answers(namesrv: str, name: str, addr: str) -> bool:
    """Whether the name server lists `name` with master `addr` and that broker answers: what
    the tests after a paused or restarted broker need before they read the cluster."""
    async with AdminClient(namesrv, timeout=2.0) as admin:
        try:
            info = await admin.cluster_info()
            if info.brokers.get(name) is None or info.brokers[name].master_addr != addr:
                return False
            await admin.broker_runtime(addr)
        except RocketMQError:
            return False
    return True


class FreezeOnWrite:
    """Stops a broker's process (SIGSTOP) right before the first offset write addressed to it:
    the broker answered the apply's check and its re-check after the confirmation, then stops
    answering as the writes begin (a GC pause, a partition). The write is still sent; the
    broker, let go again (SIGCONT, which the test owes it), takes it in."""

    def __init__(self, pid: int, addr: str) -> None:
        self.pid, self.addr = pid, addr
        self.frozen = False

    def before_write(self, addr: str) -> None:
        if addr == self.addr and not self.frozen:
            os.kill(self.pid, signal.SIGSTOP)
            self.frozen = True


class FreezingAdmin:
    """An admin client passing everything on, whose offset writes go through `freeze` first."""

    def __init__(self, admin: AdminClient, freeze: FreezeOnWrite) -> None:
        self._admin = admin
        self.freeze = freeze

    def __getattr__(self, name: str) -> Any:
        return getattr(self._admin, name)

    async def reset_offset(self, addr: str, *args: Any, **kwargs: Any) -> Any:
        self.freeze.before_write(addr)
        return await self._admin.reset_offset(addr, *args, **kwargs)

    async def update_consumer_offset(self, addr: str, *args: Any, **kwargs: Any) -> Any:
        self.freeze.before_write(addr)
        return await self._admin.update_consumer_offset(addr, *args, **kwargs)
