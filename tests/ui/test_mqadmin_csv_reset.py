"""`m` shows the mqadmin equivalent, `ctrl+s` saves a table as CSV, `R` opens the reset preview."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from textual.widgets import Input

from console.domain import mqadmin
from console.services.infra import export
from console.ui.screens import preview
from console.ui.screens.dialogs import CommandsDialog, SaveDialog
from console.ui.screens.group import GroupScreen

from .fakes import IdlePlanners, fake_app, fake_services
from .helpers import settle, toasts

NS = ("10.0.0.9:9876",)


async def test_m_shows_the_mqadmin_command_of_each_view() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, CommandsDialog)
        assert dialog.lines == [
            "mqadmin clusterList -n 10.0.0.9:9876",
            "mqadmin brokerStatus -n 10.0.0.9:9876 -b 10.0.0.1:10911",
            "mqadmin brokerStatus -n 10.0.0.9:9876 -b 10.0.0.2:10911",
        ]
        await pilot.press("escape", "g", "down", "enter")
        await settle(pilot)
        await pilot.press("m")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, CommandsDialog)
        assert dialog.lines[0] == "mqadmin consumerProgress -n 10.0.0.9:9876 -g billing -s true"


def test_mqadmin_lines_are_shell_quoted() -> None:
    assert mqadmin.group(("a:1", "b:2"), "my group") == [
        "mqadmin consumerProgress -n 'a:1;b:2' -g 'my group' -s true",
        "mqadmin consumerConnection -n 'a:1;b:2' -g 'my group'",
        "mqadmin topicStatus -n 'a:1;b:2' -t '%DLQ%my group'",
    ]
    assert mqadmin.topics(NS, "C1") == ["mqadmin topicList -n 10.0.0.9:9876 -c C1"]
    assert mqadmin.topics(NS) == ["mqadmin topicList -n 10.0.0.9:9876"]
    assert mqadmin.topic(NS, "T")[0] == "mqadmin topicStatus -n 10.0.0.9:9876 -t T"
    assert mqadmin.groups(NS) == ["mqadmin consumerProgress -n 10.0.0.9:9876"]
    assert mqadmin.clusters(NS) == ["mqadmin clusterList -n 10.0.0.9:9876"]


async def test_ctrl_s_saves_the_table_as_shown(tmp_path: Path) -> None:
    app, _ = fake_app()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)
        await pilot.press("slash", *"i", "enter")  # audit, billing (the filter applies)
        await pilot.press("ctrl+s")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, SaveDialog)
        box = dialog.query_one(Input)
        assert box.value.endswith("prod-groups-20231114-221320.csv")
        target = tmp_path / "out" / "groups.csv"
        box.value = str(target)
        await pilot.press("enter")
        await settle(pilot)
        with target.open() as f:
            rows = list(csv.reader(f))
        assert rows[0][:4] == ["status", "group", "total lag", "time behind (ms)"]
        assert [r[1] for r in rows[1:]] == ["audit", "billing"]
        # Raw values: full numbers and milliseconds, not the abbreviations on screen.
        assert rows[1][2:4] == ["1490", "7200000"]
        assert any("saved 2 rows" in t for t in toasts(app))


async def test_save_can_be_cancelled() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, SaveDialog)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen.crumb == "prod"
        assert not [w for w in app.workers if w.group == "export"]


def test_csv_cells() -> None:
    text = export.to_csv(["a", "b", "c"], [[None, True, 'x,"y"'], [1, 2.5, ""]])
    assert text == 'a,b,c\n,true,"x,""y"""\n1,2.5,\n'
    with pytest.raises(ValueError, match="2 values for 3 columns"):
        export.to_csv(["a", "b", "c"], [[1, 2]])
    assert export.default_name("prod/groups list", 0) == "prod-groups-list-19700101-000000.csv"


async def test_reset_opens_the_preview_of_the_group() -> None:
    planners = IdlePlanners()
    app, _ = fake_app(services=fake_services(planners=planners))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("g", "down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, GroupScreen)
        await pilot.press("R")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, preview.PreviewScreen)
        assert screen.group == "billing"
        assert screen.cluster_session.cluster.name == "prod"
        assert screen.crumb == "reset billing"
        assert planners.warmed == 1
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, GroupScreen)
