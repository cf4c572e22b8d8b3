"""An apply's before-image as the spec `undo` plans: the queues written go back, the ones never
sent stay, and a queue that had nothing committed before is named (a write cannot forget it)."""

from __future__ import annotations

from dataclasses import replace

from console.domain.journal import Journal, JournalQueue, QueueState
from console.domain.spec import FileOffset, FromFile
from console.domain.undo import undo_spec


def test_the_undo_puts_back_what_was_sent_and_names_what_it_cannot() -> None:
    def queue(q: int, before: int | None, state: QueueState) -> JournalQueue:
        return JournalQueue(
            "billing", "orders", "broker-a", "127.0.0.1:10911", q, before, 50, state
        )

    journal = Journal(
        apply_id="20261124T000000000Z-apply-billing-abc123",
        kind="apply",
        plan_id="p",
        plan_hash="sha256:0",
        cluster="sandbox",
        paths={"billing": "offline update"},
        who="ops@host",
        started_at_ms=0,
        queues=(
            queue(0, 40, QueueState.VERIFIED),
            queue(1, 41, QueueState.FAILED),  # maybe landed: put back all the same
            queue(2, 42, QueueState.PENDING),  # never sent
            queue(3, None, QueueState.VERIFIED),  # nothing committed before
            replace(queue(0, 7, QueueState.NOT_YET), topic="%RETRY%billing"),
        ),
    )
    undo = undo_spec(journal, "/ws/journal/x.json")
    assert undo.spec is not None
    assert undo.spec.scope.cluster == "sandbox"
    assert undo.spec.scope.groups == ("billing",)
    assert undo.spec.scope.include_retry
    assert undo.spec.strategy == FromFile(
        "/ws/journal/x.json",
        (
            FileOffset(1, "orders", "broker-a", 0, 40, "billing"),
            FileOffset(2, "orders", "broker-a", 1, 41, "billing"),
            FileOffset(5, "%RETRY%billing", "broker-a", 0, 7, "billing"),
        ),
    )
    assert [q.queue_id for q in undo.never_sent] == [2]
    assert [q.queue_id for q in undo.unrestorable] == [3]

    nothing = replace(journal, queues=(queue(2, 42, QueueState.PENDING),))
    assert undo_spec(nothing, "j").spec is None
