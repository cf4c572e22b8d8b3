"""TLS on the wire client, against in-process TLS servers holding certificates the sandbox's CA
code makes: a request answered over TLS, and each way TLS can fail named by its cause (the same
failures against real brokers: tests/integration/test_tls.py)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from console.config import ConfigError, TlsRef
from console.rocketmq import frame
from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import FLAG_RESPONSE
from console.rocketmq.errors import TlsCause, TlsRefused
from console.rocketmq.frame import Command
from console.rocketmq.reach import Reach
from console.sandbox.certs import (
    KeyPair,
    issue,
    new_authority,
    write_cert,
    write_pair,
)
from tests.support.socks5 import socks5


@dataclass(frozen=True)
class Pki:
    ca: Path
    server: KeyPair
    client: KeyPair
    expired: KeyPair
    other_ca: Path
    stranger: KeyPair  # a client certificate of the other CA


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    d = tmp_path_factory.mktemp("pki")
    ca, other = new_authority(), new_authority("another CA")
    past = dt.datetime.now(dt.UTC) - dt.timedelta(days=3)
    return Pki(
        ca=write_cert(ca.cert, d / "ca.pem"),
        server=write_pair(issue(ca, "server"), d, "server"),
        client=write_pair(issue(ca, "console", dns=(), ips=()), d, "client"),
        expired=write_pair(
            issue(ca, "old", not_before=past, not_after=past + dt.timedelta(days=1)), d, "old"
        ),
        other_ca=write_cert(other.cert, d / "other-ca.pem"),
        stranger=write_pair(issue(other, "stranger", dns=(), ips=()), d, "stranger"),
    )


@contextlib.asynccontextmanager
async def tls_server(
    pki: Pki, *, pair: KeyPair | None = None, client_ca: Path | None = None
) -> AsyncIterator[str]:
    """A server answering every request with offset 7, over TLS with `pair` (the server's by
    default); with `client_ca`, a client certificate of that CA is required."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    chosen = pair or pki.server
    context.load_cert_chain(chosen.cert, chosen.key)
    if client_ca is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(client_ca)

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            while True:
                length = frame.frame_length(await reader.readexactly(4))
                cmd = frame.decode(await reader.readexactly(length))
                reply = Command(
                    code=0, opaque=cmd.opaque, flag=FLAG_RESPONSE, ext_fields={"offset": "7"}
                )
                writer.write(frame.encode(reply))
                await writer.drain()
        writer.transport.abort()

    server = await asyncio.start_server(on_client, "127.0.0.1", 0, ssl=context)
    try:
        yield f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        await server.wait_closed()


async def ask(addr: str, tls: TlsRef) -> int:
    async with AdminClient(addr, timeout=5, tls=tls.resolve()) as client:
        return await client.max_offset(addr, "T", 0)


async def refusal(addr: str, tls: TlsRef) -> TlsRefused:
    with pytest.raises(TlsRefused) as info:
        await ask(addr, tls)
    return info.value


async def test_a_request_over_tls_verified_against_the_ca(pki: Pki) -> None:
    async with tls_server(pki) as addr:
        assert await ask(addr, TlsRef(ca=str(pki.ca))) == 7


async def test_mutual_tls_with_a_client_certificate(pki: Pki) -> None:
    tls = TlsRef(ca=str(pki.ca), cert=str(pki.client.cert), key=str(pki.client.key))
    async with tls_server(pki, client_ca=pki.ca) as addr:
        assert await ask(addr, tls) == 7


async def test_an_unknown_ca_is_named(pki: Pki) -> None:
    async with tls_server(pki) as addr:
        refused = await refusal(addr, TlsRef(ca=str(pki.other_ca)))
    assert refused.cause is TlsCause.UNKNOWN_CA
    assert str(refused).startswith(f"{addr}: TLS certificate for 127.0.0.1 not trusted (unknown CA")
    assert "set `tls.ca`" in str(refused)


async def test_an_expired_certificate_is_named(pki: Pki) -> None:
    async with tls_server(pki, pair=pki.expired) as addr:
        refused = await refusal(addr, TlsRef(ca=str(pki.ca)))
    assert refused.cause is TlsCause.EXPIRED
    assert str(refused) == f"{addr}: TLS certificate for 127.0.0.1 has expired"


async def test_a_name_the_certificate_does_not_hold_is_named(pki: Pki) -> None:
    async with tls_server(pki) as addr:
        refused = await refusal(addr, TlsRef(ca=str(pki.ca), server_name="mq.example"))
        # The name it holds passes.
        assert await ask(addr, TlsRef(ca=str(pki.ca), server_name="localhost")) == 7
    assert refused.cause is TlsCause.NAME_MISMATCH
    assert "not valid for mq.example (name mismatch)" in str(refused)


async def test_without_verification_any_certificate_is_taken(pki: Pki) -> None:
    async with tls_server(pki, pair=pki.expired) as addr:
        assert await ask(addr, TlsRef(ca=str(pki.other_ca), verify=False)) == 7


async def test_a_required_client_certificate_missing_or_refused(pki: Pki) -> None:
    stranger = TlsRef(ca=str(pki.ca), cert=str(pki.stranger.cert), key=str(pki.stranger.key))
    async with tls_server(pki, client_ca=pki.ca) as addr:
        missing = await refusal(addr, TlsRef(ca=str(pki.ca)))
        refused = await refusal(addr, stranger)
    assert missing.cause is refused.cause is TlsCause.CLIENT_CERTIFICATE
    # The refusal comes as a TLS alert, or (when the server drops the connection first) as a
    # TLS connection closed before any answer; either way the line names the certificate.
    assert str(missing).startswith(addr)
    assert "client certificate (mutual TLS" in str(missing)
    assert "`tls.cert` and `tls.key`" in str(missing)
    assert str(refused).startswith(addr)
    assert "our client certificate" in str(refused) or "our TLS client certificate" in str(refused)


async def test_tls_to_a_plaintext_server_that_hangs_up(pki: Pki) -> None:
    """A server in `tls.server.mode=disabled` closes a connection that starts a handshake."""

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    addr = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        refused = await refusal(addr, TlsRef(ca=str(pki.ca)))
    finally:
        server.close()
        await server.wait_closed()
    assert refused.cause is TlsCause.NOT_TLS
    assert "closed the connection during the TLS handshake" in str(refused)


def test_files_that_cannot_be_used_are_config_errors(pki: Pki, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"tls.ca: cannot read .*nope.pem: no such file"):
        TlsRef(ca=str(tmp_path / "nope.pem")).resolve()
    not_a_cert = tmp_path / "text.pem"
    not_a_cert.write_text("hello\n")
    with pytest.raises(ConfigError, match=r"tls: cannot use ca .*text.pem"):
        TlsRef(ca=str(not_a_cert)).resolve()


def test_an_encrypted_key_is_refused_without_a_prompt(pki: Pki, tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(pki.client.key.read_bytes(), password=None)
    locked = tmp_path / "locked.key"
    locked.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"pw"),
        )
    )
    tls = TlsRef(ca=str(pki.ca), cert=str(pki.client.cert), key=str(locked))
    with pytest.raises(ConfigError, match=r"tls.key: .*locked.key is encrypted"):
        tls.resolve()


async def test_through_a_map_or_socks_the_certificate_is_checked_for_the_registered_name(
    pki: Pki,
) -> None:
    # The server's certificate holds 127.0.0.1 and localhost; the broker registered 127.0.0.77,
    # reached at 127.0.0.1 through a map or a SOCKS proxy. The name checked is the one the
    # cluster gave (or tls.server_name), never the address connected to.
    async with tls_server(pki) as addr:
        registered = f"127.0.0.77:{addr.rpartition(':')[2]}"
        with socks5({"127.0.0.77": "127.0.0.1"}) as proxy:
            for reach in (Reach.of([("127.0.0.77", "127.0.0.1")]), Reach.of(socks=proxy.addr)):
                for server_name, answer in ((None, None), ("localhost", 7)):
                    tls = TlsRef(ca=str(pki.ca), server_name=server_name).resolve()
                    async with AdminClient(addr, timeout=5, tls=tls, reach=reach) as client:
                        if answer is None:
                            with pytest.raises(TlsRefused) as refused:
                                await client.max_offset(registered, "T", 0)
                            assert refused.value.cause is TlsCause.NAME_MISMATCH
                            assert "127.0.0.77" in str(refused.value)
                        else:
                            assert await client.max_offset(registered, "T", 0) == answer
        assert proxy.asked_for("127.0.0.77") == [registered, registered]
