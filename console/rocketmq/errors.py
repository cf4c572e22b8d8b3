"""Typed errors of the wire client. Every failure a caller can see is one of these."""

from __future__ import annotations


class RocketMQError(Exception):
    """Base of every error raised by the wire client."""


class ProtocolError(RocketMQError):
    """Bytes that are not a valid remoting frame or fastjson body."""


class ConnectError(RocketMQError):
    """The address could not be reached (refused, unresolvable, or no answer within the timeout)."""

    def __init__(self, addr: str, reason: str) -> None:
        super().__init__(f"cannot connect to {addr}: {reason}")
        self.addr = addr
        self.reason = reason


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


class BrokerError(RocketMQError):
    """A server answered with a non-success code; `code` and `remark` are what it said."""

    def __init__(self, addr: str, request_code: int, code: int, remark: str | None) -> None:
        text = remark.strip() if remark else "no remark"
        super().__init__(f"{addr} answered request {request_code} with code {code}: {text}")
        self.addr = addr
        self.request_code = request_code
        self.code = code
        self.remark = remark


class NotFoundError(RocketMQError):
    """A named topic, group or broker does not exist in the cluster."""


class ReadOnlyError(RocketMQError):
    """A write asked of a client opened for reading only (a `read_only` cluster, or a read)."""
