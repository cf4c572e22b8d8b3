"""The TLS sandbox's JVM properties (RocketMQ's TlsSystemConfig names) and the `tls:` that
reaches it; the certificates its CA makes."""

from __future__ import annotations

import ssl
from pathlib import Path

from cryptography import x509

from console.sandbox.certs import make_tls_files
from console.sandbox.cluster import OFFSET_STORES, SandboxTls


def test_an_enforcing_mutual_sandbox_verifies_both_ends(tmp_path: Path) -> None:
    files = make_tls_files(tmp_path)
    props = SandboxTls(files, mutual=True).server_properties()
    assert props["tls.server.mode"] == "enforcing"
    assert props["tls.test.mode.enable"] == "false"
    assert props["tls.server.need.client.auth"] == "require"
    assert props["tls.server.authClient"] == "true"
    assert props["tls.server.trustCertPath"] == str(files.ca)
    # A broker is its name server's client: TLS there too, with a certificate of its own.
    assert props["tls.enable"] == "true"
    assert props["tls.client.certPath"] == str(files.server.cert)
    tls = SandboxTls(files, mutual=True).client()
    assert (tls.ca, tls.cert, tls.key) == (
        str(files.ca),
        str(files.client.cert),
        str(files.client.key),
    )
    assert tls.resolve().has_cert


def test_a_permissive_sandbox_takes_plaintext_too(tmp_path: Path) -> None:
    files = make_tls_files(tmp_path)
    props = SandboxTls(files, enforcing=False).server_properties()
    assert props["tls.server.mode"] == "permissive"
    assert props["tls.server.need.client.auth"] == "none"
    assert props["tls.enable"] == "false"  # the brokers reach the name server in plaintext
    assert SandboxTls(files).client().cert is None


def test_the_certificates_hold_loopback_and_keys_are_private(tmp_path: Path) -> None:
    files = make_tls_files(tmp_path)
    server = x509.load_pem_x509_certificate(files.server.cert.read_bytes())
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in names.get_values_for_type(x509.DNSName)
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert files.server.key.read_text().startswith("-----BEGIN PRIVATE KEY-----")  # PKCS#8
    assert files.server.key.stat().st_mode & 0o077 == 0
    assert files.client.key.stat().st_mode & 0o077 == 0
    # Python's own TLS takes them as the servers' and the clients' pairs.
    ssl.create_default_context(cafile=files.ca).load_cert_chain(files.client.cert, files.client.key)


def test_the_rocksdb_offset_store_is_configmanager_v2() -> None:
    assert OFFSET_STORES["rocksdb"] == {"configManagerVersion": "v2"}
    assert OFFSET_STORES["json"] == {}
