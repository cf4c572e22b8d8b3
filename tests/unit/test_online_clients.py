"""Who consumes a group, as a plan and a write decide it: asked of every broker of the group's
queues (a client heartbeats only the brokers of the topics it uses, so one broker's "not online"
says nothing of the others) and of every proxy (the brokers list no gRPC client); whether it
pops; unknown when the brokers list proxies nobody asked. Against the sandbox:
tests/integration (a consumer of a topic on broker-b only; the proxy cluster's POP groups)."""

from __future__ import annotations

from types import SimpleNamespace

from console.rocketmq.errors import RequestTimeout
from console.rocketmq.models import ClientConnection, ConsumerConnection
from console.services.read.group_clients import PROXY_GROUP
from console.services.read.online import consumers_of
from console.services.read.proxy_finder import ProxySearch

A, B, PROXY = "10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.5:8080"
BROKERS = {"broker-a": A, "broker-b": B}


class Cluster:
    def __init__(
        self,
        answers: dict[str, list[str] | Exception],
        modes: dict[str, dict] | None = None,
        proxies_seen: dict[str, list[str] | Exception] | None = None,
    ) -> None:
        self.answers = answers
        self.modes = modes or {}
        #: What each broker lists as clients of the proxies' own group (their host:port).
        self.proxies_seen = proxies_seen or {}
        self.asked: list[str] = []

    async def consumer_connections(self, addr: str, group: str) -> ConsumerConnection:
        if group == PROXY_GROUP:
            seen = self.proxies_seen.get(addr, [])
            if isinstance(seen, Exception):
                raise seen
            listed = [ClientConnection(f"proxy@{h}", h, "JAVA", 479) for h in seen]
            return ConsumerConnection(listed, "CONSUME_PASSIVELY", "BROADCASTING", None)
        self.asked.append(addr)
        answer = self.answers.get(addr, [])
        if isinstance(answer, Exception):
            raise answer
        clients = [ClientConnection(c, "10.0.0.9:1", "JAVA", 479) for c in answer]
        kind = "CONSUME_ACTIVELY" if addr == PROXY else "CONSUME_PASSIVELY"
        return ConsumerConnection(clients, kind, "CLUSTERING", None)

    async def message_request_modes(self, addr: str) -> dict:
        return self.modes.get(addr, {})


def reader(
    cluster: Cluster, proxies: tuple[str, ...] = (), search: ProxySearch | None = None
) -> SimpleNamespace:
    """A reader of `cluster` with `proxies` named; with none, looking for them finds
    `search` (None: not looked for)."""

    async def find_proxies(
        brokers: object, hosts_of: object = None, names: object = None
    ) -> ProxySearch | None:
        return search

    return SimpleNamespace(admin=cluster, proxies=proxies, find_proxies=find_proxies)


async def test_a_client_on_the_second_broker_only_is_online() -> None:
    c = Cluster({A: [], B: ["10.0.0.9@1"]})
    who = await consumers_of(reader(c), "g", BROKERS)  # type: ignore[arg-type]
    assert (who.clients, who.unknown, who.pop) == (frozenset({"10.0.0.9@1"}), None, False)
    assert sorted(c.asked) == [A, B]


async def test_nobody_named_while_a_broker_did_not_answer_is_unknown() -> None:
    c = Cluster({A: [], B: RequestTimeout(B, 203, 3.0)})
    who = await consumers_of(reader(c), "g", BROKERS)  # type: ignore[arg-type]
    assert who.clients == frozenset()
    assert who.unknown is not None
    assert "broker-b" in who.unknown


async def test_a_client_named_is_online_whatever_another_broker_did() -> None:
    c = Cluster({A: RequestTimeout(A, 203, 3.0), B: ["10.0.0.9@1"]})
    who = await consumers_of(reader(c), "g", BROKERS)  # type: ignore[arg-type]
    assert (who.clients, who.unknown) == (frozenset({"10.0.0.9@1"}), None)


async def test_a_grpc_client_through_a_proxy_is_online_and_pops() -> None:
    c = Cluster({A: [], B: [], PROXY: ["10.0.0.8@grpc"]})
    who = await consumers_of(reader(c, (PROXY,)), "g", BROKERS, ["clicks"])  # type: ignore[arg-type]
    assert (who.clients, who.pop) == (frozenset({"10.0.0.8@grpc"}), True)


async def test_a_remoting_client_a_broker_hands_pop_to_pops() -> None:
    c = Cluster({A: ["10.0.0.9@1"], B: []}, modes={A: {("clicks", "g"): "POP"}})
    who = await consumers_of(reader(c), "g", BROKERS, ["clicks"])  # type: ignore[arg-type]
    assert (who.online, who.pop) == (1, True)


async def test_nobody_online_while_the_brokers_list_proxies_nobody_asked_is_unknown() -> None:
    # gRPC consumers popping through the proxy are listed by the proxy only: not asking it
    # would read the group as offline, and a direct write would go under their feet.
    c = Cluster({A: [], B: []}, proxies_seen={A: ["10.0.0.5:40112"], B: ["10.0.0.5:40113"]})
    who = await consumers_of(reader(c), "g", BROKERS)  # type: ignore[arg-type]
    assert who.clients == frozenset()
    assert who.unknown is not None
    assert "1 proxy(ies) (at 10.0.0.5) and none was asked" in who.unknown


async def test_nobody_online_with_the_proxies_asked_is_offline() -> None:
    c = Cluster({A: [], B: [], PROXY: []}, proxies_seen={A: ["10.0.0.5:40112"]})
    who = await consumers_of(reader(c, (PROXY,)), "g", BROKERS)  # type: ignore[arg-type]
    assert (who.clients, who.unknown) == (frozenset(), None)


async def test_nobody_online_on_a_cluster_without_proxies_is_offline() -> None:
    c = Cluster({A: [], B: []})
    who = await consumers_of(reader(c), "g", BROKERS)  # type: ignore[arg-type]
    assert (who.clients, who.unknown) == (frozenset(), None)


async def test_brokers_that_cannot_say_whether_proxies_serve_them_leave_it_unknown() -> None:
    timeout = RequestTimeout(A, 203, 3.0)
    c = Cluster({A: [], B: []}, proxies_seen={A: timeout, B: RequestTimeout(B, 203, 3.0)})
    who = await consumers_of(reader(c), "g", BROKERS)  # type: ignore[arg-type]
    assert who.unknown is not None
    assert "whether proxies serve the cluster" in who.unknown


async def test_a_proxy_found_is_asked_as_a_named_one() -> None:
    c = Cluster({A: [], B: [], PROXY: ["10.0.0.8@grpc"]}, proxies_seen={A: ["10.0.0.5"]})
    found = ProxySearch(("10.0.0.5",), (PROXY,), ())
    who = await consumers_of(reader(c, search=found), "g", BROKERS, ["clicks"])  # type: ignore[arg-type]
    assert (who.clients, who.pop, who.unknown) == (frozenset({"10.0.0.8@grpc"}), True, None)


async def test_a_proxy_not_found_leaves_who_is_online_unknown_and_says_where_it_looked() -> None:
    c = Cluster({A: [], B: []}, proxies_seen={A: ["10.0.0.5"]})
    missed = ProxySearch(("10.0.0.5",), (), ((PROXY, "cannot connect to 10.0.0.5:8080: refused"),))
    who = await consumers_of(reader(c, search=missed), "g", BROKERS)  # type: ignore[arg-type]
    assert who.clients == frozenset()
    assert who.unknown is not None
    assert "none was asked (none answered at 10.0.0.5:8080: cannot connect" in who.unknown
