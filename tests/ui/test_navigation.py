"""Clusters -> overview -> groups -> group, topics -> topic; esc back; breadcrumbs; banner."""

from __future__ import annotations

from console.ui.screens.clusters import ClustersScreen
from console.ui.screens.group import GroupScreen
from console.ui.screens.groups import GroupsScreen
from console.ui.screens.overview import OverviewScreen
from console.ui.screens.topics import TopicScreen, TopicsScreen
from console.ui.widgets.banner import ClusterBanner
from console.ui.widgets.rowtable import RowTable

from .fakes import fake_app
from .helpers import keys, settle, shown, text_of


async def test_clusters_screen_lists_the_configured_clusters() -> None:
    app, _ = fake_app(open_cluster=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, ClustersScreen)
        rows = shown(app)
        assert [(r["name"], r["mode"], r["colour"]) for r in rows] == [
            ("prod", "read-only", "red"),
            ("staging", "read-write", "green"),
        ]
        assert text_of(app, "#crumbs") == "clusters"


async def test_keys_alone_walk_down_to_a_group_and_back() -> None:
    app, fake = fake_app(open_cluster=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("enter")  # prod
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)
        assert keys(app) == ["broker-a", "broker-b"]
        await pilot.press("g")
        await settle(pilot)
        assert isinstance(app.screen, GroupsScreen)
        assert text_of(app, "#crumbs") == "clusters › prod › groups"
        # Worst first: the offline group with lag, then the lagging one.
        assert keys(app)[:2] == ["audit", "billing"]
        await pilot.press("down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, GroupScreen)
        assert app.screen.group == "billing"
        assert text_of(app, "#crumbs") == "clusters › prod › groups › billing"
        for expected in (GroupsScreen, OverviewScreen, ClustersScreen):
            await pilot.press("escape")
            await settle(pilot)
            assert isinstance(app.screen, expected)
        # Leaving the overview closed the cluster's connections.
        assert fake.closed


async def test_topics_and_one_topic() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)
        await pilot.press("escape", "t")
        await settle(pilot)
        assert isinstance(app.screen, TopicsScreen)
        rows = shown(app)
        assert [r["topic"] for r in rows] == ["orders", "payments"]
        # The groups list was read once in this session: it knows who consumes what.
        assert rows[0]["groups"] == "audit, billing, shadow"
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TopicScreen)
        assert [(r["broker"], r["min"], r["max"], r["msgs"]) for r in shown(app)] == [
            ("broker-a", "0", "1200", "1200"),
            ("broker-b", "0", "990", "990"),
        ]
        assert text_of(app, "#consumers") == "consumed by: audit, billing, shadow"


async def test_esc_at_the_root_stays() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)


async def test_read_only_banner() -> None:
    app, _ = fake_app()  # prod is read-only and red
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        banner = app.screen.query_one(ClusterBanner)
        assert "READ-ONLY" in banner.render().plain
        assert banner.has_class("-read-only")
        assert banner.styles.background.rgb == (255, 0, 0)


async def test_read_write_cluster_has_no_read_only_mark() -> None:
    from .fakes import STAGING

    app, _ = fake_app(open_cluster=STAGING)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        banner = app.screen.query_one(ClusterBanner)
        assert "READ-ONLY" not in banner.render().plain
        assert banner.render().plain.strip().startswith("staging")


async def test_mouse_click_drills_in() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)
        table = app.screen.query_one(RowTable)
        # Row 2 of the table (offset by the header): click twice = select.
        await pilot.click(table, offset=(5, 2))
        await pilot.click(table, offset=(5, 2))
        await settle(pilot)
        assert isinstance(app.screen, GroupScreen)
        assert app.screen.group == "billing"


async def test_names_are_shown_as_they_are_never_as_markup() -> None:
    from dataclasses import replace

    from .fakes import FakeCluster, sample_groups

    odd = "[b]orders[/b]-[red]x"
    groups = {odd: replace(sample_groups()["search"], group=odd)}
    app, _ = fake_app(FakeCluster(groups=groups, delays={}))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)
        table = app.screen.query_one(RowTable)
        assert odd in table.render_line(1).text
        await pilot.press("enter")
        await settle(pilot)
        assert text_of(app, "#crumbs") == f"prod › groups › {odd}"
