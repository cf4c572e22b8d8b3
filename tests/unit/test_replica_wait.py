"""An apply is believed once the replicas a switch could elect hold it too: after the master's
read-back it asks each (at its own address) until it does, for the wait given at most; one that
has not copied it by then ends the apply "not copied", naming it, exit 1. A broker set with no
master, or a master other than the one the check read, refuses the apply before its journal.
Against a real controller-mode cluster: tests/integration/test_failover.py."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from console.domain.journal import ApplyStatus, QueueState
from console.errors import Refused
from console.rocketmq.models import MessageQueue
from console.services.apply.replicas import BrokerReplicas, Copy, ReplicasNow, SetMode
from console.services.apply.session import SessionResult
from console.services.apply.writer import Applier
from console.services.infra.journal_store import JournalStore
from tests.support.writes import write_access
from tests.unit.test_past_target import ADDR, BEFORE, TARGET, TOPIC, skip_check

REPLICA = "10.0.0.2:10911"


class CopyingBroker:
    """A master that takes the reset at once, and a replica that copies it after `copies_after`
    of its answers (never: None)."""

    def __init__(self, copies_after: int | None) -> None:
        self.copies_after = copies_after
        self.master = BEFORE
        self.replica_asked = 0

    async def reset_offset(self, addr: str, group: str, topic: str, **kw: object) -> dict:
        self.master = TARGET
        return {MessageQueue(TOPIC, "broker-a", 0): TARGET}

    async def query_consumer_offset(self, addr: str, group: str, topic: str, q: int) -> int:
        if addr == ADDR:
            return self.master
        assert addr == REPLICA
        self.replica_asked += 1
        copied = self.copies_after is not None and self.replica_asked > self.copies_after
        return self.master if copied else BEFORE

    async def broker_config(self, addr: str) -> dict[str, str]:
        return {"useServerSideResetOffset": "true"}

    async def cluster_info(self) -> SimpleNamespace:
        return SimpleNamespace()

    server_versions = {ADDR: 479}


def lookup(now: ReplicasNow) -> Any:
    async def replicas(reader: Any, brokers: Iterable[str], wait_s: float | None) -> ReplicasNow:
        return now

    return replicas


def a_set(wait_s: float, master: str = ADDR) -> ReplicasNow:
    copy = Copy(REPLICA, 2)
    return ReplicasNow(
        {"broker-a": BrokerReplicas("broker-a", master, SetMode.CONTROLLER, 3, (copy,), wait_s)}, ()
    )


def applier(tmp_path: Path, broker: CopyingBroker, now: ReplicasNow) -> Applier:
    access = write_access(SimpleNamespace(admin=broker), tmp_path)
    return Applier(replace(access, replicas=lookup(now)), verify_timeout_s=0.5)


async def test_an_apply_a_replica_has_not_copied_in_time_ends_not_copied_naming_it(
    tmp_path: Path,
) -> None:
    broker = CopyingBroker(copies_after=None)
    said: list[str | None] = []
    journal = await applier(tmp_path, broker, a_set(0.3)).apply(
        skip_check(), on_progress=lambda p: said.append(p.waiting)
    )
    (q,) = journal.queues
    assert (q.state, q.stored) == (QueueState.VERIFIED, TARGET)  # the master holds it
    assert journal.status is ApplyStatus.NOT_COPIED
    (line,) = journal.replicas
    assert line == (
        f"broker-a: written on the master {ADDR}; replica {REPLICA} (id 2) has not copied 1 "
        "queue(s) yet: a switch now would roll them back "
        f"(`rmq-console verify {journal.apply_id}` checks again)"
    )
    assert SessionResult(journal, "j").exit_code == 1
    assert any(s and s.startswith("waiting for the replicas to copy 1 queue(s)") for s in said)
    assert JournalStore(tmp_path).load(journal.apply_id).status is ApplyStatus.NOT_COPIED
    # Not part-way: nothing to resume, `verify` is what checks again.
    assert JournalStore(tmp_path).unfinished() == []


async def test_an_apply_the_replicas_copied_within_the_wait_is_finished(tmp_path: Path) -> None:
    broker = CopyingBroker(copies_after=1)
    journal = await applier(tmp_path, broker, a_set(5.0)).apply(skip_check())
    assert journal.status is ApplyStatus.FINISHED
    assert SessionResult(journal, "j").exit_code == 0
    (line,) = journal.replicas
    assert line.startswith(f"broker-a: 1 queue(s) copied by replica(s) {REPLICA} (id 2) (")
    assert broker.replica_asked == 2


async def test_no_wait_says_what_a_switch_would_do_and_asks_no_replica(tmp_path: Path) -> None:
    broker = CopyingBroker(copies_after=None)
    journal = await applier(tmp_path, broker, a_set(0.0)).apply(skip_check())
    assert journal.status is ApplyStatus.FINISHED
    (line,) = journal.replicas
    assert "not waiting for replica(s) 10.0.0.2:10911 (id 2) to copy the write" in line
    assert "a switch to it would roll the write back" in line
    assert broker.replica_asked == 0


@pytest.mark.parametrize(
    ("now", "said"),
    [
        (
            ReplicasNow({}, ("broker broker-a has no master now (replica(s) x listed)",)),
            "broker broker-a has no master now",
        ),
        (a_set(15.0, master=REPLICA), f"broker broker-a's master changed since the check ({ADDR}"),
    ],
)
async def test_no_master_or_another_master_refuses_before_the_journal(
    tmp_path: Path, now: ReplicasNow, said: str
) -> None:
    broker = CopyingBroker(copies_after=0)
    with pytest.raises(Refused) as refused:
        await applier(tmp_path, broker, now).apply(skip_check())
    assert refused.value.reasons[0].startswith(said)
    assert broker.master == BEFORE  # nothing written
    assert JournalStore(tmp_path).all() == []
