"""A remoting server on loopback that answers as the test says: what a broker or a name server
would, or not at all."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from console.rocketmq import frame
from console.rocketmq.frame import Command

Handler = Callable[[Command, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def serve(handler: Handler) -> AsyncIterator[str]:
    connections: list[asyncio.StreamWriter] = []

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(writer)
        try:
            while True:
                await handler(await read_command(reader), writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(on_client, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"127.0.0.1:{port}"
    finally:
        for w in connections:
            w.close()
        server.close()
        await server.wait_closed()


async def read_command(reader: asyncio.StreamReader) -> Command:
    length = frame.frame_length(await reader.readexactly(4))
    return frame.decode(await reader.readexactly(length))
