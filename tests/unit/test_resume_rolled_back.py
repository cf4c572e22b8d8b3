"""`resume` of an apply a switch rolled back: the queues it verified that the master now holds
at their before-image again are written again; one that holds the write, or that moved
elsewhere since, is left; a queue a later apply or undo wrote is not the switch's doing and is
never taken for a rollback."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from console.config import ClusterConfig
from console.domain.journal import ApplyStatus, Journal, JournalQueue, QueueState
from console.domain.reset_paths import ResetPathKind
from console.rocketmq.models import ConsumerConnection, MessageQueue
from console.services.apply.check_text import describe_check
from console.services.apply.resume_check import check_resume, rolled_back_of
from tests.support.readers import no_proxy_listed

OLD, NEW, GROUP, TOPIC = "10.0.0.1:10911", "10.0.0.2:10911", "billing", "orders"


def verified(queue_id: int, before: int | None = 9, target: int = 6) -> JournalQueue:
    return JournalQueue(
        GROUP, TOPIC, "broker-a", OLD, queue_id, before, target, QueueState.VERIFIED, target
    )


def applied(*queues: JournalQueue, started: int = 1_000, kind: str = "apply") -> Journal:
    return Journal(
        f"20261128T000000000Z-{kind}-billing-{started:06d}",
        kind,
        "p",
        "sha256:0",
        "prod",
        {GROUP: str(ResetPathKind.OFFLINE_UPDATE)},
        "ops@host",
        started,
        queues,
        ApplyStatus.NOT_COPIED,
    )


def test_a_queue_a_later_apply_or_undo_wrote_is_not_taken_for_a_rollback() -> None:
    journal = applied(verified(0), verified(1), verified(2), verified(3, before=None))
    undo = applied(replace(verified(1), before=6, target=9), started=2_000, kind="undo")
    never_sent = applied(replace(verified(2), state=QueueState.PENDING), started=3_000)
    earlier = applied(verified(0), started=500)
    got = rolled_back_of(journal, [journal, undo, never_sent, earlier])
    # Queue 3 had nothing committed before: no offset to be rolled back to.
    assert [q.queue_id for q in got] == [0, 2]


def test_a_client_file_is_never_rolled_back_by_a_switch() -> None:
    journal = replace(applied(verified(0)), paths={GROUP: str(ResetPathKind.CLIENT_FILE)})
    assert rolled_back_of(journal, [journal]) == ()


class NewMaster:
    """The master elected after the switch: queue 0 rolled back to the before-image, queue 1
    holding the write, queue 2 moved elsewhere since; nobody consuming."""

    held = {0: 9, 1: 6, 2: 7}

    async def consumer_connections(self, addr: str, group: str) -> ConsumerConnection:
        return ConsumerConnection([], "CONSUME_PASSIVELY", "CLUSTERING", None)

    async def message_request_modes(self, addr: str) -> dict[tuple[str, str], str]:
        return {}

    async def query_consumer_offset(self, addr: str, group: str, topic: str, q: int) -> int:
        assert addr == NEW  # read where the name server names the master now
        return self.held[q]

    async def topic_stats(self, addr: str, topic: str) -> dict[MessageQueue, SimpleNamespace]:
        return {
            MessageQueue(TOPIC, "broker-a", q): SimpleNamespace(min_offset=0, max_offset=20)
            for q in self.held
        }

    async def broker_config(self, addr: str) -> dict[str, str]:
        return {}

    server_versions = {NEW: 503}


def reader() -> SimpleNamespace:
    async def brokers() -> dict[str, str]:
        return {"broker-a": NEW}

    return SimpleNamespace(
        admin=NewMaster(), brokers=brokers, proxies=(), find_proxies=no_proxy_listed
    )


async def test_the_queues_back_at_their_before_image_are_written_again_on_the_new_master() -> None:
    journal = applied(verified(0), verified(1), verified(2))
    check = await check_resume(reader(), journal, rolled_back_of(journal, [journal]))  # type: ignore[arg-type]
    assert check.blockers == ()
    assert check.drift == ()
    assert [(q.queue_id, q.stored) for q in check.rolled_back] == [(0, 9)]
    assert [(w.row.queue_id, w.broker_addr, w.before, w.target) for w in check.writes] == [
        (0, NEW, 9, 6)
    ]
    assert check.seen()["rolled back by a switch"] == (f"{GROUP} {TOPIC}/broker-a/0",)
    text = describe_check(check, ClusterConfig("prod", ("10.0.0.9:9876",)))
    assert (
        "1 queue(s) the apply verified were rolled back by a switch (the master holds the "
        f"offset before the apply again): written again on the master now ({NEW}), then "
        "waited for on its replicas"
    ) in text.facts


async def test_without_rollbacks_named_a_verified_queue_is_not_read_again() -> None:
    journal = applied(verified(0))
    check = await check_resume(reader(), journal)  # type: ignore[arg-type]
    assert (check.writes, check.rolled_back) == ((), ())
