"""Multiplexing, timeouts, reconnects and bad peers, against a scripted in-process server."""

from __future__ import annotations

import asyncio
import struct

import pytest

from console.domain.gaps import Why, why_of
from console.rocketmq import frame
from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import FLAG_RESPONSE, ResponseCode
from console.rocketmq.connection import ConnectionPool
from console.rocketmq.errors import (
    BrokerError,
    ClosedUnanswered,
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


#: What a Java (JSSE) TLS server answers a plaintext RocketMQ frame with, as seen from a JDK 17
#: SSLServerSocket: a fatal alert record, unexpected_message (TLS 1.2 record version).
JSSE_ALERT = bytes([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x0A])


async def test_a_new_connection_closed_unanswered_is_lost_and_names_both_causes() -> None:
    """What a RocketMQ server in TLS `enforcing` mode does with a plaintext client, and a broker
    shutting down with it too: reads the first frame and closes, without a byte. Nothing tells
    them apart: a lost connection (never a TLS refusal), its line naming both."""

    async def handler(cmd: Command, writer: asyncio.StreamWriter) -> None:
        writer.close()

    async with serve(handler) as addr, AdminClient(addr, timeout=2) as client:
        with pytest.raises(ClosedUnanswered) as info:
            await client.max_offset(addr, "T", 0)
    assert isinstance(info.value, ConnectionLost)
    assert not isinstance(info.value, TlsRefused)
    assert str(info.value) == (
        f"{addr} closed the connection before answering (a server starting or stopping does "
        "this; so does one that requires TLS: `tls:` in the config)"
    )
    assert why_of(info.value) is Why.DOWN


@pytest.mark.parametrize("then_close", [True, False], ids=["then-closes", "stays-open"])
async def test_a_tls_alert_to_plaintext_proves_the_cluster_requires_tls(then_close: bool) -> None:
    """A TLS server (a Java one, a TLS proxy) answers plaintext with an alert record: that, and
    only that, says the cluster requires TLS, at once, whether it then hangs up or not."""

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_command(reader)
        writer.write(JSSE_ALERT)
        await writer.drain()
        if then_close:
            writer.close()
        else:
            await reader.read()  # until the client hangs up

    server = await asyncio.start_server(on_client, "127.0.0.1", 0)
    addr = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        async with AdminClient(addr, timeout=5) as client:
            started = asyncio.get_running_loop().time()
            with pytest.raises(TlsRefused) as info:
                await client.max_offset(addr, "T", 0)
            took = asyncio.get_running_loop().time() - started
    finally:
        server.close()
        await server.wait_closed()
    assert info.value.cause is TlsCause.PLAINTEXT
    assert str(info.value) == (
        f"{addr} answered with TLS: the cluster requires TLS (`tls:` in the config)"
    )
    assert took < 2, f"took {took:.1f}s: the alert was not read as one"


async def test_a_server_that_accepts_and_hangs_up_unread_is_not_called_tls() -> None:
    """A broker being killed may accept a connection and drop it before reading a byte: the
    reset is a lost connection that says so, never a TLS refusal."""

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.transport.abort()

    server = await asyncio.start_server(on_client, "127.0.0.1", 0)
    addr = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        async with AdminClient(addr, timeout=2) as client:
            with pytest.raises(ConnectionLost) as info:
                await client.max_offset(addr, "T", 0)
    finally:
        server.close()
        await server.wait_closed()
    assert type(info.value) is ConnectionLost
    assert str(info.value) == f"connection to {addr} lost: [Errno 104] Connection reset by peer"


async def test_a_first_answer_cut_short_is_lost_and_says_how_far_it_got() -> None:
    async def handler(cmd: Command, writer: asyncio.StreamWriter) -> None:
        writer.write(_reply(cmd, ext_fields={"offset": "5"})[:10])
        writer.close()

    async with serve(handler) as addr, AdminClient(addr, timeout=2) as client:
        with pytest.raises(ConnectionLost) as info:
            await client.max_offset(addr, "T", 0)
    assert not isinstance(info.value, ClosedUnanswered | TlsRefused)
    assert str(info.value) == (
        f"connection to {addr} lost: closed the connection 10 bytes into its first answer"
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


async def test_answers_cut_anywhere_or_run_together_reach_their_callers() -> None:
    # The answers of 40 requests, written as one run of bytes in pieces of 1 to 7 bytes: a
    # frame split across reads, several frames in one read, a length prefix cut in two.
    received: list[Command] = []
    all_in = asyncio.Event()

    async def handler(cmd: Command, writer: asyncio.StreamWriter) -> None:
        received.append(cmd)
        if len(received) < 40:
            return
        all_in.set()
        data = b"".join(
            _reply(
                c,
                ext_fields={"offset": c.ext_fields["queueId"]},
                body=b"x" * int(c.ext_fields["queueId"]),
            )
            for c in reversed(received)
        )
        pos = 0
        while pos < len(data):
            step = 1 + pos % 7
            writer.write(data[pos : pos + step])
            await writer.drain()
            pos += step

    async with serve(handler) as addr, AdminClient(addr, timeout=5) as client:
        offsets = await asyncio.gather(*(client.max_offset(addr, "T", q) for q in range(40)))
    assert all_in.is_set()
    assert offsets == list(range(40))


async def test_answers_are_read_without_a_task_of_the_connection() -> None:
    # A fleet scan sends tens of thousands of requests: their answers are split and handed
    # out by the connection's protocol as the bytes arrive, with no task reading a stream.
    async def handler(cmd: Command, writer: asyncio.StreamWriter) -> None:
        writer.write(_reply(cmd, ext_fields={"offset": "3"}))

    async with serve(handler) as addr, AdminClient(addr, timeout=5) as client:
        assert await client.max_offset(addr, "T", 0) == 3
        assert await client.max_offset(addr, "T", 1) == 3
        ours = [t for t in asyncio.all_tasks() if _runs_client_code(t)]
        assert ours == []


def _runs_client_code(task: asyncio.Task[object]) -> bool:
    coro = task.get_coro()
    code = getattr(coro, "cr_code", None)
    return code is not None and "console/rocketmq" in code.co_filename


async def test_a_server_that_stops_reading_times_requests_out_while_they_wait_to_be_sent() -> None:
    # Two frames of 8 MB to a server that reads nothing: the first fills the socket and the
    # connection's buffer, the second waits for room; both end at their timeout, named.
    async def unread(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(30)

    server = await asyncio.start_server(unread, "127.0.0.1", 0)
    addr = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    pool = ConnectionPool()
    body = b"x" * (8 * 1024 * 1024)
    try:
        results = await asyncio.wait_for(
            asyncio.gather(
                *(pool.request(addr, 17, {}, body, 0.5) for _ in range(2)),
                return_exceptions=True,
            ),
            timeout=10,
        )
    finally:
        await pool.close()
        server.close()
    assert [type(r) for r in results] == [RequestTimeout, RequestTimeout]
    assert all(addr in str(r) for r in results)
