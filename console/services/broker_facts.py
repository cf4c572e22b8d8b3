"""What decides a group's reset path on each broker: its version and whether it resets offsets
itself (useServerSideResetOffset), asked now."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from console.domain.plan import BrokerFacts
from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import RocketMQError


async def broker_facts(
    admin: AdminClient, addrs: Mapping[str, str | None]
) -> dict[str, BrokerFacts]:
    """Facts by broker name; what a broker did not say (no address, no answer) is unknown."""

    async def one(name: str, addr: str | None) -> BrokerFacts:
        if not addr:
            return BrokerFacts(name, None, None)
        try:
            config = await admin.broker_config(addr)
        except RocketMQError:
            return BrokerFacts(name, admin.server_versions.get(addr), None)
        flag = config.get("useServerSideResetOffset")
        server_side = None if flag is None else flag.strip().lower() == "true"
        return BrokerFacts(name, admin.server_versions.get(addr), server_side)

    names = sorted(addrs)
    facts = await asyncio.gather(*(one(n, addrs[n]) for n in names))
    return dict(zip(names, facts, strict=True))
