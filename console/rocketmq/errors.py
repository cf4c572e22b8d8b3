"""Typed errors of the wire client. Every failure a caller can see is one of these.

They cross process boundaries (the console's network process sends them to the UI process) as
themselves: unpickled, each is the same class with the same fields and the same message.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


def _rebuild(cls: type[RocketMQError], args: tuple[Any, ...]) -> RocketMQError:
    # BaseException.__new__ stores the args (the message) without running __init__, whose own
    # arguments are not the message; the fields come back from the pickled __dict__.
    return cls.__new__(cls, *args)


class RocketMQError(Exception):
    """Base of every error raised by the wire client."""

    def __reduce__(self) -> tuple[Any, ...]:
        # The default rebuilds an exception by calling its class with its message, which fails
        # for every error here whose constructor takes fields (ConnectError(addr, reason), …).
        return (_rebuild, (type(self), self.args), dict(self.__dict__))


class ProtocolError(RocketMQError):
    """Bytes that are not a valid remoting frame or fastjson body."""


class ConnectError(RocketMQError):
    """The address could not be reached (refused, unresolvable, or no answer within the timeout)."""

    def __init__(self, addr: str, reason: str, via: str | None = None) -> None:
        """`via`: how the address was reached when not directly ("mapped to HOST:PORT",
        "through SOCKS HOST:PORT")."""
        where = f"{addr} ({via})" if via else addr
        super().__init__(f"cannot connect to {where}: {reason}")
        self.addr = addr
        self.reason = reason
        self.via = via


class UnreachableAddress(ConnectError):
    """A server's registered address (what a broker told the name server) that this machine
    cannot connect to, reached directly: from another network (a pod IP, a private address
    behind NAT, a network behind a bastion) it is never reached, and the line says both ways
    out. `broker` names who registered it."""

    def __init__(self, addr: str, reason: str, broker: str) -> None:
        RocketMQError.__init__(
            self,
            f"cannot connect to {addr}, the address {broker} registered with the name server "
            f"({reason}): from another network, map it to an address this machine reaches "
            f"(--map-address {addr}=HOST:PORT, or address_map: in the config) or go through a "
            "SOCKS proxy on that network (--socks HOST:PORT, or socks: in the config; "
            "ssh -D 1080 BASTION opens one)",
        )
        self.addr = addr
        self.reason = reason
        self.via = None
        self.broker = broker


class TlsCause(StrEnum):
    """Why TLS between us and a server did not work."""

    PLAINTEXT = "plaintext refused"  # we spoke plaintext; the server answered with TLS
    NOT_TLS = "not TLS"  # we spoke TLS; the server does not
    UNKNOWN_CA = "unknown CA"
    EXPIRED = "expired"
    NAME_MISMATCH = "name mismatch"
    UNVERIFIED = "certificate not accepted"
    CLIENT_CERTIFICATE = "client certificate refused"
    OTHER = "handshake failed"


class TlsRefused(RocketMQError):
    """TLS between us and a server did not work (the server requires it, does not speak it, or
    a certificate was refused on either side): a configuration problem, never a server down."""

    def __init__(self, addr: str, cause: TlsCause, message: str) -> None:
        super().__init__(message)
        self.addr = addr
        self.cause = cause


class RequestTimeout(RocketMQError):
    def __init__(self, addr: str, code: int, timeout: float) -> None:
        super().__init__(f"{addr} did not answer request {code} within {timeout:g}s")
        self.addr = addr
        self.code = code
        self.timeout = timeout


class ConnectionLost(RocketMQError):
    def __init__(self, addr: str, reason: str) -> None:
        super().__init__(f"connection to {addr} lost: {reason}")
        self.addr = addr
        self.reason = reason


class ClosedUnanswered(ConnectionLost):
    """A plaintext connection the server closed before answering anything, without a byte that
    says why. A server starting or stopping does this, and so does one that requires TLS (a
    RocketMQ server in `enforcing` mode reads our first frame and hangs up without a word):
    nothing tells them apart, so it is a lost connection (a master's slave may answer instead),
    its line naming both. A server that answers with TLS bytes is `TlsRefused`."""

    def __init__(self, addr: str) -> None:
        reason = (
            "closed the connection before answering (a server starting or stopping does this; "
            "so does one that requires TLS: `tls:` in the config)"
        )
        RocketMQError.__init__(self, f"{addr} {reason}")
        self.addr = addr
        self.reason = reason


class BrokerError(RocketMQError):
    """A server answered with a non-success code; `code` and `remark` are what it said."""

    def __init__(self, addr: str, request_code: int, code: int, remark: str | None) -> None:
        self.addr = addr
        self.request_code = request_code
        self.code = code
        self.remark = remark
        super().__init__(self.describe())

    @property
    def said(self) -> str:
        """The server's remark, trimmed; "no remark" when it gave none."""
        return self.remark.strip() if self.remark and self.remark.strip() else "no remark"

    def describe(self) -> str:
        code = f"request {self.request_code} with code {self.code}"
        return f"{self.addr} answered {code}: {self.said}"


class AccessDenied(BrokerError):
    """The server refused the request's credentials (`authentication`: an unsigned request, a
    wrong secret, an unknown user) or what those credentials may do (a permission denied).

    `access_key` is the key the request was signed with (None: not signed); the secret is never
    kept here.
    """

    def __init__(
        self,
        addr: str,
        request_code: int,
        code: int,
        remark: str | None,
        *,
        access_key: str | None,
        authentication: bool,
    ) -> None:
        self.access_key = access_key
        self.authentication = authentication
        super().__init__(addr, request_code, code, remark)

    def describe(self) -> str:
        said = f" (the server said: {self.said})"
        key = self.access_key
        if self.authentication:
            text = self.said.lower()
            if key is None:
                return (
                    f"{self.addr} accepts signed requests only: set credentials (access key and "
                    f"secret) for this cluster in the config{said}"
                )
            if "signature" in text:
                return (
                    f"{self.addr} refused the signature for access key {key}: "
                    f"check the secret{said}"
                )
            if "not found" in text or "no acl config" in text:
                return (
                    f"{self.addr} does not know access key {key}: check the access key "
                    f"(the user must exist on the broker){said}"
                )
            return f"{self.addr} refused access key {key}: check the access key and secret{said}"
        if key is None:
            return f"{self.addr} refused request {self.request_code}: no permission{said}"
        return (
            f"{self.addr} denied access key {key} request {self.request_code}: grant that user "
            f"the permission on the broker, or use an access key that has it{said}"
        )


class NotFoundError(RocketMQError):
    """A named topic, group or broker does not exist in the cluster."""


class ReadOnlyError(RocketMQError):
    """A write asked of a client opened for reading only (a `read_only` cluster, or a read)."""


class NotMaster(RocketMQError):
    """A write request for an address the name server lists as a slave: refused before it is
    sent. Offsets are written to a broker's master only (RocketMQ's own consumers commit to a
    slave when the master is down; the console never does)."""

    def __init__(self, addr: str, request_code: int, *, broker: str, broker_id: int) -> None:
        super().__init__(
            f"{addr} is a slave (broker id {broker_id}) of {broker}: request {request_code} "
            f"changes the cluster and goes to the master only, never to a slave"
        )
        self.addr = addr
        self.request_code = request_code
        self.broker = broker
        self.broker_id = broker_id
