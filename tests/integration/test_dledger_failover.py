"""Failover on a real RocketMQ 4.9.7 cluster in DLedger mode (fixture `dledger_cluster`: a name
server and one broker set of three peers that elect its master themselves, no controller).

`brokers` shows the elected master and its followers; reads through a kill -9 of the master
are exact or marked partial, never wrong with exit 0, and exact once the other two peers have
elected one of them, as mqadmin reads it; with one peer of three left nobody can be elected,
and the read from it is partial and says why, until a peer is started again.

The tests kill and restart the peers: they run in this file's order.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
import yaml

from console.domain.gaps import Why
from console.rocketmq.admin import AdminClient
from console.sandbox.dledger_cluster import DLedgerSandbox
from console.sandbox.legacy import write_logging_config
from console.sandbox.mqadmin_oracle import Mqadmin
from console.services.read.reader import ClusterReader
from tests.support.replica_sets import QueueKey, read_queues, run, seeded

#: How long a peer started again may take to boot, and its set to elect a master.
REJOIN_S = 120.0
#: A master killed is replaced within seconds (about 5 on the sandbox): a minute is a failure.
ELECTION_S = 60.0


@pytest.fixture
def cli(dledger_cluster: DLedgerSandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "config.yaml"
    cluster = {"name": "dledger", "namesrv": dledger_cluster.namesrv_addr}
    config.write_text(
        yaml.safe_dump({"clusters": [cluster], "workspace": str(tmp_path / "ws"), "timeout": 3})
    )
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config))
    return config


def lag_json(capfd: pytest.CaptureFixture[str], group: str) -> tuple[int, dict[str, object], str]:
    code, out, err = run(capfd, "lag", "-g", group, "--cluster", "dledger", "--json")
    return code, json.loads(out), err


def json_queues(document: dict[str, object]) -> dict[QueueKey, tuple[int, int | None]]:
    queues = document["queues"]
    assert isinstance(queues, list)
    return {
        (q["topic"], q["broker"], q["queue_id"]): (q["max_offset"], q["committed"]) for q in queues
    }


def test_brokers_shows_the_elected_master_and_its_two_followers(
    dledger_cluster: DLedgerSandbox, cli: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    sb = dledger_cluster
    master = asyncio.run(sb.master_of())
    assert master is not None
    code, out, err = run(capfd, "brokers", "--cluster", "dledger", "--json")
    assert (code, err) == (0, "")
    rows = {r["addr"]: r for r in json.loads(out)}
    assert set(rows) == {sb.addr_of(p) for p in sb.peers}
    for index, peer in enumerate(sb.peers):
        row = rows[sb.addr_of(peer)]
        # A follower registers under its DLedger self id + 1 (n1 as 2), the leader as 0.
        want = (0, "MASTER") if peer == master else (index + 1, "SLAVE")
        assert (row["broker_id"], row["role"], row["version"]) == (*want, "V4_9_7")
        # No controller: nothing to say of an epoch or a SyncStateSet (4.9.x has neither).
        assert row["replication"] is None


async def read_through_a_kill(sb: DLedgerSandbox, old: str) -> tuple[float, list[str]]:
    """Read as the console does (routes kept for a second, connections kept open) before the
    master is killed and until a read is exact again: how long that took, and how each read
    between was marked."""
    assert sb.seed is not None
    group, want = sb.seed.group, seeded(sb.seed)
    async with AdminClient([sb.namesrv_addr], timeout=2.0) as admin:
        reader = ClusterReader(admin, routes_ttl=1.0)
        first = await reader.group_offsets(group)
        assert (first.gaps, first.from_slave, read_queues(first)) == ((), (), want)
        sb.kill(old)
        killed = time.monotonic()
        seen: list[str] = []
        while True:
            got = await reader.group_offsets(group)
            if not got.gaps and not got.from_slave and read_queues(got) == want:
                return time.monotonic() - killed, seen
            # Never a wrong number given as the answer: what is not the master's is partial.
            assert got.gaps, (got.from_slave, read_queues(got))
            seen.append("; ".join(g.line() for g in got.gaps))
            assert time.monotonic() - killed < ELECTION_S, seen
            await asyncio.sleep(0.1)


async def mqadmin_progress(sb: DLedgerSandbox, work: Path) -> dict[QueueKey, tuple[int, int]]:
    """4.9.7's `mqadmin consumerProgress -g G` (5.x's asks the broker what 4.9.7 does not
    support): each queue's broker and consumer offset. Its table has no in-flight column."""
    assert sb.seed is not None
    write_logging_config(work / "rocketmq-home")
    tool = Mqadmin(sb.java, sb.dist, sb.namesrv_addr, work)
    text = await tool.run("consumerProgress", "-g", sb.seed.group, until="Diff Total:")
    rows = [line.split() for line in text.splitlines() if line.startswith(sb.seed.topic)]
    return {(r[0], r[1], int(r[2])): (int(r[3]), int(r[4])) for r in rows}


def test_reads_through_a_kill_of_the_master_are_marked_then_exact_as_mqadmin_reads(
    dledger_cluster: DLedgerSandbox,
    cli: Path,
    capfd: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    sb = dledger_cluster
    assert sb.seed is not None
    old = asyncio.run(sb.master_of())
    assert old is not None
    took, seen = asyncio.run(read_through_a_kill(sb, old))
    new = asyncio.run(sb.master_of())
    assert new not in (None, old), (took, seen)
    # Between the kill and the vote the followers were read, each answer marked as such.
    assert any(f"{sb.broker} has no master (DLedger mode" in line for line in seen), seen
    code, document, err = lag_json(capfd, sb.seed.group)
    assert (code, err, document["from_slave"]) == (0, "", []), (took, seen)
    assert json_queues(document) == seeded(sb.seed)
    assert asyncio.run(mqadmin_progress(sb, tmp_path)) == seeded(sb.seed)
    # The new master is 0; the peer killed is no longer listed, the third follows.
    code, out, err = run(capfd, "brokers", "--cluster", "dledger", "--json")
    assert (code, err) == (0, "")
    rows = {r["addr"]: (r["broker_id"], r["role"]) for r in json.loads(out)}
    (third,) = [p for p in sb.peers if p not in (old, new)]
    assert rows == {
        sb.addr_of(new): (0, "MASTER"),
        sb.addr_of(third): (sb.peers.index(third) + 1, "SLAVE"),
    }


def test_with_one_peer_of_three_left_none_is_elected_and_its_read_is_partial_until_one_returns(
    dledger_cluster: DLedgerSandbox, cli: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    sb = dledger_cluster
    assert sb.seed is not None
    # One peer is down since the test before: kill the master too, and no majority is left.
    master = asyncio.run(sb.master_of())
    assert master is not None
    (left,) = [p for p in sb.peers if sb.running(p) and p != master]
    sb.kill(master)
    asyncio.run(sb.wait_unlisted(master))
    code, document, err = lag_json(capfd, sb.seed.group)
    assert (code, document["from_slave"]) == (1, [sb.broker]), err
    assert json_queues(document) == seeded(sb.seed)
    missing = document["missing"]
    assert isinstance(missing, list)
    assert [(m["name"], m["why"]) for m in missing] == [(sb.broker, str(Why.NO_MASTER))]
    assert (
        f"read from replica {sb.addr_of(left)} while {sb.broker} has no master (DLedger mode"
    ) in err
    # A second peer back makes a majority: they elect one, and the read is exact again.
    asyncio.run(sb.start_peer(master, REJOIN_S))
    code, document, err = lag_json(capfd, sb.seed.group)
    assert (code, err, document["from_slave"]) == (0, "", [])
    assert json_queues(document) == seeded(sb.seed)
