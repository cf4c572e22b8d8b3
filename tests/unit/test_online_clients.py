"""Who is online is asked of every broker of the group's queues: a client heartbeats only the
brokers of the topics it uses, so one broker's "not online" says nothing of the others (against
the sandbox: tests/integration, a consumer of a topic on broker-b only)."""

from __future__ import annotations

from types import SimpleNamespace

from console.rocketmq.errors import RequestTimeout
from console.rocketmq.models import ClientConnection, ConsumerConnection
from console.services.apply_check import online_clients

A, B = "10.0.0.1:10911", "10.0.0.2:10911"


class Brokers:
    def __init__(self, answers: dict[str, list[str] | Exception]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def consumer_connections(self, addr: str, group: str) -> ConsumerConnection:
        self.asked.append(addr)
        answer = self.answers[addr]
        if isinstance(answer, Exception):
            raise answer
        clients = [ClientConnection(c, "10.0.0.9:1", "JAVA", 479) for c in answer]
        return ConsumerConnection(clients, "CONSUME_PASSIVELY", "CLUSTERING", None)


def reader(answers: dict[str, list[str] | Exception]) -> SimpleNamespace:
    return SimpleNamespace(admin=Brokers(answers))


async def test_a_client_on_the_second_broker_only_is_online() -> None:
    r = reader({A: [], B: ["10.0.0.9@1"]})
    clients, error = await online_clients(r, "g", {"broker-a": A, "broker-b": B})  # type: ignore[arg-type]
    assert (clients, error) == (frozenset({"10.0.0.9@1"}), None)
    assert sorted(r.admin.asked) == [A, B]


async def test_nobody_named_while_a_broker_did_not_answer_is_unknown() -> None:
    r = reader({A: [], B: RequestTimeout(B, 203, 3.0)})
    clients, error = await online_clients(r, "g", {"broker-a": A, "broker-b": B})  # type: ignore[arg-type]
    assert clients == frozenset()
    assert error is not None
    assert "broker-b" in error


async def test_a_client_named_is_online_whatever_another_broker_did() -> None:
    r = reader({A: RequestTimeout(A, 203, 3.0), B: ["10.0.0.9@1"]})
    clients, error = await online_clients(r, "g", {"broker-a": A, "broker-b": B})  # type: ignore[arg-type]
    assert (clients, error) == (frozenset({"10.0.0.9@1"}), None)
