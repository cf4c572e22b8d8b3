"""The session's view of which brokers are down."""

from __future__ import annotations

from console.config import ClusterConfig
from console.services.session import ClusterSession
from console.services.source import BrokerState
from console.services.triage import History

from .fakes import FakeCluster, FakeSource


def _session() -> ClusterSession:
    cluster = ClusterConfig("c", ("127.0.0.1:9876",))
    return ClusterSession(cluster, FakeSource(FakeCluster()), History())


def test_a_broker_that_answers_a_data_refresh_is_up_again() -> None:
    session = _session()
    session.observe_brokers(
        [BrokerState("broker-a", "a:1", up=True), BrokerState("broker-b", "b:1", up=False)], 0
    )
    assert session.down == ("broker-b",)
    assert session.observe_answers(["broker-a"]) is False  # nothing changed
    assert session.down == ("broker-b",)
    assert session.observe_answers(["broker-a", "broker-b"]) is True
    assert session.down == ()
