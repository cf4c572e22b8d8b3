"""One TCP connection per server address, requests multiplexed by opaque.

Many requests can be in flight on one connection: each gets a future keyed by its opaque, and
the connection's protocol (`FrameProtocol`) splits the bytes that arrive into frames and
resolves those futures as responses come, in any order: no stream reader and no task reading,
so a response costs its parse and a future's result (a fleet scan sends tens of thousands). A
connection that the server closed (idle timeout, restart) is replaced on the next request.

An address is connected to as console.rocketmq.reach says (directly, mapped, or through a
SOCKS proxy); the connection and its errors keep the address it was asked for.

With TLS (console.rocketmq.tls) every connection is a TLS one, its handshake bounded by the
request timeout. A server that refuses the protocol we speak says so in bytes where it can (a TLS
alert to our plaintext, a failed handshake): that fails the requests with `TlsRefused`, a
configuration problem, never a server down. A plaintext connection closed before any answer
without a byte is `ClosedUnanswered`: a server starting or stopping, or one that requires TLS
(a RocketMQ server in `enforcing` mode hangs up so), nothing tells which. A TLS connection closed
so after its handshake is taken for a refused client certificate (`closed_after_handshake`).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import ssl

from . import frame
from .codes import FLAG_ONEWAY, FLAG_RESPONSE, ResponseCode
from .errors import (
    ClosedUnanswered,
    ConnectError,
    ConnectionLost,
    ProtocolError,
    RequestTimeout,
    RocketMQError,
)
from .frame import Command
from .reach import DIRECT, Reach
from .signing import Credentials, sign
from .tls import (
    TlsClient,
    answered_with_tls,
    closed_after_handshake,
    handshake_refused,
    is_tls_record,
)

log = logging.getLogger(__name__)

#: How long closing a connection waits for what it has buffered to be sent.
CLOSE_S = 1.0


def split_addr(addr: str) -> tuple[str, int]:
    host, sep, port = addr.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"not a host:port address: {addr!r}")
    return host, int(port)


class FrameProtocol(asyncio.Protocol):
    """The bytes of one transport: frames split out of them, responses handed to the futures
    waiting for them, and the frames of one event-loop turn written together. Its requests
    (`pending`) are its own: a connection replaced by the next one fails only what was asked
    of it."""

    def __init__(self, addr: str, tls: TlsClient | None) -> None:
        self.addr = addr
        self._tls = tls
        self.transport: asyncio.Transport | None = None
        self.pending: dict[int, asyncio.Future[Command]] = {}
        #: Frames received so far: none means the server never answered.
        self._frames = 0
        #: Bytes of a frame not complete yet.
        self._buffer = bytearray()
        #: Frames of this turn of the event loop, written together at its end (see `send`).
        self._unsent: list[bytes] = []
        #: Requests waiting for the transport's buffer to drain (the server reads slowly).
        self._drain: list[asyncio.Future[None]] = []
        self._paused = False
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    @property
    def is_open(self) -> bool:
        return self.transport is not None and not self.transport.is_closing()

    @property
    def paused(self) -> bool:
        return self._paused

    # ---- writing ---------------------------------------------------------------------------

    def send(self, data: bytes) -> None:
        """Write `data`, when other requests are in flight with the other frames sent in this
        turn of the event loop: a read of many groups sends tens of requests a turn (each answer
        lets the next out), and a socket write each was a tenth of a fleet scan's CPU. A request
        alone (a new connection's first, whose write may meet a TLS refusal) is written at once."""
        if self._unsent:
            self._unsent.append(data)
        elif len(self.pending) <= 1:
            assert self.transport is not None
            self.transport.write(data)
        else:
            self._unsent.append(data)
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        data = b"".join(self._unsent)
        self._unsent.clear()
        # A connection lost meanwhile has failed the requests waiting for these frames.
        if self.is_open:
            assert self.transport is not None
            self.transport.write(data)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        for waiter in self._drain:
            if not waiter.done():
                waiter.set_result(None)
        self._drain.clear()

    def drained(self) -> asyncio.Future[None]:
        """Done when the transport takes writes again (or failed with the connection)."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._drain.append(waiter)
        return waiter

    # ---- reading ---------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self._buffer:
            self._buffer += data
            buf: bytes | bytearray = self._buffer
        else:
            buf = data
        end = len(buf)
        pos = 0
        try:
            while end - pos >= 4:
                if not self._frames and self._tls is None and is_tls_record(buf[pos : pos + 4]):
                    self._drop(answered_with_tls(self.addr))
                    return
                length = frame.frame_length(buf[pos : pos + 4])
                if end - pos - 4 < length:
                    break
                cmd = frame.decode(buf[pos + 4 : pos + 4 + length])
                pos += 4 + length
                self._frames += 1
                self._dispatch(cmd)
        except ProtocolError as exc:
            # After a bad frame the stream position is unknown: drop the connection.
            reason = f"protocol error: {exc}"
            log.warning("%s: %s", self.addr, reason)
            self._drop(ConnectionLost(self.addr, reason))
            return
        if buf is self._buffer:
            del self._buffer[:pos]
        elif pos < end:
            self._buffer = bytearray(buf[pos:])

    def _dispatch(self, cmd: Command) -> None:
        if cmd.flag & FLAG_RESPONSE:
            future = self.pending.pop(cmd.opaque, None)
            if future is not None and not future.done():
                future.set_result(cmd)
        elif not cmd.flag & FLAG_ONEWAY:
            self._refuse(cmd)

    def _refuse(self, cmd: Command) -> None:
        """An admin client serves no requests; say so rather than leave the server waiting."""
        reply = Command(
            code=ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
            opaque=cmd.opaque,
            flag=FLAG_RESPONSE,
            remark=f"request code {cmd.code} not supported by an admin client",
        )
        if self.is_open:
            assert self.transport is not None
            self.transport.write(frame.encode(reply))

    def eof_received(self) -> bool | None:
        return None  # the transport closes; connection_lost says why

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is None:
            error = self._closed_unanswered(bytes(self._buffer))
            self.fail_all(error or ConnectionLost(self.addr, "closed by the server"))
        else:
            self.fail_all(self.lost(exc))
        self.transport = None
        self._buffer.clear()
        if not self.closed.done():
            self.closed.set_result(None)

    def _closed_unanswered(self, partial: bytes) -> RocketMQError | None:
        """The server closed the connection (`partial`: the bytes of the frame it began): before
        it answered anything, what those bytes prove, or that nothing was said (see the
        module's docstring); after, an ordinary close."""
        if self._frames:
            return None
        if self._tls is not None:
            return closed_after_handshake(self.addr, self._tls)
        if is_tls_record(partial):
            return answered_with_tls(self.addr)
        if partial:
            return ConnectionLost(
                self.addr, f"closed the connection {len(partial)} bytes into its first answer"
            )
        return ClosedUnanswered(self.addr)

    def lost(self, exc: BaseException) -> RocketMQError:
        """A read or write failed: a TLS alert (a refused client certificate arrives after the
        handshake, with TLS 1.3) is a refusal, anything else a lost connection. (A reset is
        not a refusal: a server refusing plaintext has read our bytes and closes cleanly; a
        reset is what a killed server's unread data gets.)"""
        if isinstance(exc, ssl.SSLError) and self._tls is not None:
            host = self.addr.rpartition(":")[0]
            return handshake_refused(self.addr, exc, self._tls, host)
        return ConnectionLost(self.addr, str(exc))

    # ---- ending ----------------------------------------------------------------------------

    def fail_all(self, exc: Exception) -> None:
        for future in self.pending.values():
            if not future.done():
                future.set_exception(exc)
        self.pending.clear()
        for waiter in self._drain:
            if not waiter.done():
                waiter.set_exception(exc)
        self._drain.clear()

    def _drop(self, error: RocketMQError) -> None:
        self.fail_all(error)
        self.close()

    def abort(self) -> None:
        self._unsent.clear()
        if self.transport is not None:
            self.transport.abort()

    def close(self) -> None:
        # Frames not written yet belong to requests failed with this connection: never to be
        # sent on the next one (a write its caller was told failed).
        self._unsent.clear()
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if self._tls is not None:
            # A graceful TLS close waits for the server's close_notify, which a RocketMQ
            # server (Netty's SslHandler) does not send: asyncio would wait 30 s for it.
            # Nothing is pending by now, so the connection is simply dropped.
            transport.abort()
        else:
            transport.close()


def _expire(future: asyncio.Future[Command], addr: str, code: int, timeout: float) -> None:
    if not future.done():
        future.set_exception(RequestTimeout(addr, code, timeout))


class Connection:
    def __init__(
        self,
        addr: str,
        opaques: itertools.count[int],
        tls: TlsClient | None = None,
        reach: Reach = DIRECT,
    ) -> None:
        self.addr = addr
        self._opaques = opaques
        self._tls = tls
        #: Where a connection to `addr` goes (mapped, through SOCKS); `addr` names it always.
        self._reach = reach
        self._protocol: FrameProtocol | None = None
        self._lock = asyncio.Lock()

    @property
    def is_open(self) -> bool:
        return self._protocol is not None and self._protocol.is_open

    async def open(self, timeout: float) -> FrameProtocol:
        async with self._lock:
            if self._protocol is not None and self._protocol.is_open:
                return self._protocol
            try:
                host, _ = split_addr(self.addr)
                # A map's target is checked when the map is made; the address itself here.
                self._reach.target(self.addr)
            except ValueError as exc:
                raise ConnectError(self.addr, str(exc)) from None
            tls = self._tls
            via = self._reach.route(self.addr)
            try:
                async with asyncio.timeout(timeout):
                    _, protocol = await self._reach.open(
                        self.addr,
                        timeout,
                        lambda: FrameProtocol(self.addr, tls),
                        ssl_context=tls.context if tls is not None else None,
                        # The certificate is the server's own: checked against its registered
                        # host (or the configured name), wherever the connection goes.
                        server_hostname=tls.checked_name(host) if tls is not None else None,
                    )
            except TimeoutError:
                raise ConnectError(self.addr, f"no answer within {timeout:g}s", via) from None
            except (ssl.SSLError, ConnectionResetError, BrokenPipeError) as exc:
                if tls is None:
                    raise ConnectError(self.addr, exc.strerror or str(exc), via) from None
                raise handshake_refused(self.addr, exc, tls, host) from None
            except OSError as exc:
                raise ConnectError(self.addr, exc.strerror or str(exc), via) from None
            self._protocol = protocol
            return protocol

    async def request(self, cmd: Command, timeout: float) -> Command:
        protocol = self._protocol
        if protocol is None or not protocol.is_open:
            protocol = await self.open(timeout)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if protocol.paused:
            try:
                async with asyncio.timeout_at(deadline):
                    await protocol.drained()
            except TimeoutError:
                raise RequestTimeout(self.addr, cmd.code, timeout) from None
            if not protocol.is_open:  # lost while it drained, after its requests were failed
                raise ConnectionLost(self.addr, "closed before the request was sent")
        opaque = cmd.opaque = next(self._opaques) & 0x7FFFFFFF
        future: asyncio.Future[Command] = loop.create_future()
        protocol.pending[opaque] = future
        protocol.send(frame.encode(cmd))
        # A timer, not a timeout scope: one handle to cancel, where a scope per request was
        # a cancellation armed and disarmed for each of a scan's 30,000.
        timer = loop.call_at(deadline, _expire, future, self.addr, cmd.code, timeout)
        try:
            return await future
        finally:
            timer.cancel()
            protocol.pending.pop(opaque, None)

    async def close(self) -> None:
        protocol = self._protocol
        self._protocol = None
        if protocol is None:
            return
        protocol.fail_all(ConnectionLost(self.addr, "closed by the client"))
        protocol.close()
        try:
            # A server that stopped reading never takes what is still buffered: a graceful
            # close would wait for it for ever. Every request is failed by now.
            async with asyncio.timeout(CLOSE_S):
                await asyncio.shield(protocol.closed)
        except TimeoutError:
            protocol.abort()


class ConnectionPool:
    """Connections by address, shared by every request of one client."""

    def __init__(
        self,
        credentials: Credentials | None = None,
        tls: TlsClient | None = None,
        reach: Reach = DIRECT,
    ) -> None:
        self._connections: dict[str, Connection] = {}
        self._opaques = itertools.count(1)
        self._credentials = credentials
        self._tls = tls
        self._reach = reach

    async def request(
        self,
        addr: str,
        code: int,
        fields: dict[str, str] | None,
        body: bytes,
        timeout: float,
    ) -> Command:
        ext = dict(fields or {})
        if self._credentials is not None:
            ext = sign(self._credentials, ext, body)
        cmd = Command(code=code, ext_fields=ext, body=body)
        conn = self._connections.get(addr)
        if conn is None:
            conn = self._connections[addr] = Connection(addr, self._opaques, self._tls, self._reach)
        return await conn.request(cmd, timeout)

    async def close(self) -> None:
        conns = list(self._connections.values())
        self._connections.clear()
        await asyncio.gather(*(c.close() for c in conns))
