"""`rmq-console lag -g G --json` against `mqadmin consumerProgress -g G`, queue by queue, and our
topic min/max against `mqadmin topicStatus`, for every seeded group and topic.

The live group keeps consuming while the two tools run one after the other, so for it the
mqadmin reading must lie between two readings of ours taken before and after (offsets of a live
clustering consumer and of a growing topic only move forward), and so must the end of every retry
topic (scheduled redeliveries). Everything else is static after the seed and must agree exactly.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from console.sandbox import scenario
from console.sandbox.errors import MqadminError
from console.sandbox.mqadmin_oracle import parse_consumer_progress, parse_topic_status

pytestmark = pytest.mark.integration

CLUSTERING_GROUPS = [g.name for g in scenario.GROUPS if g.model == "CLUSTERING"]
MOVING = {g.name for g in scenario.live_groups()}
GROWING_TOPICS = scenario.growing_topics()

Key = tuple[str, str, int]


def _lag_cli(group: str, config: Path) -> dict[str, Any]:
    """`lag -g GROUP --json` in a process of its own, for the sandbox of `config`."""
    console = Path(sys.executable).with_name("rmq-console")
    out = subprocess.run(
        [str(console), "lag", "-g", group, "--json", "--cluster", "sandbox"],
        check=True,
        capture_output=True,
        text=True,
        env={"RMQ_CONSOLE_CONFIG": str(config), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def _by_queue(doc: dict[str, Any]) -> dict[Key, dict[str, Any]]:
    return {(q["topic"], q["broker"], q["queue_id"]): q for q in doc["queues"]}


@pytest.fixture(scope="module")
def cli_config(sandbox: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A config of the sandbox alone (its `tls:` too, when its servers require TLS)."""
    path = tmp_path_factory.mktemp("config") / "config.yaml"
    path.write_text(json.dumps({"clusters": [sandbox.config_entry("sandbox")]}) + "\n")
    return path


@pytest.mark.parametrize("group", CLUSTERING_GROUPS)
async def test_lag_agrees_with_consumer_progress(
    sandbox: Any, group: str, cli_config: Path
) -> None:
    before = _by_queue(_lag_cli(group, cli_config))
    text = await sandbox.mqadmin.run("consumerProgress", "-g", group)
    after = _by_queue(_lag_cli(group, cli_config))
    progress = parse_consumer_progress(text)

    theirs = {(r.topic, r.broker_name, r.queue_id): r for r in progress.rows}
    assert set(theirs) == set(before) == set(after), "the same queues, retry topic included"
    assert theirs, f"mqadmin shows no queue for {group}"
    moving = group in MOVING
    for key, row in theirs.items():
        b, a = before[key], after[key]
        # mqadmin prints 0 where nothing is committed; we say unknown.
        ours_before = b["committed"] if b["committed"] is not None else 0
        ours_after = a["committed"] if a["committed"] is not None else 0
        # The trickle producer keeps writing to the growing topic; and retries scheduled while
        # the seed ran keep landing in retry topics for minutes after the consumer left (the
        # broker's delay levels: 10 s, 30 s, 1 m, 2 m, ...).
        if key[0] in GROWING_TOPICS or key[0].startswith("%RETRY%"):
            assert b["max_offset"] <= row.broker_offset <= a["max_offset"], key
        else:
            assert row.broker_offset == b["max_offset"] == a["max_offset"], key
        if moving:
            assert ours_before <= row.consumer_offset <= ours_after, key
        else:
            assert row.consumer_offset == ours_before == ours_after, key
            if b["committed"] is None:
                assert b["lag"] is None  # unknown, never 0
            else:
                assert row.diff == row.broker_offset - b["committed"], key
                assert b["lag"] == b["max_offset"] - b["committed"], key
        if b["committed"] is None:
            assert row.consumer_offset == 0


async def test_unknown_is_not_zero_for_the_partly_committed_group(
    sandbox: Any, cli_config: Path
) -> None:
    doc = _lag_cli(scenario.GROUP_PARTIAL, cli_config)
    unknown = [q for q in doc["queues"] if q["committed"] is None]
    known = [q for q in doc["queues"] if q["committed"] is not None]
    assert unknown
    assert known
    assert all(q["lag"] is None for q in unknown)
    assert doc["unknown_queues"] == len(unknown)


@pytest.mark.parametrize("topic", [t.name for t in scenario.TOPICS])
async def test_topic_min_max_agree_with_topic_status(sandbox: Any, topic: str) -> None:
    async with sandbox.admin() as admin:
        reader = sandbox.reader(admin)
        before = await reader.topic_stats(topic)
        text = await sandbox.mqadmin.run("topicStatus", "-t", topic)
        after = await reader.topic_stats(topic)
    status = parse_topic_status(text)
    theirs = {(r.broker_name, r.queue_id): r for r in status.rows}
    ours_b = {(q.broker_name, q.queue_id): s for q, s in before.items()}
    ours_a = {(q.broker_name, q.queue_id): s for q, s in after.items()}
    assert set(theirs) == set(ours_b)
    assert len(theirs) == 2 * next(t.queues_per_broker for t in scenario.TOPICS if t.name == topic)
    for key, row in theirs.items():
        assert row.min_offset == ours_b[key].min_offset == ours_a[key].min_offset
        if topic in GROWING_TOPICS:
            assert ours_b[key].max_offset <= row.max_offset <= ours_a[key].max_offset
        else:
            assert row.max_offset == ours_b[key].max_offset == ours_a[key].max_offset


async def test_broadcasting_group_has_no_broker_offsets_in_either_tool(
    sandbox: Any, cli_config: Path
) -> None:
    doc = _lag_cli(scenario.GROUP_BROADCAST, cli_config)
    assert doc["message_model"] == "BROADCASTING"
    assert doc["online"] is True
    assert doc["queues"] == []  # its offsets live in each client's offsets.json
    with pytest.raises(MqadminError, match="broadcast"):
        await sandbox.mqadmin.run("consumerProgress", "-g", scenario.GROUP_BROADCAST)
