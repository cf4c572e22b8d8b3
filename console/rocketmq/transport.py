"""One request at a time to a server of the cluster, as every admin operation sends it: the one
rule on writes (none from a read-only client, none to a slave), refusals of access told from
other errors, and the name servers asked in turn (the next one when one cannot be reached, and
also when one is slower than `HEDGE_S` to answer). The operations are console/rocketmq/admin.py's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any, Literal, Self

from .bodies import field_text
from .codes import WRITE_CODES, ResponseCode
from .connection import ConnectionPool
from .errors import (
    AccessDenied,
    BrokerError,
    ConnectError,
    ConnectionLost,
    NotMaster,
    ReadOnlyError,
    RequestTimeout,
    RocketMQError,
    TlsRefused,
    UnreachableAddress,
)
from .frame import Command
from .models import MASTER_ID, Broker
from .namesrv import NameServers
from .reach import DIRECT, Reach
from .signing import Credentials
from .tls import TlsClient

#: After this long without an answer from a name server, the next one is asked too (the first
#: to answer wins); at most half the request timeout.
HEDGE_S = 1.0


class Transport:
    """Speaks the remoting protocol to one name server list and any broker it names."""

    def __init__(
        self,
        namesrv: str | Sequence[str],
        *,
        timeout: float = 3.0,
        credentials: Credentials | None = None,
        read_only: str | None = None,
        tls: TlsClient | None = None,
        reach: Reach = DIRECT,
    ) -> None:
        """`read_only`, when given, is why this client must not write: every write operation
        then raises ReadOnlyError with it, before anything is sent. `tls`: every connection,
        to name servers and brokers alike, speaks TLS with it. `reach`: where a connection to
        an address goes (mapped, through SOCKS; console.rocketmq.reach)."""
        addrs = [namesrv] if isinstance(namesrv, str) else list(namesrv)
        # One string may hold several, as in RocketMQ's NAMESRV_ADDR ("a:9876;b:9876").
        self.namesrv = [
            a.strip() for item in addrs for a in item.replace(",", ";").split(";") if a.strip()
        ]
        if not self.namesrv:
            raise ValueError("no name server address given")
        self.timeout = timeout
        self.read_only = read_only
        self._pool = ConnectionPool(credentials, tls, reach)
        self.tls = tls
        self.reach = reach
        #: The access key requests are signed with (None: unsigned), named in AccessDenied.
        self.access_key = credentials.access_key if credentials else None
        #: Which name server to ask first, and those that did not answer lately (`news()` tells
        #: each once: the CLI prints it on stderr, the console shows it in its status line).
        self.name_servers = NameServers(self.namesrv)
        self.server_versions: dict[str, int] = {}
        #: Broker name and id of every address a name server listed (id 0 = master).
        self.broker_roles: dict[str, tuple[str, int]] = {}

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._pool.close()

    async def call(
        self,
        addr: str,
        code: int,
        fields: dict[str, Any] | None = None,
        body: bytes = b"",
        *,
        timeout: float | None = None,
        ok: Iterable[int] = (ResponseCode.SUCCESS,),
    ) -> Command:
        """One request; raises BrokerError unless the response code is in `ok` (AccessDenied
        when the server refused the credentials or what they may do)."""
        if int(code) in WRITE_CODES:
            # Checked here, where every request passes, not per operation: nothing that changes
            # the cluster leaves a read-only client, nor goes to a slave, whichever method
            # builds it.
            if self.read_only is not None:
                raise ReadOnlyError(
                    f"request {int(code)} would change the cluster: {self.read_only}"
                )
            role = self.broker_roles.get(addr)
            if role is not None and role[1] != MASTER_ID:
                raise NotMaster(addr, int(code), broker=role[0], broker_id=role[1])
        ext = {k: field_text(v) for k, v in (fields or {}).items() if v is not None}
        try:
            resp = await self._pool.request(addr, int(code), ext, body, timeout or self.timeout)
        except ConnectError as exc:
            raise self._unreachable(exc) from None
        self.server_versions[addr] = resp.version
        if resp.code not in set(ok):
            raise self._refusal(addr, int(code), resp.code, resp.remark)
        return resp

    def _unreachable(self, error: ConnectError) -> ConnectError:
        """A registered address (a broker's or a slave's, as a name server listed it) that
        could not be connected to directly is named as such, with the ways out: it may be an
        address of another network (a pod IP, a private address behind NAT)."""
        role = self.broker_roles.get(error.addr)
        if role is None or error.via is not None or type(error) is not ConnectError:
            return error
        name, broker_id = role
        broker = name if broker_id == MASTER_ID else f"{name}'s slave (broker id {broker_id})"
        return UnreachableAddress(error.addr, error.reason, broker)

    def _refusal(self, addr: str, request_code: int, code: int, remark: str | None) -> BrokerError:
        denied = access_denial(code, remark)
        if denied is None:
            return BrokerError(addr, request_code, code, remark)
        return AccessDenied(
            addr,
            request_code,
            code,
            remark,
            access_key=self.access_key,
            authentication=denied == "authentication",
        )

    async def call_namesrv(
        self, code: int, fields: dict[str, Any] | None = None, **kw: Any
    ) -> Command:
        """Ask the name servers in turn until one answers; its errors are final.

        The next one is asked as soon as one fails, and also when one has not answered after
        HEDGE_S (then the first answer wins and the silent one is remembered as not answering):
        a hung name server first in the list costs each call HEDGE_S at most, once, not a
        timeout per call (see NameServers).
        """
        order = self.name_servers.order()
        hedge = min(HEDGE_S, (kw.get("timeout") or self.timeout) / 2)
        loop = asyncio.get_running_loop()
        asking: dict[asyncio.Future[Command], tuple[str, float]] = {}
        errors: list[RocketMQError] = []

        def ask_next() -> None:
            addr = order.pop(0)
            future = asyncio.ensure_future(self.call(addr, code, fields, **kw))
            future.add_done_callback(_retrieve)
            asking[future] = (addr, loop.time())

        ask_next()
        try:
            while asking:
                done, _ = await asyncio.wait(
                    asking, timeout=hedge if order else None, return_when=asyncio.FIRST_COMPLETED
                )
                if not done:
                    ask_next()  # the one(s) asked are slow: ask the next one as well
                    continue
                answered = [f for f in done if f.exception() is None]
                if answered:
                    addr, _ = asking.pop(answered[0])
                    for slow, (other, since) in asking.items():
                        if not slow.done():
                            waited = loop.time() - since
                            self.name_servers.failed(other, f"no answer within {waited:.1f}s")
                    self.name_servers.answered(addr)
                    return answered[0].result()
                for future in done:
                    addr, _ = asking.pop(future)
                    exc = future.exception()
                    if not isinstance(exc, RocketMQError) or isinstance(exc, BrokerError):
                        assert exc is not None
                        raise exc
                    errors.append(exc)
                    self.name_servers.failed(addr, _unanswered_reason(exc))
                    if order:
                        ask_next()
        finally:
            for future in asking:
                future.cancel()
        if len(errors) == 1:
            raise errors[0]
        refused = [e for e in errors if isinstance(e, TlsRefused)]
        if len(refused) == len(errors):
            # Every name server refused our TLS (or its absence): a configuration problem,
            # said as such, never "cannot connect".
            raise refused[0]
        raise ConnectError(",".join(self.namesrv), "; ".join(str(e) for e in errors))

    def _learn(self, broker: Broker) -> Broker:
        for broker_id, addr in broker.addrs.items():
            self.broker_roles[addr] = (broker.name, broker_id)
        return broker


# How servers word a refusal of who is asking (fact sheet §6): ACL 2.0 (5.3.x) answers
# NO_PERMISSION with "username cannot be null.", "check signature failed.", "User:x is not
# found.", "User:x is disabled."; ACL 1.0 (4.9.x) answers SYSTEM_ERROR with an AclException's
# text ("Check signature failed for accessKey=x", "No acl config for x", "No accessKey is
# configured"). A denied permission says "permission" in both ("x has no permission to access
# Topic:t from ip", "No default permission for t", "Need admin permission for request code=n").
_AUTHENTICATION_WORDS = (
    "signature",
    "username cannot be null",
    "not found",
    "is disabled",
    "accesskey",
    "acl config",
    "authentication",
)


Denial = Literal["authentication", "authorization"]


def access_denial(code: int, remark: str | None) -> Denial | None:
    """Whether an error answer refuses the credentials ("authentication"), what they may do
    ("authorization"), or is no refusal of access at all (None)."""
    text = (remark or "").lower()
    acl_v1 = code == ResponseCode.SYSTEM_ERROR and "aclexception" in text
    if code != ResponseCode.NO_PERMISSION and not acl_v1:
        return None
    if "permission" not in text and any(word in text for word in _AUTHENTICATION_WORDS):
        return "authentication"
    return "authorization"


def _unanswered_reason(error: RocketMQError) -> str:
    """Why a name server did not answer, in a few words."""
    if isinstance(error, RequestTimeout):
        return "timed out"
    if isinstance(error, ConnectError):
        return f"cannot connect: {error.reason}"
    if isinstance(error, ConnectionLost):
        return f"connection lost: {error.reason}"
    if isinstance(error, TlsRefused):
        return f"TLS: {error.cause}"
    return str(error)


def _retrieve(future: asyncio.Future[Any]) -> None:
    """A name server's answer nobody waits for any more (another answered): its error is seen."""
    if not future.cancelled():
        future.exception()
