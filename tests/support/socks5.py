"""A SOCKS5 server on loopback, as a bastion's `ssh -D` is: it connects to the address a client
asks for on its side of the network. "Its side" is `network`: host -> the host it reaches
there (a broker that registered 127.0.0.77 listens on 127.0.0.1, where the bastion would reach
127.0.0.77). Names are resolved here too (the client's rdns). Every CONNECT is recorded.

It serves in a thread of its own, so a command run in the test's process (its own event loop)
or in a child process goes through it alike. Only what the console uses: no authentication,
CONNECT, IPv4 and domain names."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import struct
import threading
from collections.abc import Iterator, Mapping

_VERSION = 5
_NO_AUTH = 0
_CONNECT = 1
_IPV4, _DOMAIN = 1, 3
_SUCCEEDED, _REFUSED, _NOT_SUPPORTED = 0, 5, 7


class Socks5Server:
    def __init__(self, network: Mapping[str, str] | None = None) -> None:
        self.network = dict(network or {})
        #: Every address a client asked to connect to, in order ("host:port").
        self.asked: list[str] = []
        self.addr = ""
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="socks5-server", daemon=True)
        self._server: asyncio.Server | None = None

    def __enter__(self) -> Socks5Server:
        self._thread.start()
        self._started.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0)
        )
        self.addr = f"127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        self._started.set()
        try:
            self._loop.run_forever()
        finally:
            self._server.close()
            for task in asyncio.all_tasks(self._loop):
                task.cancel()
            self._loop.run_until_complete(asyncio.sleep(0))
            self._loop.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, OSError):
            version, methods = await reader.readexactly(2)
            await reader.readexactly(methods)
            if version != _VERSION:
                return
            writer.write(bytes([_VERSION, _NO_AUTH]))
            _, command, _, kind = await reader.readexactly(4)
            if kind == _IPV4:
                host = str(ipaddress.IPv4Address(await reader.readexactly(4)))
            elif kind == _DOMAIN:
                host = (await reader.readexactly((await reader.readexactly(1))[0])).decode()
            else:
                return await _reply(writer, _NOT_SUPPORTED)
            (port,) = struct.unpack("!H", await reader.readexactly(2))
            if command != _CONNECT:
                return await _reply(writer, _NOT_SUPPORTED)
            self.asked.append(f"{host}:{port}")
            try:
                there, theirs = await asyncio.open_connection(self.network.get(host, host), port)
            except OSError:
                return await _reply(writer, _REFUSED)
            await _reply(writer, _SUCCEEDED)
            await asyncio.gather(_pipe(reader, theirs), _pipe(there, writer))
        writer.close()

    def asked_for(self, host: str) -> list[str]:
        return [a for a in self.asked if a.rpartition(":")[0] == host]


async def _reply(writer: asyncio.StreamWriter, code: int) -> None:
    writer.write(bytes([_VERSION, code, 0, _IPV4]) + socket.inet_aton("0.0.0.0") + b"\0\0")
    await writer.drain()
    if code != _SUCCEEDED:
        writer.close()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        sink.close()


@contextlib.contextmanager
def socks5(network: Mapping[str, str] | None = None) -> Iterator[Socks5Server]:
    with Socks5Server(network) as server:
        yield server
