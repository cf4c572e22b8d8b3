"""Multiplexing, timeouts, reconnects and bad peers, against a scripted in-process server."""

from __future__ import annotations

import asyncio
import struct

import pytest

from console.rocketmq import frame
from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import FLAG_RESPONSE, ResponseCode
from console.rocketmq.connection import ConnectionPool
from console.rocketmq.errors import (
    BrokerError,
    ConnectError,
    ConnectionLost,
    RequestTimeout,
    TlsCause,
    TlsRefused,
)
from console.rocketmq.frame import Command
from tests.support.servers import read_command, serve


def _reply(request: Command, **kw: object) -> bytes:
    return frame.encode(Command(code=0, opaque=request.opaque, flag=FLAG_RESPONSE, **kw))  # type: ignore[arg-type]


async def test_out_of_order_responses_reach_their_callers() -> None:
    # Answer each request after a delay that shrinks with its queueId: later requests finish first.
    async def handler(cmd: Command, writer: asyncio.StreamWriter) -> None:
        async def later() -> None:
            await asyncio.sleep(0.001 * (50 - int(cmd.ext_fields["queueId"])))
            writer.write(_reply(cmd, ext_fields={"offset": cmd.ext_fields["queueId"]}))

        asyncio.get_running_loop().create_task(later())

    async with serve(handler) as addr, AdminClient(addr, timeout=5) as client:
        offsets = await asyncio.gather(*(client.max_offset(addr, "T", q) for q in range(50)))
    assert offsets == list(range(50))


async def test_many_requests_share_one_connection() -> None:
    accepted = 0

    async def handler(cmd: Command, writer: asyncio.StreamWriter) -> None:
        writer.write(_reply(cmd, ext_fields={"offset": "1"}))

    async def counting(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal accepted
        accepted += 1
        try:
            while True:
                await handler(await read_command(reader), writer)
        except asyncio.IncompleteReadError:
            writer.close()

    server = await asyncio.start_server(counting, "127.0.0.1", 0)
    addr = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    async with AdminClient(addr) as client:
        await asyncio.gather(*(client.min_offset(addr, "T", 0) for _ in range(300)))
    server.close()
    await server.wait_closed()
    assert accepted == 1


async def test_silent_server_times_out_with_the_address() -> None:
    async def handler(cmd: Command, writer: asyncio.StreamWriter) -> None:
        return None

    async with serve(handler) as addr, AdminClient(addr, timeout=0.2) as client:
        with pytest.raises(RequestTimeout) as info:
            await client.max_offset(addr, "T", 0)
    assert addr in str(info.value)
    assert "0.2s" in str(info.value)


async def test_error_response_carries_code_and_remark() -> None:
    async def handler(cmd: Command, writer: asyncio.StreamWriter) -> None:
        writer.write(
            frame.encode(
                Command(code=17, opaque=cmd.opaque, flag=FLAG_RESPONSE, remark="topic[T] not exist")
            )
        )

    async with serve(handler) as addr, AdminClient(addr) as client:
        with pytest.raises(BrokerError) as info:
            await client.topic_stats(addr, "T")
    assert info.value.code == ResponseCode.TOPIC_NOT_EXIST
    assert info.value.remark == "topic[T] not exist"


async def test_binary_header_responses_are_understood() -> None:
    async def handler(cmd: Command, writer: asyncio.StreamWriter) -> None:
        reply = Command(code=0, opaque=cmd.opaque, flag=FLAG_RESPONSE, ext_fields={"offset": "77"})
        writer.write(frame.encode_binary_header(reply))

    async with serve(handler) as addr, AdminClient(addr) as client:
        assert await client.max_offset(addr, "T", 0) == 77


async def test_server_closing_fails_pending_and_next_request_reconnects() -> None:
    calls = 0

    async def handler(cmd: Command, writer: asyncio.StreamWriter) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            writer.close()  # drop the connection with the request unanswered
            return
        writer.write(_reply(cmd, ext_fields={"offset": "5"}))

    async with serve(handler) as addr, AdminClient(addr, timeout=2) as client:
        assert await client.max_offset(addr, "T", 0) == 5
        with pytest.raises(ConnectionLost):
            await client.max_offset(addr, "T", 0)
        assert await client.max_offset(addr, "T", 0) == 5


async def test_a_server_closing_a_new_connection_unanswered_may_require_tls() -> None:
    """What a TLS-enforcing RocketMQ server does with a plaintext client: reads its first
    bytes and closes, without a word. Not a lost connection: a configuration problem."""

    async def handler(cmd: Command, writer: asyncio.StreamWriter) -> None:
        writer.close()

    async with serve(handler) as addr, AdminClient(addr, timeout=2) as client:
        with pytest.raises(TlsRefused) as info:
            await client.max_offset(addr, "T", 0)
    assert info.value.cause is TlsCause.PLAINTEXT
    assert str(info.value) == (
        f"{addr} closed the connection at once: the cluster may require TLS (`tls:` in the config)"
    )


async def test_garbage_from_the_server_is_a_lost_connection_not_a_hang() -> None:
    async def handler(cmd: Command, writer: asyncio.StreamWriter) -> None:
        writer.write(struct.pack(">i", 64 * 1024 * 1024) + b"junk")

    async with serve(handler) as addr, AdminClient(addr, timeout=2) as client:
        with pytest.raises(ConnectionLost) as info:
            await client.max_offset(addr, "T", 0)
    assert "protocol error" in str(info.value)


async def test_server_requests_are_refused_politely() -> None:
    seen: list[Command] = []

    async def handler(cmd: Command, writer: asyncio.StreamWriter) -> None:
        if cmd.flag & FLAG_RESPONSE:
            seen.append(cmd)
            return
        # Before answering, ask the client something, as a broker may (e.g. running info).
        writer.write(frame.encode(Command(code=307, opaque=999, flag=0)))
        await writer.drain()
        writer.write(_reply(cmd, ext_fields={"offset": "1"}))

    async with serve(handler) as addr, AdminClient(addr) as client:
        await client.max_offset(addr, "T", 0)
        await client.max_offset(addr, "T", 0)
    assert seen
    assert seen[0].opaque == 999
    assert seen[0].code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


async def test_unreachable_address_is_named_within_the_timeout() -> None:
    probe = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = probe.sockets[0].getsockname()[1]
    probe.close()
    await probe.wait_closed()
    async with AdminClient(f"127.0.0.1:{port}", timeout=1) as client:
        with pytest.raises(ConnectError) as info:
            await client.cluster_info()
    assert f"127.0.0.1:{port}" in str(info.value)


async def test_bad_address_is_a_connect_error() -> None:
    pool = ConnectionPool()
    with pytest.raises(ConnectError, match="not a host:port"):
        await pool.request("no-port-here", 30, {}, b"", 1.0)
    await pool.close()


async def test_second_name_server_is_tried_when_the_first_is_down() -> None:
    body = b'{"brokerAddrTable":{},"clusterAddrTable":{}}'

    async def handler(cmd: Command, writer: asyncio.StreamWriter) -> None:
        writer.write(_reply(cmd, body=body))

    async with serve(handler) as good:
        client = AdminClient(["127.0.0.1:1", good], timeout=1)
        try:
            for _ in range(3):
                info = await client.cluster_info()
                assert info.brokers == {}
        finally:
            await client.close()
