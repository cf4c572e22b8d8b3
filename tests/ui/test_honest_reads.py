"""A partial read is never "caught up" or a recovery: a broker down, a refused signature, a
committed offset below min, a queue with no store time, a refresh slower than the interval."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from textual.widgets import Sparkline

from console.config import ClusterConfig, Config
from console.ui.screens.base import DataScreen
from console.ui.screens.group import GroupScreen
from console.ui.screens.groups import GroupsScreen

from .fakes import NOW_MS, NOW_S, PROD, STAGING, FakeCluster, fake_app
from .helpers import screen_lines, settle, shown, status, text_of


async def open_groups(pilot: object) -> None:
    await settle(pilot)  # type: ignore[arg-type]
    await pilot.press("g")  # type: ignore[attr-defined]
    await settle(pilot)  # type: ignore[arg-type]


async def open_group(pilot: object, app: object, group: str) -> None:
    await open_groups(pilot)
    await pilot.press("slash", *group, "enter", "enter")  # type: ignore[attr-defined]
    await settle(pilot)  # type: ignore[arg-type]
    assert isinstance(app.screen, GroupScreen)  # type: ignore[attr-defined]


async def test_a_broker_going_down_shows_a_lower_bound_not_a_recovery() -> None:
    app, fake = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_groups(pilot)
        for _ in range(2):
            fake.advance()
            await pilot.press("r")
            await settle(pilot)
        before = {r["group"]: r for r in shown(app)}
        assert (before["audit"]["lag"], before["audit"]["trend"]) == ("1490", "→0")
        fake.advance()
        fake.take_down("broker-b")
        await pilot.press("r")
        await settle(pilot)
        rows = {r["group"]: r for r in shown(app)}
        # audit lost broker-b's 490: its lag reads as at least what broker-a has, no fall.
        assert rows["audit"]["lag"] == "≥1000"
        assert rows["audit"]["trend"] == "partial"
        assert rows["audit"]["status"] == "STOP"  # known trouble stays; never OK
        assert rows["search"]["status"] == "ERR"  # caught up on broker-a, unknown on b
        assert rows["search"]["lag"] == "≥0"
        assert rows["search"]["behind"] == "?"
        assert rows["audit"]["behind"] == "≥2h00m"  # broker-b's queues may be further behind
        assert all(r["status"] != "OK" for r in rows.values())
        assert "4 partly read" in status(app)

        await pilot.press("slash", *"audit", "enter", "enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, GroupScreen)
        summary = text_of(app, "#summary")
        assert "lag ≥1000" in summary
        assert "trend partial" in summary
        assert "behind ≥2h00m" in summary
        assert "no answer from broker-b: queues not shown, lag is at least 1000" in summary
        # The group screen's own window: three full reads, then the partial one, nothing drawn
        # across the change.
        assert list(screen.query_one(Sparkline).data or []) == [1000.0]
        assert "(partial read)" in text_of(app, "#spark-range")
        assert "↓" not in "\n".join(screen_lines(app))


async def test_a_broker_that_left_the_name_server_still_makes_the_read_partial() -> None:
    app, fake = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_groups(pilot)
        fake.advance()
        fake.take_down("broker-b", vanish=True)  # the reader never asks it: no trace in a read
        await pilot.press("r")
        await settle(pilot)
        rows = {r["group"]: r for r in shown(app)}
        assert rows["audit"]["lag"] == "≥1000"
        assert rows["search"]["status"] == "ERR"


async def test_a_broker_back_restarts_the_trend() -> None:
    app, fake = fake_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        fake.take_down("broker-b")
        await open_group(pilot, app, "audit")
        fake.bring_up("broker-b")
        for _ in range(2):
            fake.advance()
            await pilot.press("r")
            await settle(pilot)
        screen = app.screen
        assert isinstance(screen, GroupScreen)
        assert list(screen.query_one(Sparkline).data or []) == [1490.0, 1490.0]
        assert "since the read changed" in text_of(app, "#spark-range")
        assert "trend →0" in text_of(app, "#summary")


async def test_a_refused_signature_is_named_and_readable_at_80x24() -> None:
    app, fake = fake_app()
    fake.refuse("broker-a", access_key="rmq-viewer")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        rows = {r["broker"]: r for r in shown(app)}
        assert rows["broker-a"]["state"] == "AUTH"
        assert "AUTH REFUSED: broker-a" in status(app)
        assert "DOWN" not in status(app)
        assert text_of(app, "#totals").startswith("2 brokers (1 refuse our credentials)")
        lines = screen_lines(app)
        assert all(len(line) <= 80 for line in lines)
        text = " ".join(" ".join(line.split()) for line in lines)
        assert (
            "broker-a: 10.0.0.1:10911 refused the signature for access key rmq-viewer: "
            "check the secret (the server said: check signature failed)"
        ) in text


async def test_groups_a_refusing_broker_keeps_from_are_err_rows_with_the_reason() -> None:
    app, fake = fake_app()
    denied = fake.refuse("broker-a")
    fake.failures["group_offsets"] = denied  # the reader fails a group read on a refusal
    async with app.run_test(size=(80, 24)) as pilot:
        await open_groups(pilot)
        rows = shown(app)
        assert [r["status"] for r in rows] == ["ERR"] * 4
        assert all(r["lag"] == "?" for r in rows)
        notes = text_of(app, "#notes")
        assert notes.startswith("4 group(s) not read (audit, billing, search and 1 more): ")
        assert "refused the signature for access key rmq-viewer: check the secret" in notes


async def test_no_time_since_1970_and_below_min_flagged() -> None:
    fake = FakeCluster()
    # billing's orders@broker-a:0: its committed offset's message was deleted (min moved past
    # it); the broker answers "now - 0" as its delay.
    fake.commit("billing", "orders", "broker-a", 0, min_offset=1150)
    fake.delays["billing"][("orders", "broker-a", 0)] = NOW_MS
    fake.delays["billing"][("orders", "broker-b", 0)] = NOW_MS - 5  # no store time either
    app, _ = fake_app(fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_group(pilot, app, "billing")
        rows = {(r["broker"], r["queue"], r["topic"]): r for r in shown(app, "#queues")}
        a0 = rows[("broker-a", "0", "orders")]
        assert a0["committed"] == "1100<min"
        assert a0["behind"] == "?"
        assert rows[("broker-b", "0", "orders")]["behind"] == "?"
        assert rows[("broker-b", "1", "orders")]["behind"] == "-"  # never committed
        summary = text_of(app, "#summary")
        assert "behind ?" in summary
        assert "committed below min (1100 < 1150), those messages are already deleted" in summary
        assert not any("20" in r["behind"] and "d" in r["behind"] for r in rows.values())


async def test_r_during_a_refresh_starts_no_second_read() -> None:
    app, fake = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_groups(pilot)
        gate = asyncio.Event()
        fake.gates["group_offsets"] = gate
        await pilot.press("r")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, GroupsScreen)
        assert screen.refreshing
        calls = fake.calls.count("groups")
        await pilot.press("r")
        await pilot.pause()
        assert fake.calls.count("groups") == calls
        assert screen.refreshing
        gate.set()
        await settle(pilot)
        assert not screen.refreshing


async def test_a_refresh_slower_than_the_interval_is_said() -> None:
    now = [NOW_S]
    config = Config(clusters=(PROD, STAGING), refresh_interval=10, theme="rmq-dark")
    app, fake = fake_app(config=config, clock=lambda: now[0])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_groups(pilot)
        assert "interval" not in status(app)
        # The interval's own timer runs on the wall clock: on a loaded machine it can fire
        # during this test, and its quick refresh would replace the one being judged.
        app.paused = True
        gate = asyncio.Event()
        fake.gates["group_offsets"] = gate
        await pilot.press("r")
        await pilot.pause()
        now[0] += 14
        app.screen.query_one("#status").refresh()
        await pilot.pause()
        assert "14s > 10s interval so far" in status(app)
        gate.set()
        await settle(pilot)
        assert "took 14s > 10s interval" in status(app)
        await pilot.press("r")
        await settle(pilot)
        assert "interval" not in status(app)


async def test_long_names_are_shortened_in_the_breadcrumb_not_dropped() -> None:
    long_group = "orders-processing-analytics-etl-consumer-group-v2-eu-west-1-blue"
    fake = FakeCluster()
    fake.groups[long_group] = replace(fake.groups["audit"], group=long_group)
    app, _ = fake_app(fake)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_group(pilot, app, "eu-west-1-blue")
        crumbs = text_of(app, "#crumbs")
        assert crumbs.startswith("prod › groups › orders-")
        assert crumbs.endswith("-blue")
        assert "…" in crumbs
        assert len(crumbs) <= 78


async def test_the_banner_names_the_name_server_once() -> None:
    addrs = ("10.0.0.9:9876", "10.0.0.10:9876")
    cluster = ClusterConfig("10.0.0.9:9876,10.0.0.10:9876", addrs)
    config = Config(clusters=(cluster,), refresh_interval=3600, theme="rmq-dark")
    app, _ = fake_app(config=config, open_cluster=cluster)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        top = "\n".join(screen_lines(app)[:2])
        assert top.count("10.0.0.9:9876") == 1
        assert text_of(app, "#crumbs") == "overview"


async def test_st_sorts_worst_first() -> None:
    app, fake = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_groups(pilot)
        listed = [r["group"] for r in shown(app)]
        await pilot.press("s")  # ST
        await pilot.pause()
        assert [r["group"] for r in shown(app)] == listed
        assert shown(app)[0]["status"] == "STOP"


async def test_name_server_notices_show_on_the_status_line_while_they_last() -> None:
    app, fake = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, DataScreen)
        line = "name server 10.0.0.9:9876 did not answer (timed out); using 10.0.0.1:9876"
        fake.notices = [line]
        await pilot.press("r")
        await settle(pilot)
        assert status(app).endswith("using 10.0.0.1:9876")
        fake.notices = []
        await pilot.press("r")
        await settle(pilot)
        assert "10.0.0.9:9876" not in status(app)
