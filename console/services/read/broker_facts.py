"""What decides a group's reset path on each broker: its version, whether it resets offsets
itself (useServerSideResetOffset), and whether its offset store keeps such a reset
(configManagerVersion), asked now."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from console.domain.reset_paths import BrokerFacts
from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import RocketMQError

#: MQVersion.V5_3_3: the last release whose v2 offset store saves a server-side reset.
V5_3_3 = 479


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
        version = admin.server_versions.get(addr)
        v2 = config.get("configManagerVersion", "").strip().lower() == "v2"
        forgets = v2 and version is not None and version > V5_3_3
        return BrokerFacts(name, version, server_side, forgets_resets=forgets)

    names = sorted(addrs)
    facts = await asyncio.gather(*(one(n, addrs[n]) for n in names))
    return dict(zip(names, facts, strict=True))
