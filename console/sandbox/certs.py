"""A certificate authority of the sandbox's own, and the certificates it signs for TLS.

The TLS sandbox's name server and brokers present a certificate this CA signed (for 127.0.0.1 and
localhost), and trust only it for the client certificates of mutual TLS; the console, mqadmin and
the Java consumers verify the servers against it. Keys are EC P-256 in unencrypted PKCS#8 PEM, as
RocketMQ's servers read them (`tls.server.keyPath`), written readable by their owner only.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

LOOPBACK_NAMES = ("localhost",)
LOOPBACK_IPS = ("127.0.0.1",)
VALID_FOR = dt.timedelta(days=30)


@dataclass(frozen=True, slots=True)
class Authority:
    """A CA: its key signs, its certificate is what clients and servers trust."""

    name: str
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate


@dataclass(frozen=True, slots=True)
class Issued:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey


@dataclass(frozen=True, slots=True)
class KeyPair:
    """A certificate and its key, as files."""

    cert: Path
    key: Path


@dataclass(frozen=True, slots=True)
class SandboxCerts:
    """What a TLS sandbox runs with: the CA's certificate, the servers' pair (also their client
    pair towards each other: a broker is the name server's client) and a client pair for the
    console and the Java clients."""

    ca: Path
    server: KeyPair
    client: KeyPair


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "rmq-console sandbox"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def new_authority(
    name: str = "rmq-console sandbox CA", *, now: dt.datetime | None = None
) -> Authority:
    now = now or dt.datetime.now(dt.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = _name(name)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + VALID_FOR)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return Authority(name, key, cert)


def issue(
    ca: Authority,
    common_name: str,
    *,
    dns: tuple[str, ...] = LOOPBACK_NAMES,
    ips: tuple[str, ...] = LOOPBACK_IPS,
    not_before: dt.datetime | None = None,
    not_after: dt.datetime | None = None,
) -> Issued:
    """A certificate for both ends of a connection (server and client authentication), valid
    for `dns` and `ips`; `not_before`/`not_after` make one not yet valid or expired."""
    now = dt.datetime.now(dt.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before or now - dt.timedelta(hours=1))
        .not_valid_after(not_after or now + VALID_FOR)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()),
            critical=False,
        )
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return Issued(builder.sign(ca.key, hashes.SHA256()), key)


def write_cert(cert: x509.Certificate, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def write_pair(issued: Issued, directory: Path, name: str) -> KeyPair:
    """`<name>.pem` and `<name>.key` (PKCS#8, unencrypted, mode 0600) in `directory`."""
    key = directory / f"{name}.key"
    directory.mkdir(parents=True, exist_ok=True)
    pem = issued.key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(pem)
    return KeyPair(write_cert(issued.cert, directory / f"{name}.pem"), key)


def make_tls_files(directory: Path) -> SandboxCerts:
    """A new CA, a certificate for the servers and one for their clients, in `directory`."""
    ca = new_authority()
    return SandboxCerts(
        ca=write_cert(ca.cert, directory / "ca.pem"),
        server=write_pair(issue(ca, "rocketmq sandbox server"), directory, "server"),
        client=write_pair(issue(ca, "rmq-console", dns=(), ips=()), directory, "client"),
    )
