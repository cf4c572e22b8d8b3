"""Broker settings a test changes on a cluster and gives back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from console.rocketmq.admin import AdminClient
from console.sandbox.runner import Sandbox

UPDATE_BROKER_CONFIG = 25


async def server_side(admin: AdminClient, sandbox: Sandbox, on: bool) -> None:
    """Every broker of `sandbox` resets offsets itself (useServerSideResetOffset), or not."""
    body = f"useServerSideResetOffset={'true' if on else 'false'}\n".encode()
    for addr in sandbox.broker_addrs.values():
        await admin.call(addr, UPDATE_BROKER_CONFIG, body=body)
        assert (await admin.broker_config(addr))["useServerSideResetOffset"] == str(on).lower()


@asynccontextmanager
async def without_server_side_reset(sandbox: Sandbox) -> AsyncIterator[AdminClient]:
    """The brokers as before 5.1 (or with useServerSideResetOffset off), then as they were."""
    async with sandbox.admin(timeout=10) as admin:
        await server_side(admin, sandbox, on=False)
        try:
            yield admin
        finally:
            await server_side(admin, sandbox, on=True)
