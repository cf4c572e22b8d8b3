"""One TCP connection per server address, requests multiplexed by opaque.

Many requests can be in flight on one connection: each gets a future keyed by its opaque, and a
single reader task resolves them as responses arrive in any order. A connection that the server
closed (idle timeout, restart) is replaced on the next request.

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
import contextlib
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


def split_addr(addr: str) -> tuple[str, int]:
    host, sep, port = addr.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"not a host:port address: {addr!r}")
    return host, int(port)


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
        #: Frames received on the connection now open: none means the server never answered.
        self._frames = 0
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._pending: dict[int, asyncio.Future[Command]] = {}
        #: Frames of this turn of the event loop, written together at its end (see `_send`).
        self._unsent: list[bytes] = []
        self._read_task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    @property
    def is_open(self) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    async def open(self, timeout: float) -> None:
        async with self._lock:
            if self.is_open:
                return
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
                    self._reader, self._writer = await self._reach.open(
                        self.addr,
                        timeout,
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
            self._frames = 0
            self._read_task = asyncio.create_task(self._read_loop(), name=f"rmq-read {self.addr}")

    async def request(self, cmd: Command, timeout: float) -> Command:
        if not self.is_open:
            await self.open(timeout)
        assert self._writer is not None
        cmd.opaque = next(self._opaques) & 0x7FFFFFFF
        future: asyncio.Future[Command] = asyncio.get_running_loop().create_future()
        self._pending[cmd.opaque] = future
        try:
            self._send(frame.encode(cmd))
            async with asyncio.timeout(timeout):
                await self._writer.drain()
                return await future
        except TimeoutError:
            raise RequestTimeout(self.addr, cmd.code, timeout) from None
        except (ConnectionError, OSError) as exc:
            lost = self._lost(exc)
            self._fail_all(lost)
            raise lost from None
        finally:
            self._pending.pop(cmd.opaque, None)

    def _send(self, data: bytes) -> None:
        """Write `data`, when other requests are in flight with the other frames sent in this
        turn of the event loop: a read of many groups sends tens of requests a turn (each answer
        lets the next out), and a socket write each was a tenth of a fleet scan's CPU. A request
        alone (a new connection's first, whose write may meet a TLS refusal) is written at once."""
        if self._unsent:
            self._unsent.append(data)
        elif len(self._pending) <= 1:
            assert self._writer is not None
            self._writer.write(data)
        else:
            self._unsent.append(data)
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        data = b"".join(self._unsent)
        self._unsent.clear()
        # A connection lost meanwhile has failed the requests waiting for these frames.
        if self._writer is not None and not self._writer.is_closing():
            self._writer.write(data)

    async def _read_loop(self) -> None:
        assert self._reader is not None
        error: RocketMQError | None = None
        reason = "closed by the server"
        prefix = b""  # the first frame's length, once read: part of what a close cut short
        try:
            while True:
                prefix = await self._reader.readexactly(4)
                if not self._frames and self._tls is None and is_tls_record(prefix):
                    error = answered_with_tls(self.addr)
                    break
                length = frame.frame_length(prefix)
                cmd = frame.decode(await self._reader.readexactly(length))
                self._frames += 1
                if cmd.flag & FLAG_RESPONSE:
                    future = self._pending.get(cmd.opaque)
                    if future is not None and not future.done():
                        future.set_result(cmd)
                elif not cmd.flag & FLAG_ONEWAY:
                    self._refuse(cmd)
        except asyncio.IncompleteReadError as exc:
            error = self._closed_unanswered(prefix + exc.partial)
        except ProtocolError as exc:
            # After a bad frame the stream position is unknown: drop the connection.
            reason = f"protocol error: {exc}"
            log.warning("%s: %s", self.addr, reason)
        except (ConnectionError, OSError) as exc:
            error = self._lost(exc)
        self._fail_all(error or ConnectionLost(self.addr, reason))
        self._close_transport()

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

    def _lost(self, exc: BaseException) -> RocketMQError:
        """A read or write failed: a TLS alert (a refused client certificate arrives after the
        handshake, with TLS 1.3) is a refusal, anything else a lost connection. (A reset is
        not a refusal: a server refusing plaintext has read our bytes and closes cleanly; a
        reset is what a killed server's unread data gets.)"""
        if isinstance(exc, ssl.SSLError) and self._tls is not None:
            host = self.addr.rpartition(":")[0]
            return handshake_refused(self.addr, exc, self._tls, host)
        return ConnectionLost(self.addr, str(exc))

    def _refuse(self, cmd: Command) -> None:
        """An admin client serves no requests; say so rather than leave the server waiting."""
        reply = Command(
            code=ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
            opaque=cmd.opaque,
            flag=FLAG_RESPONSE,
            remark=f"request code {cmd.code} not supported by an admin client",
        )
        if self._writer is not None:
            self._writer.write(frame.encode(reply))

    def _fail_all(self, exc: Exception) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(exc)
        self._pending.clear()

    def _close_transport(self) -> None:
        # Frames not written yet belong to requests failed with this connection: never to be
        # sent on the next one (a write its caller was told failed).
        self._unsent.clear()
        if self._writer is not None:
            if self._tls is not None:
                # A graceful TLS close waits for the server's close_notify, which a RocketMQ
                # server (Netty's SslHandler) does not send: asyncio would wait 30 s for it.
                # Nothing is pending by now, so the connection is simply dropped.
                self._writer.transport.abort()
            else:
                self._writer.close()
        self._writer = None
        self._reader = None

    async def close(self) -> None:
        task = self._read_task
        self._read_task = None
        self._fail_all(ConnectionLost(self.addr, "closed by the client"))
        writer = self._writer
        self._close_transport()
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if writer is not None:
            with contextlib.suppress(Exception):
                await writer.wait_closed()


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
