"""Refresh: on `r`, on the interval (pausable), in workers; a slow cluster never blocks keys."""

from __future__ import annotations

import asyncio
from pathlib import Path

from console.config import Config
from console.services.infra.workspace import Workspace
from console.services.read.snapshots import SnapshotStore
from console.ui.screens.base import DataScreen
from console.ui.screens.groups import GroupsScreen
from console.ui.screens.help import HelpScreen

from .fakes import PROD, STAGING, fake_app, sample_groups
from .helpers import keys, settle, shown, status, until


async def test_r_refreshes_the_current_view() -> None:
    app, fake = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        before = fake.calls.count("brokers")
        await pilot.press("r")
        await settle(pilot)
        assert fake.calls.count("brokers") == before + 1
        assert status(app).startswith("refreshed 0s ago")


async def test_the_interval_refreshes_the_top_data_screen_even_under_a_dialog() -> None:
    app, fake = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        before = fake.calls.count("groups")
        app.refresh_tick()
        await settle(pilot)
        assert fake.calls.count("groups") == before + 1


async def test_p_pauses_the_interval_but_not_r() -> None:
    app, fake = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        assert app.paused
        assert status(app).startswith("PAUSED")
        before = fake.calls.count("brokers")
        app.refresh_tick()
        await settle(pilot)
        assert fake.calls.count("brokers") == before
        await pilot.press("r")
        await settle(pilot)
        assert fake.calls.count("brokers") == before + 1
        await pilot.press("p")
        app.refresh_tick()
        await settle(pilot)
        assert fake.calls.count("brokers") == before + 2
        assert "PAUSED" not in status(app)


async def test_slow_cluster_keeps_keys_working_and_ticks_do_not_pile_up() -> None:
    app, fake = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)
        gate = asyncio.Event()
        fake.gates["group_offsets"] = gate
        await pilot.press("r")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, GroupsScreen)
        assert screen.refreshing
        assert status(app).startswith("refreshing 0/4")
        # The refresh hangs on the cluster; the console still answers keys.
        await pilot.press("down", "slash", *"sea")
        await pilot.pause()
        assert keys(app) == ["search"]
        calls = fake.calls.count("groups")
        app.refresh_tick()  # the interval elapses: no second refresh on top of the hung one
        await pilot.pause()
        assert fake.calls.count("groups") == calls
        gate.set()
        await settle(pilot)
        assert not screen.refreshing
        assert status(app).startswith("refreshed")


async def test_group_list_reports_progress_while_reading() -> None:
    app, fake = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        gate = asyncio.Event()
        fake.gates["consume_delays"] = gate  # offsets read, time behind pending
        await pilot.press("g")
        await pilot.pause()
        await pilot.pause()
        # The 4 groups read, the time behind of the 2 that lag being asked.
        assert status(app).startswith("time behind 0/2")
        gate.set()
        await settle(pilot)


async def test_leaving_a_screen_cancels_its_refresh() -> None:
    app, fake = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)
        fake.gates["group_offsets"] = asyncio.Event()
        await pilot.press("r")
        await pilot.pause()
        groups = app.screen
        assert isinstance(groups, DataScreen)
        assert groups.refreshing
        await pilot.press("escape")
        await settle(pilot)
        assert not groups.refreshing
        assert app.screen.crumb == "prod"


async def test_groups_refresh_keeps_a_snapshot_when_enabled(tmp_path: Path) -> None:
    config = Config(
        clusters=(PROD, STAGING),
        refresh_interval=3600,
        theme="rmq-dark",
        snapshot_on_refresh=True,
        workspace=str(tmp_path),
    )
    app, fake = fake_app(config=config)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)
    store = SnapshotStore(Workspace(str(tmp_path)))
    history = store.history(PROD.name)
    assert len(history) == 1
    table = store.load(history[0])
    assert set(table.column("group").to_pylist()) == set(sample_groups())


async def test_no_snapshot_unless_enabled(tmp_path: Path) -> None:
    config = Config(clusters=(PROD, STAGING), refresh_interval=3600, workspace=str(tmp_path))
    app, _ = fake_app(config=config)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)
    assert SnapshotStore(Workspace(str(tmp_path))).history(PROD.name) == []


async def test_the_first_refresh_shows_the_lags_while_the_time_behind_is_asked() -> None:
    app, fake = fake_app()
    gate = asyncio.Event()
    fake.gates["consume_delays"] = gate
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await until(pilot, lambda: "time behind" in status(app))
        first = {r["group"]: r for r in shown(app)}
        # The time behind of a lagging group is "being asked", not unknown.
        assert first["billing"]["behind"] == "…"
        assert first["audit"]["behind"] == "…"
        assert status(app).startswith("time behind 0/")
        gate.set()
        await settle(pilot)
        rows = {r["group"]: r for r in shown(app)}
        assert rows["billing"]["behind"] == "1m35s"
        # Every lag, status and place was in already.
        drop = {"behind"}
        assert [{k: v for k, v in r.items() if k not in drop} for r in first.values()] == [
            {k: v for k, v in r.items() if k not in drop} for r in rows.values()
        ]
        assert status(app).startswith("refreshed")
        # A later refresh keeps the rows on screen until its time behind is in.
        gate.clear()
        await pilot.press("r")
        await until(pilot, lambda: "time behind" in status(app))
        assert {r["group"]: r for r in shown(app)}["billing"]["behind"] == "1m35s"
        gate.set()
        await settle(pilot)
