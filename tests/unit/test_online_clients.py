"""Who consumes a group, as a write checks it: asked of every broker of the group's queues (a
client heartbeats only the brokers of the topics it uses, so one broker's "not online" says
nothing of the others) and of every proxy (the brokers list no gRPC client); whether it pops.
Against the sandbox: tests/integration (a consumer of a topic on broker-b only; the proxy
cluster's POP groups)."""

from __future__ import annotations

from types import SimpleNamespace

from console.rocketmq.errors import RequestTimeout
from console.rocketmq.models import ClientConnection, ConsumerConnection
from console.services.apply.check import consumers_of

A, B, PROXY = "10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.5:8080"
BROKERS = {"broker-a": A, "broker-b": B}


class Cluster:
    def __init__(
        self, answers: dict[str, list[str] | Exception], modes: dict[str, dict] | None = None
    ) -> None:
        self.answers = answers
        self.modes = modes or {}
        self.asked: list[str] = []

    async def consumer_connections(self, addr: str, group: str) -> ConsumerConnection:
        self.asked.append(addr)
        answer = self.answers.get(addr, [])
        if isinstance(answer, Exception):
            raise answer
        clients = [ClientConnection(c, "10.0.0.9:1", "JAVA", 479) for c in answer]
        kind = "CONSUME_ACTIVELY" if addr == PROXY else "CONSUME_PASSIVELY"
        return ConsumerConnection(clients, kind, "CLUSTERING", None)

    async def message_request_modes(self, addr: str) -> dict:
        return self.modes.get(addr, {})


def reader(cluster: Cluster) -> SimpleNamespace:
    return SimpleNamespace(admin=cluster)


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
    who = await consumers_of(reader(c), "g", BROKERS, [PROXY], ["clicks"])  # type: ignore[arg-type]
    assert (who.clients, who.pop) == (frozenset({"10.0.0.8@grpc"}), True)


async def test_a_remoting_client_a_broker_hands_pop_to_pops() -> None:
    c = Cluster({A: ["10.0.0.9@1"], B: []}, modes={A: {("clicks", "g"): "POP"}})
    who = await consumers_of(reader(c), "g", BROKERS, (), ["clicks"])  # type: ignore[arg-type]
    assert (who.online, who.pop) == (1, True)
