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
