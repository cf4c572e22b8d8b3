"""Plan values: reset path choice, the header file, the content hash, ids."""

from __future__ import annotations

import hashlib

import pytest

from console.domain.plan import (
    PlanHeader,
    PlanRow,
    SnapshotInfo,
    Totals,
    new_plan_id,
    parse_stamp,
    stamp,
)
from console.domain.plan_hash import content_hash
from console.domain.reset_paths import (
    BrokerFacts,
    ResetPath,
    ResetPathKind,
    choose_reset_path,
    version_name,
)
from console.domain.spec import Latest, ResetSpec, Scope

NEW = BrokerFacts("broker-a", 479, True)  # 5.3.3, server-side reset on
NEW_OFF = BrokerFacts("broker-b", 479, False)
OLD = BrokerFacts("broker-c", 409, None)  # 4.9.8
DOWN = BrokerFacts("broker-d", None, None)
# 5.5.0 with the v2 (RocksDB) offset store: keeps a server-side reset in memory only.
V2 = BrokerFacts("broker-e", 495, True, forgets_resets=True)


@pytest.mark.parametrize(
    ("brokers", "online", "per_queue", "kind", "blocked", "words"),
    [
        ([NEW], 0, True, ResetPathKind.SERVER_SIDE, False, "useServerSideResetOffset=true"),
        ([NEW], 3, True, ResetPathKind.SERVER_SIDE, False, "3 online consumer(s)"),
        ([NEW, OLD], 2, False, ResetPathKind.CLIENT_PUSH, False, "broker-c runs V4_9_8"),
        ([NEW_OFF], 1, True, ResetPathKind.OFFLINE_UPDATE, True, "useServerSideResetOffset=false"),
        ([OLD], 0, True, ResetPathKind.OFFLINE_UPDATE, False, "no consumer is online"),
        ([NEW, DOWN], 0, False, ResetPathKind.OFFLINE_UPDATE, False, "version unknown"),
        ([NEW, V2], 0, True, ResetPathKind.OFFLINE_UPDATE, False, "broker-e would keep"),
        # Online, the consumers' own commits save where the reset put them.
        ([V2], 2, True, ResetPathKind.SERVER_SIDE, False, "2 online consumer(s)"),
    ],
)
def test_reset_path(
    brokers: list[BrokerFacts],
    online: int,
    per_queue: bool,
    kind: ResetPathKind,
    blocked: bool,
    words: str,
) -> None:
    path = choose_reset_path(
        brokers, consumers_online=online, broadcasting=False, per_queue=per_queue
    )
    assert path.kind is kind
    assert words in path.reason
    assert (path.blocker is not None) == blocked


def test_a_pop_group_online_is_reset_by_its_brokers_or_not_at_all() -> None:
    """Only the broker's own reset moves a POP group with consumers online (RocketMQ 5): a
    client push does not reach them and their next pop writes over a direct write."""
    served = choose_reset_path(
        [NEW], consumers_online=2, broadcasting=False, per_queue=False, pop=True
    )
    assert served.kind is ResetPathKind.SERVER_SIDE
    assert served.blocker is None
    assert "popped and not acked still come back" in served.reason
    refused = choose_reset_path(
        [NEW_OFF], consumers_online=2, broadcasting=False, per_queue=False, pop=True
    )
    assert refused.kind is ResetPathKind.OFFLINE_UPDATE
    assert refused.blocker is not None
    assert "useServerSideResetOffset=true" in refused.blocker
    assert "client push does not reach them" in refused.reason
    # Nobody online: nothing pops, a direct write stays.
    offline = choose_reset_path(
        [NEW_OFF], consumers_online=0, broadcasting=False, per_queue=False, pop=True
    )
    assert (offline.kind, offline.blocker) == (ResetPathKind.OFFLINE_UPDATE, None)


def test_broadcasting_has_no_broker_side_path() -> None:
    path = choose_reset_path([NEW], consumers_online=2, broadcasting=True, per_queue=False)
    assert path.kind is ResetPathKind.NONE
    assert path.blocker is not None
    assert "offset files" in path.blocker


def test_version_names_as_brokers_print_them() -> None:
    # brokerVersionDesc spells them so: the reset path and `brokers` name a broker alike.
    assert version_name(479) == "V5_3_3"
    assert version_name(407) == "V4_9_7"
    assert version_name(213) == "V4_0_0"
    assert version_name(611) == "V5_9_9"
    assert version_name(440) == "V5_1_4_SNAPSHOT"
    assert version_name(100) == "MQVersion #100"
    assert version_name(None) == "unknown version"


def test_a_4_9_7_broker_is_named_in_the_reset_path() -> None:
    old = BrokerFacts("broker-old", 407, None)
    path = choose_reset_path([old], consumers_online=0, broadcasting=False, per_queue=False)
    assert "broker-old runs V4_9_7" in path.reason
    assert "MQVersion" not in path.reason


def test_header_round_trip() -> None:
    header = PlanHeader(
        plan_id="p",
        spec=ResetSpec(Scope("c", ("g",)), Latest()),
        snapshot=SnapshotInfo("c", "20261122T090500000Z", 1_795_338_300_000),
        created_at_ms=1_795_338_301_000,
        content_hash="sha256:ab",
        rows=2,
        totals=(Totals("g", None, 2, 1, 5, 3, 1, 10, 8), Totals("g", "t", 2, 1, 5, 3, 1, 10, 8)),
        timestamp_ms=None,
        reset_paths={"g": ResetPath(ResetPathKind.SERVER_SIDE, "why")},
        source_snapshot=SnapshotInfo("c", "x", 1),
    )
    text = header.to_json()
    assert '"created_at": "2026-11-22T09:05:01.000+00:00"' in text
    assert PlanHeader.from_json(text) == header
    assert header.group_totals() == [header.totals[0]]
    assert header.totals[0].net == -2  # skip 3 - re-consume 5
    with pytest.raises(ValueError, match=r"plan.json:1: not JSON"):
        PlanHeader.from_json("{", "plan.json")
    with pytest.raises(ValueError, match="not a plan header"):
        PlanHeader.from_json("{}", "plan.json")


def row(queue_id: int, current: int | None, target: int | None, broker: str = "a") -> PlanRow:
    return PlanRow(
        "c",
        "g",
        "t",
        broker,
        queue_id,
        0,
        100,
        current,
        target,
        target,
        None if current is None or target is None else target - current,
        None,
        (),
    )


def test_content_hash_follows_the_documented_recipe() -> None:
    rows = [row(1, 5, None), row(0, None, 7), row(0, 3, 3, broker="b")]
    sha = lambda s: hashlib.sha256(s.encode()).hexdigest()  # noqa: E731
    # Leaves ordered by (broker, queue id): a/0, a/1, b/0; null written as "".
    leaves = [
        sha("g\x1ft\x1fa\x1f0\x1f\x1f7"),
        sha("g\x1ft\x1fa\x1f1\x1f5\x1f"),
        sha("g\x1ft\x1fb\x1f0\x1f3\x1f3"),
    ]
    topic = sha("".join(leaves))
    assert content_hash("c", rows) == "sha256:" + sha("c\n" + f"g\x1ft\x1f{topic}")
    assert content_hash("c", list(reversed(rows))) == content_hash("c", rows)
    assert content_hash("c", [row(1, 5, 6), *rows[1:]]) != content_hash("c", rows)


def test_stamps_and_ids() -> None:
    assert stamp(1_795_338_300_123) == "20261122T090500123Z"
    assert parse_stamp("20261122T090500123Z") == 1_795_338_300_123
    assert parse_stamp("latest") is None
    pid = new_plan_id(1_795_338_300_123, ["orders/eu"], "to-timestamp", "salt")
    assert pid.startswith("20261122T090500123Z-orders-eu-to-timestamp-")
    assert pid != new_plan_id(1_795_338_300_123, ["orders/eu"], "to-timestamp", "other")


def test_row_from_dict() -> None:
    r = PlanRow.from_dict(
        {
            "cluster": "c",
            "group": "g",
            "topic": "t",
            "broker": "a",
            "queue_id": 1,
            "min_offset": 0,
            "max_offset": 9,
            "current": 2,
            "requested": 4,
            "target": 4,
            "delta": 2,
            "clamp": None,
            "warnings": ["consumers_online"],
        }
    )
    assert r.warnings == ("consumers_online",)
    assert r.changed
    assert [row(0, 3, 3).changed, row(0, 3, None).changed, row(0, None, 1).changed] == [
        False,
        False,
        True,
    ]
