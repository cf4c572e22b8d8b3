"""Against a real RocketMQ 4.9.7 broker: "never committed" is told from "committed 0", a queue
committed below an expired commit log's min offset is flagged (by `lag` and `groups`), no time is
counted from 1970, and a plan names the broker's version as `brokers` prints it.

What the 4.9.7 broker answers (seen here, and asserted below where it matters): consume stats
give 0 for a queue never committed; QUERY_CONSUMER_OFFSET (setZeroIfNotFound=false, ignored
before 5.0) answers SUCCESS with offset 0 for it too; QUERY_CONSUME_TIME_SPAN gives it a delay
of "now + 1 ms" (the time since 1970), as it does for a queue whose next message is deleted.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
import yaml

from console.cli import main
from console.config import ClusterConfig, Config
from console.domain.offsets import known_delay
from console.rocketmq.codes import RequestCode, ResponseCode
from console.sandbox import legacy as lg
from console.sandbox.legacy import LegacySandbox
from console.services.read.reader_source import ReaderSource
from tests.connect import ConnectServer


@pytest.fixture
def config(
    legacy_cluster: LegacySandbox,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    warm_cli: ConnectServer,
) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"workspace": str(tmp_path / "ws"), "spark_master": "local[2]"}))
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(path))
    return path


def lag_json(legacy: LegacySandbox, group: str, capfd: pytest.CaptureFixture[str]) -> dict:
    code = main(["lag", "--namesrv", legacy.namesrv_addr, "-g", group, "--json"])
    assert code == 0
    return json.loads(capfd.readouterr().out)


def test_the_broker_answers_0_for_a_queue_never_committed(legacy_cluster: LegacySandbox) -> None:
    # Why the console cannot trust QUERY_CONSUMER_OFFSET before 5.0 (fact sheet §5.4, §9.4).
    async def ask() -> list[tuple[int, str | None, str | None]]:
        async with legacy_cluster.admin() as admin:
            out = []
            for mq in legacy_cluster.seed.never_committed if legacy_cluster.seed else ():
                resp = await admin.call(
                    legacy_cluster.broker_addr,
                    RequestCode.QUERY_CONSUMER_OFFSET,
                    {
                        "consumerGroup": lg.BILLING,
                        "topic": mq.topic,
                        "queueId": mq.queue_id,
                        "setZeroIfNotFound": False,
                    },
                    ok=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND),
                )
                out.append((resp.code, resp.remark, resp.ext_fields.get("offset")))
            version = admin.server_versions[legacy_cluster.broker_addr]
            assert version == 407  # V4_9_7
            return out

    assert asyncio.run(ask()) == [(ResponseCode.SUCCESS, None, "0")] * 2


def test_lag_shows_never_committed_queues_as_unknown(
    legacy_cluster: LegacySandbox, config: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    doc = lag_json(legacy_cluster, lg.BILLING, capfd)
    committed = {q["queue_id"]: q["committed"] for q in doc["queues"] if q["topic"] == lg.ORDERS}
    assert committed == {0: 3, 1: 0, 2: None, 3: None}  # queue 1's 0 is a real commit
    assert doc["unknown_queues"] == 2
    assert doc["total_lag"] == (lg.ORDERS_MESSAGES - 3) + (lg.ORDERS_MESSAGES - 0)
    assert not any(q["below_min"] for q in doc["queues"])

    assert main(["lag", "--namesrv", legacy_cluster.namesrv_addr, "-g", lg.BILLING]) == 0
    text = capfd.readouterr().out
    rows = [line.split() for line in text.splitlines() if line.startswith(lg.ORDERS)]
    assert [(r[2], r[5], r[6]) for r in rows] == [
        ("0", "3", "2"),
        ("1", "0", "5"),
        ("2", "unknown", "unknown"),
        ("3", "unknown", "unknown"),
    ]
    assert "1970" not in text


def test_lag_flags_a_committed_offset_below_the_min(
    legacy_cluster: LegacySandbox, config: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    assert legacy_cluster.seed is not None
    low = legacy_cluster.seed.expired_min_offset
    doc = lag_json(legacy_cluster, lg.LAGGING, capfd)
    (queue,) = [q for q in doc["queues"] if q["topic"] == lg.EXPIRED]
    assert (queue["min_offset"], queue["committed"], queue["below_min"]) == (
        low,
        lg.LAGGING_COMMITTED,
        True,
    )
    assert doc["below_min_queues"] == 1
    # The message before the committed offset is deleted: its time is unknown, not 1970.
    assert queue["last_consumed_at"] is None

    assert main(["lag", "--namesrv", legacy_cluster.namesrv_addr, "-g", lg.LAGGING]) == 0
    text = capfd.readouterr().out
    assert f"below min: {low - lg.LAGGING_COMMITTED} already deleted" in text
    assert "below min 1" in text
    assert "1970" not in text


def test_groups_counts_the_queues_below_the_min(
    legacy_cluster: LegacySandbox, config: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    target = ["--namesrv", legacy_cluster.namesrv_addr]
    assert main(["groups", *target, "--json"]) == 0
    rows = {r["group"]: r for r in json.loads(capfd.readouterr().out)["groups"]}
    # As `lag` counts them (its below_min_queues), per group.
    assert rows[lg.LAGGING]["below_min_queues"] == 1
    assert rows[lg.BILLING]["below_min_queues"] == 0
    assert not rows[lg.LAGGING]["partial"]

    assert main(["groups", *target]) == 0
    header, *body = capfd.readouterr().out.splitlines()
    column = header.split().index("BELOW-MIN")
    cells = {line.split()[0]: line.split()[column] for line in body}
    assert (cells[lg.LAGGING], cells[lg.BILLING]) == ("1", "0")


def test_no_time_behind_is_counted_from_1970(legacy_cluster: LegacySandbox) -> None:
    cluster = ClusterConfig("legacy", (legacy_cluster.namesrv_addr,))

    async def read() -> tuple[dict, dict, dict]:
        backend = ReaderSource(cluster, Config(clusters=(cluster,)))
        try:
            raw = await backend.admin.consume_time_span(
                legacy_cluster.broker_addr, lg.ORDERS, lg.BILLING
            )
            billing = await backend.consume_delays(lg.BILLING, {lg.LEGACY_BROKER: [lg.ORDERS]})
            lagging = await backend.consume_delays(lg.LAGGING, {lg.LEGACY_BROKER: [lg.EXPIRED]})
        finally:
            await backend.close()
        return raw, billing, lagging

    raw, billing, lagging = asyncio.run(read())
    now = int(time.time() * 1000)
    # The broker counts the never-committed queues from 1970 ...
    assert {mq.queue_id for mq, s in raw.items() if known_delay(s.delay_ms, now) is None} == {2, 3}
    # ... and the console says nothing rather than that.
    assert sorted(q for (_, _, q) in billing) == [0, 1]
    assert all(0 <= d < 3_600_000 for d in billing.values())
    assert lagging == {}


def test_a_plan_names_the_version_and_warns_of_deleted_messages(
    legacy_cluster: LegacySandbox, config: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.yaml"
    scope = {"cluster": "legacy", "groups": [lg.LAGGING], "topics": [lg.EXPIRED]}
    spec.write_text(yaml.safe_dump({"scope": scope, "strategy": "earliest"}))
    code = main(["plan", "--namesrv", legacy_cluster.namesrv_addr, "--spec", str(spec)])
    out = capfd.readouterr().out
    assert code == 0, out
    assert f"reset path for {lg.LAGGING}: offline update - {lg.LEGACY_BROKER} runs V4_9_7" in out
    assert "MQVersion" not in out
    # Earliest clamps nothing (it asks for the min), yet the deleted messages are named.
    assert (
        "warning (1 queue): the current offset is below the min offset: the messages between "
        "them are already deleted"
    ) in out
