"""The rest of a client push is not resumed while its consumers are online: a push carries one
time for every queue of a topic on a broker, so it cannot finish single queues without moving
again those it verified, and a direct write would be overwritten by the consumers' next commit.
The refusal says so, and what to do; with the consumers stopped, what is left is written
directly."""

from __future__ import annotations

from types import SimpleNamespace

from console.domain.journal import ApplyStatus, Journal, JournalQueue, QueueState
from console.domain.reset_paths import ResetPathKind
from console.rocketmq.models import ClientConnection, ConsumerConnection, MessageQueue
from console.services.apply.resume_check import check_resume
from tests.support.readers import no_proxy_listed

ADDR, GROUP, TOPIC = "10.0.0.1:10911", "billing", "orders"
V4_9_7 = 407


class LegacyBroker:
    """A 4.9.7 broker (no server-side reset) holding queue 1 at its before-image."""

    def __init__(self, online: int) -> None:
        self.online = online

    async def consumer_connections(self, addr: str, group: str) -> ConsumerConnection:
        clients = [
            ClientConnection(f"10.0.0.9@{i}", "10.0.0.9:1", "JAVA", V4_9_7)
            for i in range(self.online)
        ]
        return ConsumerConnection(clients, "CONSUME_PASSIVELY", "CLUSTERING", None)

    async def message_request_modes(self, addr: str) -> dict[tuple[str, str], str]:
        return {}

    async def query_consumer_offset(self, addr: str, group: str, topic: str, q: int) -> int:
        return 50

    async def topic_stats(self, addr: str, topic: str) -> dict[MessageQueue, SimpleNamespace]:
        return {
            MessageQueue(TOPIC, "broker-a", q): SimpleNamespace(min_offset=0, max_offset=200)
            for q in (0, 1)
        }

    async def broker_config(self, addr: str) -> dict[str, str]:
        return {}

    server_versions = {ADDR: V4_9_7}


def pushed_part_way() -> Journal:
    """A client push that verified queue 0 and lost broker-a before queue 1 showed."""
    queues = (
        JournalQueue(GROUP, TOPIC, "broker-a", ADDR, 0, 50, 10, QueueState.VERIFIED, 10),
        JournalQueue(GROUP, TOPIC, "broker-a", ADDR, 1, 50, 10, QueueState.FAILED),
    )
    return Journal(
        "20261128T000000000Z-apply-billing-aaaaaa",
        "apply",
        "p",
        "sha256:0",
        "prod",
        {GROUP: str(ResetPathKind.CLIENT_PUSH)},
        "ops@host",
        0,
        queues,
        ApplyStatus.STOPPED,
    )


def reader(online: int) -> SimpleNamespace:
    async def brokers() -> dict[str, str]:
        return {"broker-a": ADDR}

    return SimpleNamespace(
        admin=LegacyBroker(online), brokers=brokers, proxies=(), find_proxies=no_proxy_listed
    )


async def test_a_client_push_left_part_way_is_refused_while_its_consumers_are_online() -> None:
    check = await check_resume(reader(online=2), pushed_part_way())  # type: ignore[arg-type]
    (blocker,) = check.blockers
    assert blocker.startswith(f"group {GROUP}: offline update: ")
    assert "moved billing by client push" in blocker
    assert "sent through its 2 online consumer(s)" in blocker
    assert "Stop the consumers and resume" in blocker
    assert "undo 20261128T000000000Z-apply-billing-aaaaaa" in blocker


async def test_with_its_consumers_stopped_what_is_left_is_written_directly() -> None:
    check = await check_resume(reader(online=0), pushed_part_way())  # type: ignore[arg-type]
    assert check.blockers == ()
    (group,) = check.groups
    assert group.path.kind is ResetPathKind.OFFLINE_UPDATE
    assert [w.row.queue_id for w in group.writes] == [1]
