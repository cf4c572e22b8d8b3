"""Error states: cluster unreachable, a broker down or gone, a group that cannot be read."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from console.domain.offsets import GroupOffsets
from console.rocketmq.errors import BrokerError
from console.services.read.source import Parts, Progress
from console.ui.screens.dialogs import ErrorDialog
from console.ui.screens.overview import OverviewScreen

from .fakes import FakeCluster, FakeSource, fake_app, unreachable
from .helpers import settle, shown, status, text_of


async def test_unreachable_name_server_shows_one_dialog_and_keeps_trying() -> None:
    fake = FakeCluster(failures={"brokers": unreachable()})
    app, _ = fake_app(fake)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ErrorDialog)
        assert dialog.title_text == "Refresh failed"
        assert "cannot connect to 10.0.0.9:9876: connection refused" in dialog.message
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)
        assert "error: cannot connect to 10.0.0.9:9876" in status(app)
        # The same failure on the next refresh: noted, not shown again.
        app.refresh_tick()
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)
        # It recovers by itself ...
        del fake.failures["brokers"]
        app.refresh_tick()
        await settle(pilot)
        assert "error" not in status(app)
        assert [r["state"] for r in shown(app)] == ["UP", "UP"]
        # ... and a new outage is shown again.
        fake.failures["brokers"] = unreachable()
        app.refresh_tick()
        await settle(pilot)
        assert isinstance(app.screen, ErrorDialog)


async def test_a_broker_down_is_named_while_the_other_keeps_refreshing() -> None:
    app, fake = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        fake.take_down("broker-b")
        fake.brokers[0] = fake.brokers[0].__class__(
            "broker-a", "10.0.0.1:10911", True, "V5_3_3", 5500, 5200
        )
        await pilot.press("r")
        await settle(pilot)
        rows = {r["broker"]: r for r in shown(app)}
        assert rows["broker-b"]["state"] == "DOWN"
        assert rows["broker-b"]["note"] == "cannot connect to 10.0.0.2:10911: refused"
        assert (rows["broker-a"]["state"], rows["broker-a"]["in"]) == ("UP", "5500")
        assert "DOWN: broker-b" in status(app)
        assert text_of(app, "#totals").startswith("2 brokers (1 down)")
        fake.bring_up("broker-b")
        await pilot.press("r")
        await settle(pilot)
        assert [r["state"] for r in shown(app)] == ["UP", "UP"]
        assert "DOWN" not in status(app)


async def test_a_broker_that_leaves_the_name_server_is_down_not_gone() -> None:
    app, fake = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        fake.take_down("broker-b", vanish=True)
        await pilot.press("r")
        await settle(pilot)
        rows = {r["broker"]: r for r in shown(app)}
        assert rows["broker-b"]["state"] == "DOWN"
        assert rows["broker-b"]["note"] == "not registered with the name server"
        assert rows["broker-b"]["seen"] == "0s"
        # The down broker is named on every screen, and the group says its queues are missing.
        await pilot.press("g")
        await settle(pilot)
        assert "DOWN: broker-b" in status(app)
        await pilot.press("down", "enter")
        await settle(pilot)
        assert "no answer from broker-b: queues not shown" in text_of(app, "#summary")


async def test_an_unreadable_group_is_reported_and_the_rest_shown() -> None:
    app, fake = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        original = fake.groups["search"]
        fake.groups["search"] = None  # type: ignore[assignment]
        await pilot.press("g")
        await settle(pilot)
        # Not left out: a row that says nothing is known of it, ranked as ERR.
        rows = {r["group"]: r for r in shown(app)}
        assert [r["group"] for r in shown(app)] == ["audit", "search", "billing", "shadow"]
        assert (rows["search"]["status"], rows["search"]["lag"]) == ("ERR", "?")
        assert "1 group(s) unreadable" in status(app)
        assert text_of(app, "#notes").startswith("1 group(s) not read (search): ")
        fake.groups["search"] = original
        await pilot.press("r")
        await settle(pilot)
        assert len(shown(app)) == 4
        assert "unreadable" not in status(app)
        assert not app.screen.query_one("#notes").display


async def test_time_behind_unavailable_leaves_it_unknown() -> None:
    app, fake = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        fake.failures["consume_delays"] = BrokerError("10.0.0.1:10911", 303, 17, "no topic")
        await pilot.press("g")
        await settle(pilot)
        rows = {r["group"]: r for r in shown(app)}
        assert rows["billing"]["behind"] == "?"
        assert rows["search"]["behind"] == "0s"
        assert rows["shadow"]["behind"] == "-"


async def test_reads_taken_in_parts_show_every_group_and_one_that_never_came_as_err(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The list takes a refresh's reads as the network process hands them over, in parts; a
    group listed whose read came neither in a part nor in the answer is a row that says so,
    never left out (and never lag 0)."""
    whole = FakeSource.read_groups
    handed: list[str] = []

    async def in_parts(
        source: FakeSource,
        groups: Sequence[str],
        progress: Progress | None = None,
        parts: Parts | None = None,
    ) -> dict[str, GroupOffsets | Exception]:
        assert parts is not None  # the screen takes them as they come
        read = await whole(source, groups, progress)
        for name in [g for g in groups if g != "audit"]:
            handed.append(name)
            parts({name: read[name]})  # a part each; audit's never comes
        return {}

    monkeypatch.setattr(FakeSource, "read_groups", in_parts)
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)
        rows = {r["group"]: r for r in shown(app)}
        assert set(rows) == {"audit", "search", "billing", "shadow"}
        assert sorted(handed) == ["billing", "search", "shadow"]
        assert (rows["audit"]["status"], rows["audit"]["lag"]) == ("ERR", "?")
        assert all(rows[g]["status"] != "ERR" for g in handed)
        assert "1 group(s) unreadable" in status(app)
        assert text_of(app, "#notes").startswith("1 group(s) not read (audit): ")
