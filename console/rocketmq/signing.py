"""ACL request signing (AclClientRPCHook; ACL 2.0 brokers check the same signature).

The signature covers the values of every extField sorted by key, then the raw body, keyed
with the secret (ACL 2.0: the user's password). Keys are compared as Java Strings (UTF-16 code
units), which for the ASCII field names used on the wire is Python's default order.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

ACCESS_KEY = "AccessKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"


@dataclass(frozen=True, slots=True)
class Credentials:
    access_key: str
    secret_key: str
    security_token: str | None = None

    def __repr__(self) -> str:  # never leak the secret into logs or tracebacks
        return f"Credentials(access_key={self.access_key!r}, secret_key='***')"


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be")


def signature(secret_key: str, ext_fields: dict[str, str], body: bytes) -> str:
    content = "".join(
        ext_fields[k] for k in sorted(ext_fields, key=_utf16_key) if k != SIGNATURE
    ).encode("utf-8")
    digest = hmac.new(secret_key.encode("utf-8"), content + body, hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


def sign(credentials: Credentials, ext_fields: dict[str, str], body: bytes) -> dict[str, str]:
    """Return the extFields with AccessKey, SecurityToken (if any) and Signature added."""
    signed = dict(ext_fields)
    signed[ACCESS_KEY] = credentials.access_key
    if credentials.security_token:
        signed[SECURITY_TOKEN] = credentials.security_token
    signed[SIGNATURE] = signature(credentials.secret_key, signed, body)
    return signed
