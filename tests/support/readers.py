"""Pieces of a reader for the tests that stand one in with a namespace."""

from __future__ import annotations

from console.services.read.proxy_finder import ProxySearch


async def no_proxy_listed(
    brokers: object, hosts_of: object = None, names: object = None
) -> ProxySearch | None:
    """A reader's `find_proxies` where the brokers list no proxy: nothing looked for."""
    return None
