"""The client side of TLS on the remoting protocol.

A RocketMQ server speaks TLS and plaintext on the same port: it reads a connection's first byte,
and 0x16 (a TLS handshake) switches that connection to TLS (`NettyRemotingServer.TlsModeHandler`).
In `enforcing` mode it closes a plaintext connection once it has read the first frame, without a
byte; in `disabled` mode it closes a TLS one. A plaintext connection closed without a byte says
nothing more than that (a server starting or stopping closes one the same way): it is
`ClosedUnanswered`, its line naming both. Other TLS servers (a Java one, a TLS proxy in front of
the cluster) answer plaintext with a TLS alert record (0x15 0x03 ...): that proves TLS, and is
`TlsRefused`, as is every handshake failure, with its cause in the operator's words.

The context is built from file paths by the process that connects (console.config.TlsRef); no
certificate or key crosses a process boundary.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

from .errors import TlsCause, TlsRefused

#: OpenSSL's verify codes for a chain that ends in no CA we trust.
_UNTRUSTED = {
    2,  # unable to get issuer certificate
    18,  # self-signed certificate
    19,  # self-signed certificate in certificate chain
    20,  # unable to get local issuer certificate
    21,  # unable to verify the first certificate
}
_EXPIRED = 10
_NOT_YET_VALID = 9
_NAME_MISMATCH = {62, 63, 64}  # hostname, email, IP address mismatch
#: TLS alerts a server sends when it refuses the client's certificate (or its absence).
_CLIENT_CERT_ALERTS = (
    "CERTIFICATE_REQUIRED",
    "BAD_CERTIFICATE",
    "UNKNOWN_CA",
    "CERTIFICATE_UNKNOWN",
    "CERTIFICATE_EXPIRED",
    "CERTIFICATE_REVOKED",
    "UNSUPPORTED_CERTIFICATE",
    "ACCESS_DENIED",
    "HANDSHAKE_FAILURE",
)


class EncryptedKey(Exception):
    """The client key asks for a password: RocketMQ's PKCS#8 keys are read unencrypted here."""


def _no_password() -> bytes:
    # Without a callback OpenSSL would prompt on the terminal (and hang a console or an executor).
    raise EncryptedKey


def client_context(
    *, ca: str | None, cert: str | None, key: str | None, verify: bool
) -> ssl.SSLContext:
    """A client context: the server verified against `ca` (a PEM file; None: the system's CAs)
    unless `verify` is false, and `cert`/`key` presented when the server asks for one (mutual
    TLS). Raises OSError for a file that cannot be read, ssl.SSLError for one that is not a
    certificate or key, EncryptedKey for a key that needs a password."""
    if verify:
        context = ssl.create_default_context(cafile=ca)
    else:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if cert is not None:
        context.load_cert_chain(cert, key, password=_no_password)
    return context


@dataclass(frozen=True, slots=True)
class TlsClient:
    """What a connection needs to speak TLS: the context, the name the server's certificate is
    checked against (None: each address's host), and what was configured, for messages."""

    context: ssl.SSLContext
    server_name: str | None = None
    verify: bool = True
    #: A client certificate is configured (mutual TLS).
    has_cert: bool = False

    def checked_name(self, host: str) -> str:
        return self.server_name or host


#: The first byte of a TLS record a server sends a client that is not speaking TLS: an alert
#: (most servers), or a handshake (one that took our bytes for a hello it could answer).
_TLS_RECORD_TYPES = (0x15, 0x16)


def is_tls_record(data: bytes | bytearray) -> bool:
    """Whether the first bytes a server sent are a TLS record's header: its type, then version
    3.x (SSL 3.0 to TLS 1.3 all write 0x03, then 0x00 to 0x04). No RocketMQ frame starts so: its
    first four bytes are its length, and 0x1503.... is far beyond the largest frame."""
    if len(data) < 2:
        return False
    version_minor_ok = len(data) < 3 or data[2] <= 0x04
    return data[0] in _TLS_RECORD_TYPES and data[1] == 0x03 and version_minor_ok


def answered_with_tls(addr: str) -> TlsRefused:
    """A plaintext connection the server answered with a TLS record."""
    return TlsRefused(
        addr,
        TlsCause.PLAINTEXT,
        f"{addr} answered with TLS: the cluster requires TLS (`tls:` in the config)",
    )


def closed_after_handshake(addr: str, tls: TlsClient) -> TlsRefused:
    """A TLS connection the server closed before answering anything."""
    if tls.has_cert:
        why = "it may have refused our client certificate (`tls.cert`)"
    else:
        why = "it may require a client certificate (mutual TLS: `tls.cert` and `tls.key`)"
    return TlsRefused(
        addr,
        TlsCause.CLIENT_CERTIFICATE,
        f"{addr} closed the TLS connection before answering: {why}",
    )


def handshake_refused(addr: str, exc: BaseException, tls: TlsClient, host: str) -> TlsRefused:
    """What a failed TLS handshake (or the first read after it) means, with its cause."""
    name = tls.checked_name(host)
    if isinstance(exc, ssl.SSLCertVerificationError):
        code = exc.verify_code
        said = exc.verify_message or str(exc)
        if code in _UNTRUSTED:
            return TlsRefused(
                addr,
                TlsCause.UNKNOWN_CA,
                f"{addr}: TLS certificate for {name} not trusted (unknown CA: {said}): set "
                "`tls.ca` to the CA file that signed the cluster's certificates",
            )
        if code == _EXPIRED:
            return TlsRefused(
                addr, TlsCause.EXPIRED, f"{addr}: TLS certificate for {name} has expired"
            )
        if code == _NOT_YET_VALID:
            return TlsRefused(
                addr, TlsCause.EXPIRED, f"{addr}: TLS certificate for {name} is not valid yet"
            )
        if code in _NAME_MISMATCH:
            return TlsRefused(
                addr,
                TlsCause.NAME_MISMATCH,
                f"{addr}: TLS certificate is not valid for {name} (name mismatch): set "
                "`tls.server_name` to a name the certificate holds",
            )
        return TlsRefused(
            addr, TlsCause.UNVERIFIED, f"{addr}: TLS certificate for {name} not accepted: {said}"
        )
    reason = (getattr(exc, "reason", None) or "").upper()
    if reason == "WRONG_VERSION_NUMBER":
        return TlsRefused(
            addr,
            TlsCause.NOT_TLS,
            f"{addr} answered in plaintext, not TLS: remove `tls:` for this cluster",
        )
    if any(alert in reason for alert in _CLIENT_CERT_ALERTS) and "ALERT" in reason:
        alert = reason.rsplit("ALERT_", 1)[-1].lower().replace("_", " ")
        if not tls.has_cert:
            return TlsRefused(
                addr,
                TlsCause.CLIENT_CERTIFICATE,
                f"{addr} requires a TLS client certificate (mutual TLS; alert: {alert}): "
                "set `tls.cert` and `tls.key`",
            )
        return TlsRefused(
            addr,
            TlsCause.CLIENT_CERTIFICATE,
            f"{addr} refused our TLS client certificate (alert: {alert}): the cluster must "
            "trust the CA that signed `tls.cert`",
        )
    if isinstance(exc, ssl.SSLEOFError | ConnectionResetError | BrokenPipeError):
        return TlsRefused(
            addr,
            TlsCause.NOT_TLS,
            f"{addr} closed the connection during the TLS handshake: it may not accept TLS "
            "(tls.server.mode=disabled), or refuse our client certificate",
        )
    detail = " ".join(str(exc).split()) or type(exc).__name__
    return TlsRefused(addr, TlsCause.OTHER, f"TLS with {addr} failed: {detail}")
