"""ACL signing: which fields are covered, in which order, and that secrets never leak."""

from __future__ import annotations

import base64
import hashlib
import hmac

from console.rocketmq.signing import Credentials, sign, signature


def _hmac(secret: str, data: bytes) -> str:
    return base64.b64encode(hmac.new(secret.encode(), data, hashlib.sha1).digest()).decode()


def test_values_are_concatenated_in_key_order_then_the_body() -> None:
    fields = {"topic": "T", "AccessKey": "ak", "queueId": "3", "Signature": "ignored"}
    # Java String order: uppercase sorts before lowercase.
    assert signature("sk", fields, b"BODY") == _hmac("sk", b"ak3TBODY")


def test_sign_adds_access_key_token_and_signature() -> None:
    signed = sign(Credentials("ak", "sk", "tok"), {"group": "G"}, b"")
    assert signed["AccessKey"] == "ak"
    assert signed["SecurityToken"] == "tok"
    # AccessKey, SecurityToken, group
    assert signed["Signature"] == _hmac("sk", b"aktokG")


def test_signature_depends_on_every_field() -> None:
    base = signature("sk", {"a": "1", "b": "2"}, b"")
    assert signature("sk", {"a": "1", "b": "3"}, b"") != base
    assert signature("other", {"a": "1", "b": "2"}, b"") != base


def test_credentials_repr_hides_the_secret() -> None:
    text = repr(Credentials("ak", "super-secret"))
    assert "super-secret" not in text
    assert "ak" in text
