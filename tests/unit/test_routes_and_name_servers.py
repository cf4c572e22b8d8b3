"""Pure logic of masters/slaves and of name-server memory: which address a read goes to, which
name server is asked first, what is told once. The real brokers and name servers:
tests/integration/test_master_slave.py and tests/integration/test_name_servers.py."""

from __future__ import annotations

import pytest

from console.config import split_namesrv
from console.rocketmq.admin import AdminClient
from console.rocketmq.models import Broker
from console.rocketmq.namesrv import NameServers, Unanswered
from console.services.read.routes import BrokerRoute, brokers_to_read_from_slave, read_addrs


def test_a_route_reads_the_master_while_there_is_one() -> None:
    route = BrokerRoute.of(Broker("b", "c", {1: "s1:1", 0: "m:1", 2: "s2:1"}))
    assert (route.master_addr, route.read_addr, route.from_slave) == ("m:1", "m:1", False)
    assert route.slaves == {1: "s1:1", 2: "s2:1"}
    assert list(route.addrs.items()) == [(0, "m:1"), (1, "s1:1"), (2, "s2:1")]


def test_a_route_without_master_reads_the_lowest_slave() -> None:
    route = BrokerRoute.of(Broker("b", "c", {2: "s2:1", 1: "s1:1"}))
    assert (route.master_addr, route.read_addr, route.from_slave) == (None, "s1:1", True)
    assert list(route.addrs) == [1, 2]
    nothing = BrokerRoute("gone", None, {})
    assert (nothing.read_addr, nothing.from_slave) == (None, False)
    routes = {"a": BrokerRoute("a", "m:1", {}), "b": route, "gone": nothing}
    assert read_addrs(routes) == {"a": "m:1", "b": "s1:1"}
    assert brokers_to_read_from_slave(routes) == ("b",)


def test_namesrv_lists_are_split_on_semicolons_and_commas() -> None:
    assert split_namesrv(" a:1; b:2,c:3 ;") == ("a:1", "b:2", "c:3")
    assert AdminClient("a:1;b:2, c:3").namesrv == ["a:1", "b:2", "c:3"]
    assert AdminClient(["a:1,b:2", "c:3"]).name_servers.addrs == ("a:1", "b:2", "c:3")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_name_server_that_did_not_answer_is_asked_last_for_a_while() -> None:
    clock = Clock()
    ns = NameServers(["a:1", "b:1", "c:1"], remember_for=60, clock=clock)
    assert ns.order() == ["a:1", "b:1", "c:1"]
    ns.failed("a:1", "timed out")
    assert ns.order() == ["b:1", "c:1", "a:1"]
    ns.answered("b:1")
    assert ns.current == "b:1"
    assert ns.order() == ["b:1", "c:1", "a:1"]
    assert ns.unanswered() == (Unanswered("a:1", "timed out", "b:1"),)
    clock.now += 61  # forgotten: asked again in its turn, after the one that answers
    assert ns.order() == ["b:1", "c:1", "a:1"]
    assert ns.unanswered() == ()
    ns.failed("b:1", "cannot connect: refused")
    assert ns.order() == ["c:1", "a:1", "b:1"]


def test_every_name_server_failing_are_still_asked_soonest_forgotten_first() -> None:
    clock = Clock()
    ns = NameServers(["a:1", "b:1"], clock=clock)
    ns.failed("b:1", "timed out")
    clock.now += 5
    ns.failed("a:1", "timed out")
    assert ns.order() == ["b:1", "a:1"]


def test_each_name_server_is_told_once() -> None:
    ns = NameServers(["a:1", "b:1"], clock=Clock())
    ns.failed("a:1", "timed out")
    ns.answered("b:1")
    (told,) = ns.news()
    assert told.line() == "name server a:1 did not answer (timed out); using b:1"
    assert ns.news() == ()
    ns.failed("a:1", "timed out")  # again later: state, not news
    assert ns.news() == ()
    assert [u.addr for u in ns.unanswered()] == ["a:1"]


def test_no_name_server_is_refused() -> None:
    with pytest.raises(ValueError, match="no name server"):
        NameServers([])
