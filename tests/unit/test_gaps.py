"""A missing piece keeps its kind and its one-line reason, and decides the exit code."""

from __future__ import annotations

from console.domain.gaps import (
    EXIT_NOTHING_READ,
    EXIT_OK,
    EXIT_PARTIAL,
    Gap,
    Part,
    Why,
    at_least,
    distinct,
    exit_code,
    gap,
)
from console.rocketmq.errors import AccessDenied, BrokerError, ConnectError, RequestTimeout


def test_each_failure_kind_is_named() -> None:
    denied = AccessDenied(
        "127.0.0.1:10911", 201, 16, "check signature failed", access_key="AK", authentication=True
    )
    assert gap(Part.BROKER, "broker-a", denied).why is Why.AUTHENTICATION
    assert "access key AK: check the secret" in gap(Part.BROKER, "broker-a", denied).detail
    forbidden = AccessDenied("a:1", 201, 16, "no permission", access_key="AK", authentication=False)
    assert gap(Part.BROKER, "broker-a", forbidden).why is Why.PERMISSION
    assert gap(Part.BROKER, "b", RequestTimeout("a:1", 201, 3.0)).why is Why.TIMEOUT
    assert gap(Part.BROKER, "b", ConnectError("a:1", "refused")).why is Why.DOWN
    assert gap(Part.BROKER, "b", BrokerError("a:1", 201, 1, "boom")).why is Why.ERROR


def test_detail_is_one_line() -> None:
    g = gap(Part.QUEUE, "orders/broker-a/3", BrokerError("a:1", 14, 1, "two\nlines"))
    assert "\n" not in g.detail
    assert g.line().startswith("queue orders/broker-a/3: ")


def test_exit_code_and_lower_bound() -> None:
    missing = [Gap(Part.BROKER, "broker-b", Why.TIMEOUT, "timed out")]
    assert exit_code([], anything_read=True) == EXIT_OK
    assert exit_code(missing, anything_read=True) == EXIT_PARTIAL
    assert exit_code(missing, anything_read=False) == EXIT_NOTHING_READ
    assert at_least(1980, True) == "≥1980"
    assert at_least(0, False) == "0"


def test_a_broker_is_named_where_the_error_names_its_address() -> None:
    denied = AccessDenied(
        "127.0.0.1:10911", 201, 16, "check signature failed", access_key="AK", authentication=True
    )
    g = gap(Part.BROKER, "broker-a", denied)
    assert g.detail.startswith("broker-a refused the signature for access key AK: check the secret")
    assert "127.0.0.1" not in g.detail
    assert "code 16" not in g.detail
    assert g.line() == f"broker {g.detail}"
    late = gap(
        Part.MIN_OFFSETS,
        "orders/broker-b",
        RequestTimeout("10.0.0.2:10911", 202, 1.0),
        broker="broker-b",
    )
    assert late.detail == "broker-b at 10.0.0.2:10911 did not answer request 202 within 1s"
    assert late.line().startswith("min offsets orders/broker-b: broker-b at 10.0.0.2:10911")


def test_each_missing_piece_once_and_back_from_json() -> None:
    a = Gap(Part.BROKER, "broker-b", Why.TIMEOUT, "first")
    again = Gap(Part.BROKER, "broker-b", Why.TIMEOUT, "second")
    other = Gap(Part.DLQ, "broker-b", Why.TIMEOUT, "dlq")
    assert distinct([a, again, other]) == [a, other]
    assert Gap.from_dict(a.to_dict()) == a
    assert a.to_dict() == {
        "part": "broker",
        "name": "broker-b",
        "why": "timed out",
        "detail": "first",
    }
