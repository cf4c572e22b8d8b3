"""The console's picture of a RocketMQ 5.5 lite group: its lag as its brokers count it, its
lite topics most behind, and a broker whose count cannot be believed named, the total then a
lower bound (the CLI's `lag -g`: tests/integration/test_lite_groups.py)."""

from __future__ import annotations

from dataclasses import replace

from console.domain.gaps import Gap, Part, Why
from console.domain.lite import LiteLag, LiteTopicLag
from console.domain.offsets import Client, Consumption, Kind

from .fakes import NOW_MS, FakeCluster, fake_app
from .helpers import settle, shown, text_of

PROXY = "10.0.0.5:8080"


def _lite_billing(fake: FakeCluster, *, rocksdb_b: bool) -> None:
    """`billing` as a lite group on parent topic chats: broker-a counts 9 over two lite
    topics; broker-b either counts 0 too, or keeps offsets in RocksDB (a gap, not a 0)."""
    behind = (
        LiteTopicLag("session-3", "broker-a", 7, NOW_MS - 90_000),
        LiteTopicLag("session-4", "broker-a", 2, None),
    )
    counted = (("broker-a", 9),) if rocksdb_b else (("broker-a", 9), ("broker-b", 0))
    gaps = (
        (Gap(Part.LITE, "billing on broker-b", Why.NOT_REPORTED, "broker-b keeps RocksDB"),)
        if rocksdb_b
        else ()
    )
    fake.groups["billing"] = replace(
        fake.groups["billing"],
        queues=(),
        dlq_messages=0,
        clients=(Client("vm@1@0@x", "10.0.0.7:4000", "JAVA", 479, proxy=PROXY),),
        consumption=Consumption((Kind.LITE,), grpc=True),
        lite=LiteLag("chats", counted, behind, behind[:1]),
        gaps=gaps,
    )


async def _row_and_summary(*, rocksdb_b: bool) -> tuple[dict[str, str], str]:
    """The lite `billing` as the group list shows its row, and its group screen's summary."""
    fake = FakeCluster()
    _lite_billing(fake, rocksdb_b=rocksdb_b)
    app, _ = fake_app(fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)
        (row,) = [r for r in shown(app) if r["group"] == "billing"]
        await pilot.press("down", "enter")
        await settle(pilot)
        return row, " ".join(text_of(app, "#summary").split())


async def test_a_lite_group_shows_its_count_and_the_lite_topics_most_behind() -> None:
    row, summary = await _row_and_summary(rocksdb_b=False)
    assert row["kind"] == "lite/grpc"
    assert row["lag"] == "9"
    assert (
        "lite group, parent topic chats: lag 9 as its brokers count it (broker-a 9, broker-b 0)"
        in summary
    )
    assert "most behind by count: session-3 7 (broker-a, 1m" in summary
    assert "session-4 2 (broker-a)" in summary
    assert "PARTIAL" not in summary


async def test_a_lite_group_a_broker_cannot_count_is_at_least_never_its_zero() -> None:
    row, summary = await _row_and_summary(rocksdb_b=True)
    assert row["lag"] == "≥9"
    assert "lag ≥9 as its brokers count it (broker-a 9)" in summary
    assert "lite lag billing on broker-b: broker-b keeps RocksDB" in summary
