"""A 4.9.x DLedger set elects its master among its peers, as a controller does among its replicas:
an apply there waits for every follower the name server lists (4.9.x has no SyncStateSet to
narrow them), 15 s by default, and one not copied in time ends the apply not copied, naming it;
a peer the name server does not list is named; while the set has no master the apply refuses and
says its peers elect one. Against a real DLedger cluster: tests/integration/test_dledger_apply.py.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from console.domain.journal import ApplyStatus, QueueState
from console.errors import Refused
from console.rocketmq.models import MessageQueue
from console.services.apply.replicas import (
    ELECTED_WAIT_S,
    SetMode,
    read_replicas,
    replicas_now,
)
from console.services.apply.session import SessionResult
from console.services.apply.writer import Applier
from console.services.infra.journal_store import JournalStore
from console.services.read.routes import BrokerRoute
from tests.support.writes import write_access
from tests.unit.test_past_target import ADDR, BEFORE, TARGET, TOPIC, skip_check

N1, N2 = "10.0.0.2:10911", "10.0.0.3:10911"
PEERS = "n0-10.0.0.1:40911;n1-10.0.0.2:40911;n2-10.0.0.3:40911"


def peer_config(self_id: str, role: str) -> dict[str, str]:
    """What a 4.9.7 DLedger peer's GET_BROKER_CONFIG holds of its mode."""
    return {
        "brokerRole": role,
        "enableControllerMode": "false",
        "enableDLegerCommitLog": "true",
        "dLegerGroup": "broker-a",
        "dLegerPeers": PEERS,
        "dLegerSelfId": self_id,
        "useServerSideResetOffset": "true",
    }


class DLedgerPeers:
    """Three peers of broker-a, n0 the master at ADDR; a follower copies the master's offsets
    after `copies_after` of its answers (never: None)."""

    def __init__(self, copies_after: dict[str, int | None]) -> None:
        self.copies_after = copies_after
        self.master = BEFORE
        self.asked: dict[str, int] = {N1: 0, N2: 0}

    async def broker_config(self, addr: str) -> dict[str, str]:
        if addr == ADDR:
            return peer_config("n0", "ASYNC_MASTER")
        return peer_config("n1" if addr == N1 else "n2", "SLAVE")

    async def reset_offset(self, addr: str, group: str, topic: str, **kw: object) -> dict:
        assert addr == ADDR, "offsets are written to the master only"
        self.master = TARGET
        return {MessageQueue(TOPIC, "broker-a", 0): TARGET}

    async def query_consumer_offset(self, addr: str, group: str, topic: str, q: int) -> int:
        if addr == ADDR:
            return self.master
        self.asked[addr] += 1
        after = self.copies_after[addr]
        return self.master if after is not None and self.asked[addr] > after else BEFORE

    async def cluster_info(self) -> SimpleNamespace:
        return SimpleNamespace()

    server_versions = {ADDR: 479}


def as_admin(peers: DLedgerPeers) -> Any:
    return peers


def listed(*followers: str, master: str | None = ADDR) -> dict[str, BrokerRoute]:
    """broker-a as the name server lists it: a follower registers as its self id + 1."""
    ids = {N1: 2, N2: 3}
    return {"broker-a": BrokerRoute("broker-a", master, {ids[f]: f for f in followers})}


async def test_every_follower_listed_is_waited_for_15_s_by_default() -> None:
    peers = DLedgerPeers({N1: 0, N2: 0})
    now = await read_replicas(as_admin(peers), listed(N1, N2), ["broker-a"])
    known = now.by_broker["broker-a"]
    assert (known.mode, known.epoch, known.wait_s, known.notes) == (
        SetMode.DLEDGER,
        None,
        ELECTED_WAIT_S,
        (),
    )
    assert [(c.addr, c.broker_id) for c in known.copies] == [(N1, 2), (N2, 3)]
    assert known.plan_line() == (
        f"broker-a: master {ADDR}; the write waits up to 15 s for replica(s) {N1} (id 2), "
        f"{N2} (id 3) to copy it"
    )


async def test_a_peer_the_name_server_does_not_list_is_named_and_not_waited_for() -> None:
    peers = DLedgerPeers({N1: 0, N2: 0})
    now = await read_replicas(as_admin(peers), listed(N1), ["broker-a"])
    known = now.by_broker["broker-a"]
    assert [c.addr for c in known.copies] == [N1]
    assert known.notes == (
        "peer n2 of its DLedger group is not listed by the name server (down?): not waited for",
    )


async def test_no_wait_asked_says_a_switch_would_roll_the_write_back() -> None:
    peers = DLedgerPeers({N1: 0, N2: 0})
    now = await read_replicas(as_admin(peers), listed(N1, N2), ["broker-a"], wait_s=0)
    line = now.by_broker["broker-a"].plan_line()
    assert "(a replica copies offsets every 10 s; --replica-wait 25 waits)" in line
    assert line.endswith("until one has, a switch to it would roll the write back")


async def test_a_set_with_no_master_refuses_and_says_its_peers_elect_one() -> None:
    peers = DLedgerPeers({N1: 0, N2: 0})
    now = await read_replicas(as_admin(peers), listed(N1, N2, master=None), ["broker-a"])
    assert now.by_broker == {}
    assert now.blockers == (
        f"broker broker-a has no master now (replica(s) {N1}, {N2} listed; DLedger mode: its "
        "peers elect one within seconds of a majority being up): apply again once "
        "`rmq-console brokers` shows a master (nothing is written to a replica)",
    )


def applier(tmp_path: Path, peers: DLedgerPeers, wait_s: float | None) -> Applier:
    async def fresh_routes() -> dict[str, BrokerRoute]:
        return listed(N1, N2)

    reader = SimpleNamespace(admin=peers, fresh_routes=fresh_routes)
    access = replace(write_access(reader, tmp_path), replicas=replicas_now)
    return Applier(access, verify_timeout_s=0.5, replica_wait_s=wait_s)


async def test_an_apply_is_finished_once_both_followers_hold_it(tmp_path: Path) -> None:
    peers = DLedgerPeers({N1: 0, N2: 0})
    journal = await applier(tmp_path, peers, None).apply(skip_check())
    assert journal.status is ApplyStatus.FINISHED
    assert SessionResult(journal, "j").exit_code == 0
    (line,) = journal.replicas
    assert line.startswith(f"broker-a: 1 queue(s) copied by replica(s) {N1} (id 2), {N2} (id 3)")
    assert peers.asked == {N1: 1, N2: 1}


async def test_a_follower_not_copied_in_time_ends_the_apply_not_copied_naming_it(
    tmp_path: Path,
) -> None:
    peers = DLedgerPeers({N1: 0, N2: None})
    journal = await applier(tmp_path, peers, 0.3).apply(skip_check())
    (q,) = journal.queues
    assert (q.state, q.stored) == (QueueState.VERIFIED, TARGET)
    assert journal.status is ApplyStatus.NOT_COPIED
    assert SessionResult(journal, "j").exit_code == 1
    (line,) = journal.replicas
    assert line == (
        f"broker-a: written on the master {ADDR}; replica {N2} (id 3) has not copied 1 "
        "queue(s) yet: a switch now would roll them back "
        f"(`rmq-console verify {journal.apply_id}` checks again)"
    )


async def test_an_apply_while_no_master_is_elected_writes_nothing(tmp_path: Path) -> None:
    peers = DLedgerPeers({N1: 0, N2: 0})

    async def no_master() -> dict[str, BrokerRoute]:
        return listed(N1, N2, master=None)

    reader = SimpleNamespace(admin=peers, fresh_routes=no_master)
    access = replace(write_access(reader, tmp_path), replicas=replicas_now)
    with pytest.raises(Refused) as refused:
        await Applier(access, verify_timeout_s=0.5).apply(skip_check())
    (reason,) = refused.value.reasons
    assert "DLedger mode: its peers elect one within seconds" in reason
    assert peers.master == BEFORE
    assert JournalStore(tmp_path).all() == []
