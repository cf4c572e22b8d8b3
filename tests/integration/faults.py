"""Helpers for tests that stop a broker of a shared cluster and must give it back whole."""

from __future__ import annotations

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
