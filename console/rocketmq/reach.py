"""Where a connection to a server's address really goes: the address itself, another one it is
mapped to, or the same address asked of a SOCKS5 proxy.

Brokers register the address they know themselves by (a pod IP, a private address behind NAT,
a host of a network reached only through a bastion): the name server hands out that address,
which this machine may not reach. An address map sends a connection to a registered address
(`10.1.2.3`, every port; or `10.1.2.3:10911`, that port only) to a reachable one instead; a
SOCKS5 proxy (what `ssh -D 1080 bastion` opens) connects to the address on its side, names
resolved there. Everything else keeps the registered address: the errors, the screens, the
broker roles, the TLS server name (the certificate is the broker's own).

The settings come in as plain values (the config is console/config.py's); a connection's bytes
are the wire client's.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import ConnectError

#: The SOCKS protocol's own word for what failed, as python-socks reports it, kept short.
_SOCKS_SAID = "the SOCKS proxy"


def split_host_port(addr: str) -> tuple[str, int]:
    host, sep, port = addr.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"not a host:port address: {addr!r}")
    return host, int(port)


def map_error(source: str, target: str) -> str | None:
    """Why `source` = `target` is not an address map entry (None: it is one). A host maps to a
    host (every port kept); a host:port to a host (the port kept) or a host:port."""
    if not source or not target:
        return "expected FROM=TO, each a host or host:port"
    source_port = ":" in source
    if source_port and not _is_address(source):
        return f"not a host or host:port: {source!r}"
    if ":" in target and not _is_address(target):
        return f"not a host or host:port: {target!r}"
    if not source_port and ":" in target:
        return (
            f"{source!r} maps every port of the host, so it maps to a host, not to {target!r} "
            "(map one port with HOST:PORT=HOST:PORT)"
        )
    return None


def _is_address(text: str) -> bool:
    try:
        split_host_port(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Reach:
    """How this client reaches the addresses it is given (the default: directly)."""

    #: Registered address (`host` or `host:port`) -> the address connected to instead.
    address_map: Mapping[str, str] = field(default_factory=dict)
    #: A SOCKS5 proxy (`host:port`) every connection goes through; None: none.
    socks: str | None = None

    @classmethod
    def of(cls, address_map: Iterable[tuple[str, str]] = (), socks: str | None = None) -> Reach:
        return cls(dict(address_map), socks)

    @property
    def direct(self) -> bool:
        return not self.address_map and self.socks is None

    def target(self, addr: str) -> str:
        """The address a connection to `addr` (a registered one) is opened to."""
        mapped = self.address_map.get(addr)
        if mapped is not None:
            return mapped if ":" in mapped else f"{mapped}:{addr.rpartition(':')[2]}"
        host, _, port = addr.rpartition(":")
        by_host = self.address_map.get(host)
        return f"{by_host}:{port}" if by_host is not None else addr

    def route(self, addr: str) -> str | None:
        """How `addr` is reached, in words (None: directly, at itself)."""
        target = self.target(addr)
        parts = [f"mapped to {target}"] if target != addr else []
        if self.socks is not None:
            parts.append(f"through SOCKS {self.socks}")
        return ", ".join(parts) or None

    async def open(
        self,
        addr: str,
        timeout: float,
        *,
        ssl_context: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A stream to `addr` as this reach goes there; TLS with `ssl_context` (its server name
        `server_hostname`: the registered host's or the configured one, never the mapped
        one's). Raises OSError (ssl.SSLError for TLS) as asyncio does, and ConnectError naming
        `addr` and the way taken when the SOCKS proxy could not connect."""
        host, port = split_host_port(self.target(addr))
        tls: dict[str, Any] = {}
        if ssl_context is not None:
            tls = {
                "ssl": ssl_context,
                "server_hostname": server_hostname,
                "ssl_handshake_timeout": timeout,
                "ssl_shutdown_timeout": timeout,
            }
        if self.socks is None:
            return await asyncio.open_connection(host, port, **tls)
        sock = await self._through_socks(addr, host, port, timeout)
        return await asyncio.open_connection(sock=sock, **tls)

    async def _through_socks(
        self, addr: str, host: str, port: int, timeout: float
    ) -> socket.socket:
        # deferred: python-socks, for a cluster reached through SOCKS only
        from python_socks import ProxyConnectionError, ProxyError, ProxyTimeoutError, ProxyType
        from python_socks.async_.asyncio import Proxy

        assert self.socks is not None
        proxy_host, proxy_port = split_host_port(self.socks)
        proxy = Proxy(ProxyType.SOCKS5, proxy_host, proxy_port, rdns=True)
        try:
            return await proxy.connect(dest_host=host, dest_port=port, timeout=timeout)
        except ProxyTimeoutError:
            reason = f"no answer within {timeout:g}s"
        except ProxyConnectionError as exc:
            reason = f"{_SOCKS_SAID} {self.socks} cannot be reached ({exc.strerror or exc})"
        except ProxyError as exc:
            reason = f"{_SOCKS_SAID} could not connect to it ({exc})"
        raise ConnectError(addr, reason, self.route(addr))

    def dial(self, addr: str, timeout: float) -> socket.socket:
        """A blocking socket to `addr` as this reach goes there (an HTTP client's, in a
        thread). Raises OSError."""
        host, port = split_host_port(self.target(addr))
        if self.socks is None:
            return socket.create_connection((host, port), timeout=timeout)
        # deferred: python-socks, for a cluster reached through SOCKS only
        from python_socks import ProxyError, ProxyType
        from python_socks.sync import Proxy

        proxy_host, proxy_port = split_host_port(self.socks)
        proxy = Proxy(ProxyType.SOCKS5, proxy_host, proxy_port, rdns=True)
        try:
            sock = proxy.connect(dest_host=host, dest_port=port, timeout=timeout)
        except ProxyError as exc:
            raise OSError(f"{_SOCKS_SAID} {self.socks} could not connect to it ({exc})") from None
        sock.settimeout(timeout)
        return sock


DIRECT = Reach()
