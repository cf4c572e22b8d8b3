"""A journal of an apply the tests write, read and break."""

from __future__ import annotations

from console.domain.journal import Journal, JournalQueue
from console.services.infra.journal_store import operator

T0 = 1_795_400_000_000


def journal(apply_id: str = "20261123T000000000Z-apply-billing-abc123") -> Journal:
    queues = tuple(
        JournalQueue("billing", "orders", "broker-a", "127.0.0.1:10911", q, 100 + q, 90 + q)
        for q in range(4)
    ) + (JournalQueue("billing", "orders", "broker-b", "127.0.0.1:10921", 0, None, 5),)
    return Journal(
        apply_id=apply_id,
        kind="apply",
        plan_id="20261123T000000000Z-billing-shift-by-000001",
        plan_hash="sha256:" + "0" * 64,
        cluster="sandbox",
        paths={"billing": "offline update"},
        who=operator(),
        started_at_ms=T0,
        queues=queues,
    )
