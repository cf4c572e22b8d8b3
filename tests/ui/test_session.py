"""The session's view of which brokers are down."""

from __future__ import annotations

from console.config import ClusterConfig
from console.domain.readings import Refreshes
from console.services.read.cluster_session import ClusterSession
from console.services.read.routes import BrokerHealth

from .fakes import FakeCluster, FakeSource


def _session() -> ClusterSession:
    cluster = ClusterConfig("c", ("127.0.0.1:9876",))
    return ClusterSession(cluster, FakeSource(FakeCluster()), Refreshes())


def test_a_broker_that_answers_a_data_refresh_is_up_again() -> None:
    session = _session()
    session.observe_brokers(
        [BrokerHealth("broker-a", "a:1", up=True), BrokerHealth("broker-b", "b:1", up=False)], 0
    )
    assert session.down == ("broker-b",)
    assert session.observe_answers(["broker-a"]) is False  # nothing changed
    assert session.down == ("broker-b",)
    assert session.observe_answers(["broker-a", "broker-b"]) is True
    assert session.down == ()


def test_a_master_down_with_its_slave_up_is_read_there_and_named_down() -> None:
    session = _session()
    master = BrokerHealth("broker-a", "a:1", up=True)
    slave = BrokerHealth("broker-a", "a:2", up=True, broker_id=1)
    session.observe_brokers([master, slave], 0)
    assert (session.down, session.unanswered, session.from_slave) == ((), (), {})
    assert session.known_brokers == {"broker-a": "a:1"}  # where writes go: never the slave

    # The master leaves the name server; its slave stays and answers.
    gone = BrokerHealth("broker-a", "", up=False, error="master not registered")
    session.observe_brokers([gone, slave], 1_000)
    assert [(b.broker_id, b.addr, b.up) for b in session.brokers] == [
        (0, "a:1", False),  # the address it had
        (1, "a:2", True),
    ]
    assert session.down == ("broker-a",)
    assert session.from_slave == {"broker-a": slave}
    # Reads reach it through the slave: a group read is not short of broker-a's queues.
    assert session.unanswered == ()
    assert session.known_brokers == {"broker-a": "a:1"}
    assert session.last_seen_ms == {("broker-a", 0): 0, ("broker-a", 1): 1_000}

    # A slave down is named as such; with no address of broker-a answering, reads lack it.
    session.observe_brokers([gone, BrokerHealth("broker-a", "a:2", up=False, broker_id=1)], 2_000)
    assert session.down == ("broker-a", "broker-a slave 1")
    assert session.unanswered == ("broker-a",)
    assert session.from_slave == {}


def test_an_answer_through_the_slave_does_not_bring_the_master_back() -> None:
    session = _session()
    slave = BrokerHealth("broker-a", "a:2", up=True, broker_id=1)
    session.observe_brokers([BrokerHealth("broker-a", "a:1", up=False), slave], 0)
    assert session.observe_answers([]) is False
    assert session.down == ("broker-a",)
    # The master's own answer does.
    assert session.observe_answers(["broker-a"]) is True
    assert session.down == ()
