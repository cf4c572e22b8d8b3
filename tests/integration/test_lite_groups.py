"""RocketMQ 5.5's lite groups (LiteTopic) on real 5.5.0 clusters, against the 5.5.0 tools.

`newest_cluster`, the suite's 5.5.0 cluster (shared with test_newest_release.py and
test_tls.py): its own 5.5.0 proxy and mutual TLS, broker-a keeping consumer offsets in its JSON
file and broker-b in RocksDB (configManagerVersion=v2), and a LitePushConsumer (through the
proxy) whose group has two lite topics behind on broker-a (console.sandbox.lite_scenario).
What broker-a counts is what `mqadmin getLiteGroupInfo` prints, and the console shows the same
total and lite topics.

A lite group made over the brokers' remoting port on both brokers (lite messages sent, the
lite topics' offsets committed as a consumer's acks would) is behind on each, `getLiteGroupInfo
-l` shows it, and broker-b's own count says 0 ("Total Lag Count" is broker-a's alone): the
console reads its total as at least broker-a's, partial, exit 1 (the group is deleted after
this module: the cluster's other tests read it whole). The brokers' own reset of a lite topic
is not read back on RocksDB: a plan refuses a lite group, and the per-lite-topic command it
names instead moves one and reads back.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from console.domain.lite import lite_queue
from console.sandbox.lite_scenario import GROUP_LITE, TOPIC_CHATS
from console.sandbox.mqadmin_oracle import parse_group_list
from console.sandbox.runner import Sandbox

pytestmark = pytest.mark.integration

#: The lite group made over the remoting port: each broker holds one lite topic, sent `sent`
#: messages and committed at `committed` (broker-b keeps offsets in RocksDB).
V2_PARENT, V2_GROUP = "pulses", "pulse-readers"
#: RequestCode.DELETE_SUBSCRIPTIONGROUP (header groupName, cleanOffset).
DELETE_SUBSCRIPTIONGROUP = 207
V2_LITE = {"broker-a": ("device-1", 3, 1), "broker-b": ("device-2", 5, 2)}


def _cli(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The console's command line in a process of its own, for the cluster of `config`."""
    console = Path(sys.executable).with_name("rmq-console")
    return subprocess.run(
        [str(console), *args],
        capture_output=True,
        text=True,
        env={"RMQ_CONSOLE_CONFIG": str(config), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )


def _config(sb: Sandbox, path: Path, workspace: Path) -> Path:
    """A config of `sb` alone, its proxy named where it has one (its gRPC clients are
    listed there)."""
    entry = sb.config_entry("lite")
    path.write_text(yaml.safe_dump({"clusters": [entry], "workspace": str(workspace)}))
    return path


@pytest.fixture(scope="module")
def lite_config(newest_cluster: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("lite-config")
    return _config(newest_cluster, where / "config.yaml", where / "ws")


@pytest.fixture(scope="module")
def v2_lite_group(newest_cluster: Sandbox) -> Iterator[None]:
    """V2_GROUP on newest_cluster, its lite topics behind (see V2_LITE); deleted after the
    module, as the shared cluster's other tests expect a cluster read whole (its lag is
    unknown there)."""

    async def make() -> None:
        async with newest_cluster.admin(timeout=10) as admin:
            for addr in newest_cluster.broker_addrs.values():
                await admin.create_topic(
                    addr,
                    V2_PARENT,
                    read_queues=1,
                    write_queues=1,
                    attributes={"message.type": "LITE"},
                )
                await admin.create_group(
                    addr,
                    V2_GROUP,
                    broadcast_enable=False,
                    attributes={"lite.bind.topic": V2_PARENT},
                )
            for broker, (lite, sent, committed) in V2_LITE.items():
                addr = newest_cluster.broker_addrs[broker]
                for i in range(sent):
                    await admin.send_message(
                        addr, V2_PARENT, 0, f"pulse {i}".encode(), keys=f"{lite}-{i}",
                        extra={"__LITE_TOPIC": lite},
                    )  # fmt: skip
                queue = lite_queue(V2_PARENT, lite)
                await _until(lambda a=addr, q=queue: admin.max_offset(a, q, 0), sent)
                await admin.update_consumer_offset(addr, V2_GROUP, queue, 0, committed)
                assert await admin.query_consumer_offset(addr, V2_GROUP, queue, 0) == committed

    async def delete() -> None:
        async with newest_cluster.admin(timeout=10) as admin:
            for addr in newest_cluster.broker_addrs.values():
                await admin.call(
                    addr, DELETE_SUBSCRIPTIONGROUP, {"groupName": V2_GROUP, "cleanOffset": True}
                )

    asyncio.run(make())
    yield
    asyncio.run(delete())


async def _until(ask: Any, value: int, within: float = 30.0) -> None:
    """Until `ask()` answers `value` (a broker indexes a message a moment after its send)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while (got := await ask()) != value:
        assert loop.time() < deadline, f"still {got}, not {value}, after {within}s"
        await asyncio.sleep(0.05)


def test_a_lite_groups_lag_and_lite_topics_are_what_mqadmin_prints(
    newest_cluster: Sandbox, lite_config: Path
) -> None:
    seeded = newest_cluster.lite
    assert seeded is not None
    run = _cli(lite_config, "lag", "-g", GROUP_LITE, "--cluster", "lite", "--json")
    assert run.returncode == 0, run.stderr
    ours = json.loads(run.stdout)
    theirs = asyncio.run(newest_cluster.mqadmin.lite_group_info(TOPIC_CHATS, GROUP_LITE))
    assert theirs.failed == []
    # 7 and 3 behind, more where a send was retried and stored twice (the seed found them).
    assert seeded.lags["session-3"] >= 7
    assert seeded.lags["session-4"] >= 3
    assert ours["total_lag"] == theirs.total_lag == seeded.total_lag
    assert not ours["partial"]
    assert ours["lite"]["parent_topic"] == TOPIC_CHATS
    assert (
        sorted((x["lite_topic"], x["lag"]) for x in ours["lite"]["most_lag_by_count"])
        == sorted((x.lite_topic, x.lag) for x in theirs.by_count)
        == [(t, seeded.lags[t]) for t in ("session-3", "session-4")]
    )
    # Each lite topic on the broker its name hashes to, as the scenario found it.
    assert {x["lite_topic"]: x["broker"] for x in ours["lite"]["most_lag_by_count"]} == {
        t: seeded.brokers[t] for t in ("session-3", "session-4")
    }
    # By time, the oldest unconsumed message first (the brokers' own by-time list stays empty
    # unless they collect it: liteLagLatencyCollectEnable).
    times = [x["oldest_unconsumed_at"] for x in ours["lite"]["most_lag_by_time"]]
    assert times == sorted(times)
    assert ours["consumption"]["kinds"] == ["lite"]
    assert ours["consumption"]["grpc"] is True
    assert ours["online"] is True


def test_the_lite_group_in_the_groups_listing(newest_cluster: Sandbox, lite_config: Path) -> None:
    seeded = newest_cluster.lite
    assert seeded is not None
    run = _cli(lite_config, "groups", "--cluster", "lite", "--json")
    (row,) = [r for r in json.loads(run.stdout)["groups"] if r["group"] == GROUP_LITE]
    assert (row["total_lag"], row["partial"], row["consumption"]) == (
        seeded.total_lag,
        False,
        "lite, gRPC via proxy",
    )
    text = _cli(lite_config, "groups", "--cluster", "lite").stdout
    (line,) = [ln for ln in text.splitlines() if ln.startswith(GROUP_LITE)]
    assert "lite/grpc" in line
    behind = sorted(seeded.lags.items(), key=lambda kv: -kv[1])[:2]
    assert line.endswith(
        "lite, parent chats: most behind " + ", ".join(f"{t} {n}" for t, n in behind)
    )


def test_a_plan_refuses_a_lite_group_and_its_advice_moves_a_lite_topic(
    newest_cluster: Sandbox, lite_config: Path, tmp_path: Path
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        yaml.safe_dump(
            {"scope": {"cluster": "lite", "groups": [GROUP_LITE]}, "strategy": {"shift-by": -3}}
        )
    )
    run = _cli(lite_config, "plan", "--cluster", "lite", "--spec", str(spec))
    assert run.returncode == 2, run.stderr
    line = run.stderr.strip()
    assert line.startswith(
        f"rmq-console: error: scope.groups[0]: '{GROUP_LITE}' is a lite group (RocketMQ 5.5)"
    )
    assert len(line.splitlines()) == 1
    workspace = yaml.safe_load(lite_config.read_text())["workspace"]
    assert not (Path(workspace) / "plans").exists()
    # What it says to do instead, on session-4 (3 behind): one message skipped.
    seeded = newest_cluster.lite
    assert seeded is not None
    broker = seeded.brokers["session-4"]
    queue = lite_queue(TOPIC_CHATS, "session-4")
    assert f"-t '{lite_queue(TOPIC_CHATS, 'LITE_TOPIC')}'" in line
    addr = newest_cluster.broker_addrs[broker]

    async def committed() -> int | None:
        async with newest_cluster.admin() as admin:
            return await admin.query_consumer_offset(addr, GROUP_LITE, queue, 0)

    before = asyncio.run(committed())
    assert before is not None
    target = before + 1
    asyncio.run(
        newest_cluster.mqadmin.run(
            "resetOffsetByTime",
            *("-g", GROUP_LITE, "-t", queue, "-b", addr, "-q", "0", "-o", str(target), "-s", "now"),
        )
    )
    ours = json.loads(
        _cli(lite_config, "lag", "-g", GROUP_LITE, "--cluster", "lite", "--json").stdout
    )
    assert {x["lite_topic"]: x["lag"] for x in ours["lite"]["most_lag_by_count"]} == {
        "session-3": seeded.lags["session-3"],
        "session-4": seeded.lags["session-4"] - 1,
    }
    assert ours["total_lag"] == seeded.total_lag - 1
    assert asyncio.run(committed()) == target


def test_on_rocksdb_offsets_a_lite_group_is_unknown_never_lag_0(
    newest_cluster: Sandbox, lite_config: Path, v2_lite_group: None
) -> None:
    """broker-a (JSON) counts its lite topic; broker-b (RocksDB) says 0 for one just as far
    behind: the total is at least broker-a's, partial, naming broker-b, exit 1."""
    run = _cli(lite_config, "lag", "-g", V2_GROUP, "--cluster", "lite", "--json")
    assert run.returncode == 1, run.stderr
    ours = json.loads(run.stdout)
    assert ours["partial"]
    assert [(m["part"], m["name"], m["why"]) for m in ours["missing"]] == [
        ("lite lag", f"{V2_GROUP} on broker-b", "not reported")
    ]
    assert "configManagerVersion=v2" in ours["missing"][0]["detail"]
    _, sent_a, committed_a = V2_LITE["broker-a"]
    assert ours["lite"]["counted_by"] == {"broker-a": sent_a - committed_a}
    assert ours["total_lag"] == sent_a - committed_a
    # The brokers' own count is broker-a's alone ...
    theirs = asyncio.run(newest_cluster.mqadmin.lite_group_info(V2_PARENT, V2_GROUP))
    assert theirs.total_lag == sent_a - committed_a
    # ... while broker-b's lite topic read alone is behind too.
    lite, sent, committed = V2_LITE["broker-b"]
    rows = asyncio.run(newest_cluster.mqadmin.lite_topic(V2_PARENT, V2_GROUP, lite))
    (row,) = [r for r in rows if r.lag is not None]
    assert (row.broker_name, row.lag) == ("broker-b", sent - committed)
    text = _cli(lite_config, "lag", "-g", V2_GROUP, "--cluster", "lite")
    assert f"total lag ≥{sent_a - committed_a}" in text.stdout
    assert f"lite lag {V2_GROUP} on broker-b" in text.stdout


def test_the_ordinary_groups_beside_a_lite_group_still_match_mqadmin(
    newest_cluster: Sandbox, lite_config: Path, v2_lite_group: None
) -> None:
    """Every offline group mqadmin lists (through its retry topic: a lite group has none) has
    the total it prints: its topics' lag and its retry topic's, which scheduled redeliveries
    keep growing, so mqadmin's lies between two readings of ours."""

    def ours() -> dict[str, dict[str, Any]]:
        run = _cli(lite_config, "groups", "--cluster", "lite", "--json")
        return {r["group"]: r for r in json.loads(run.stdout)["groups"]}

    before = ours()
    listed = parse_group_list(asyncio.run(newest_cluster.mqadmin.run("consumerProgress")))
    after = ours()
    offline = [
        g
        for g in listed
        if g.version == "OFFLINE"
        and g.group in before
        and not before[g.group]["client_local"]
        and not before[g.group]["unknown_queues"]  # mqadmin's 0 there is no lag
    ]
    assert len(offline) >= 3, listed
    for g in offline:
        low, high = (r[g.group]["total_lag"] + r[g.group]["retry_backlog"] for r in (before, after))
        assert low <= g.diff_total <= high, g.group
    assert after[V2_GROUP]["partial"]
    assert after[V2_GROUP]["consumption"] == "lite"
    assert V2_GROUP not in {g.group for g in listed}


def test_on_rocksdb_offsets_the_brokers_reset_of_a_lite_topic_is_not_read_back(
    newest_cluster: Sandbox, v2_lite_group: None
) -> None:
    """Why a plan does not reset a lite group: the brokers' own reset answers with its target
    and reads back the old offset (it waits for the consumer's next pop), and a commit sent
    meanwhile is ignored. A direct commit reads back (the plan's test sends one)."""
    lite, _, committed = V2_LITE["broker-b"]
    addr = newest_cluster.broker_addrs["broker-b"]
    queue = lite_queue(V2_PARENT, lite)

    async def reset() -> tuple[dict[Any, int], int | None, str | None, int | None]:
        async with newest_cluster.admin(timeout=10) as admin:
            said = await admin.reset_offset(addr, V2_GROUP, queue, queue_id=0, offset=4)
            after = await admin.query_consumer_offset(addr, V2_GROUP, queue, 0)
            remark = await admin.update_consumer_offset(addr, V2_GROUP, queue, 0, 3)
            return said, after, remark, await admin.query_consumer_offset(addr, V2_GROUP, queue, 0)

    said, after, remark, then = asyncio.run(reset())
    assert list(said.values()) == [4]
    assert after == then == committed
    assert remark == "Offset has been previously reset"
