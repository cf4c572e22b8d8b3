"""Which error answers are refusals of access, and what the operator is told to do about them.
The remarks are the servers' own words (5.3.x ACL 2.0, 4.9.x ACL 1.0; fact sheet §6); the real
ACL broker is in tests/integration/test_acl.py."""

from __future__ import annotations

import pytest

from console.rocketmq.codes import ResponseCode
from console.rocketmq.errors import AccessDenied, BrokerError
from console.rocketmq.transport import access_denial

NO_PERMISSION = ResponseCode.NO_PERMISSION
SYSTEM_ERROR = ResponseCode.SYSTEM_ERROR
ACL1 = "org.apache.rocketmq.acl.common.AclException: {}, org.apache.rocketmq.acl.plain."


@pytest.mark.parametrize(
    ("code", "remark", "denial"),
    [
        (NO_PERMISSION, "username cannot be null.", "authentication"),
        (NO_PERMISSION, "check signature failed.", "authentication"),
        (NO_PERMISSION, "User:nobody is not found.", "authentication"),
        (NO_PERMISSION, "User:ops is disabled.", "authentication"),
        (NO_PERMISSION, "User:ops not found.", "authentication"),
        (
            NO_PERMISSION,
            "User:ops has no permission to access Topic:t from 10.0.0.9, no matched policies.",
            "authorization",
        ),
        (NO_PERMISSION, "the broker[b] sending message is forbidden", "authorization"),
        (SYSTEM_ERROR, ACL1.format("Check signature failed for accessKey=ops"), "authentication"),
        (SYSTEM_ERROR, ACL1.format("No acl config for nobody"), "authentication"),
        (SYSTEM_ERROR, ACL1.format("No accessKey is configured"), "authentication"),
        (
            SYSTEM_ERROR,
            ACL1.format("Need admin permission for request code=17, but accessKey=ops is not"),
            "authorization",
        ),
        (SYSTEM_ERROR, ACL1.format("No default permission for topic=t"), "authorization"),
        (SYSTEM_ERROR, "java.lang.NullPointerException", None),
        (ResponseCode.TOPIC_NOT_EXIST, "topic[t] not exist", None),
        (NO_PERMISSION, None, "authorization"),
    ],
)
def test_refusals_of_access_are_told_from_other_errors(
    code: int, remark: str | None, denial: str | None
) -> None:
    assert access_denial(code, remark) == denial


def denied(remark: str, key: str | None, *, authentication: bool) -> AccessDenied:
    return AccessDenied(
        "10.0.0.3:10911", 28, 16, remark, access_key=key, authentication=authentication
    )


def test_the_message_says_what_to_do() -> None:
    wrong_secret = denied("check signature failed.", "ops", authentication=True)
    assert str(wrong_secret) == (
        "10.0.0.3:10911 refused the signature for access key ops: check the secret "
        "(the server said: check signature failed.)"
    )
    assert "check the access key" in str(denied("User:x is not found.", "x", authentication=True))
    unsigned = str(denied("username cannot be null.", None, authentication=True))
    assert "set credentials (access key and secret) for this cluster in the config" in unsigned
    refused = str(
        denied("User:ops has no permission to access Topic:t", "ops", authentication=False)
    )
    assert "denied access key ops request 28: grant that user the permission" in refused


def test_an_access_refusal_is_still_a_broker_error_with_its_fields() -> None:
    error = denied("check signature failed.", "ops", authentication=True)
    assert isinstance(error, BrokerError)
    assert (error.addr, error.request_code, error.code, error.remark) == (
        "10.0.0.3:10911",
        28,
        16,
        "check signature failed.",
    )
    assert (error.access_key, error.authentication) == ("ops", True)
