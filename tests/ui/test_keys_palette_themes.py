"""Bindings with ids and the keymap, `?`, the palette, themes, NO_COLOR."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from textual.command import CommandPalette
from textual.widgets import Static

from console.config import Config
from console.ui.app import binding_ids
from console.ui.commands import ScreenActions
from console.ui.screens.groups import GroupsScreen
from console.ui.screens.help import HelpScreen
from console.ui.screens.overview import OverviewScreen
from console.ui.themes import PROJECT_THEMES, ThemeError, load_themes, parse_theme
from console.ui.widgets.rowtable import RowTable

from .fakes import PROD, STAGING, fake_app
from .helpers import settle, toasts


def config(**kw: object) -> Config:
    base: dict[str, object] = {"clusters": (PROD, STAGING), "refresh_interval": 3600}
    base.update(kw)
    return Config(**base)  # type: ignore[arg-type]


async def test_keymap_remaps_a_binding_by_id() -> None:
    app, fake = fake_app(config=config(keymap={"refresh": "f5", "groups": "G"}))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        before = fake.calls.count("brokers")
        await pilot.press("r")  # no longer bound
        await settle(pilot)
        assert fake.calls.count("brokers") == before
        await pilot.press("f5")
        await settle(pilot)
        assert fake.calls.count("brokers") == before + 1
        await pilot.press("G")
        await settle(pilot)
        assert isinstance(app.screen, GroupsScreen)


async def test_unknown_keymap_ids_and_theme_are_reported_once() -> None:
    app, _ = fake_app(config=config(keymap={"refrsh": "f5"}, theme="nope"))
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        notes = toasts(app)
        assert len(notes) == 1
        assert "unknown binding id(s) refrsh" in notes[0]
        assert "theme 'nope' not found; using textual-dark" in notes[0]
        assert app.theme == "textual-dark"


async def test_the_preview_keys_are_in_the_keymap_check() -> None:
    assert {"preview_run", "preview_cancel", "preview_warnings"} <= binding_ids()
    app, _ = fake_app(config=config(keymap={"preview_run": "f6", "reset": "ctrl+r"}))
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        assert toasts(app) == []


def test_the_keymap_check_loads_no_planning_code() -> None:
    """The preview's bindings are read off its class, and importing it loads no planning code:
    pyarrow and the Spark host stay off the console's start-up."""
    probe = (
        "import sys; from console.ui.app import binding_ids; "
        "assert 'preview_run' in binding_ids(); "
        "heavy = ('pyarrow', 'console.services.plan.planner', "
        "'console.services.infra.spark_runner'); "
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]", out.stderr


def test_every_binding_has_an_id() -> None:
    ids = binding_ids()
    for expected in ("back", "filter", "sort", "save_csv", "mqadmin", "refresh", "pause", "help"):
        assert expected in ids
    assert {"topics", "groups", "reset", "quit"} <= ids


async def test_question_mark_lists_the_bindings_and_the_status_rules() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        listed = {(k.key, k.id) for k in help_screen.keys}
        assert {("/", "filter"), ("r", "refresh"), ("esc", "back"), ("^s", "save_csv")} <= listed
        assert help_screen.screen_name == "groups"
        rules = help_screen.query_one("#help-rules", Static).content.plain  # type: ignore[union-attr]
        for status in ("OK", "WARN", "STALL", "STOP", "REWIND"):
            assert status in rules
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, GroupsScreen)


async def test_palette_offers_the_current_screens_actions() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        provider = ScreenActions(app.screen)
        names = [hit.text async for hit in provider.discover()]
        assert {"Topics", "Groups", "Refresh", "mqadmin", "Filter", "Sort"} <= set(names)
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"groups")
        await pilot.pause(0.3)  # the palette searches on a debounce timer
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, GroupsScreen)


async def test_themes_switch_and_cells_follow() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.theme == "rmq-dark"
        assert {"rmq-dark", "rmq-light", "rmq-contrast"} <= set(app.available_themes)
        await pilot.press("g")
        await settle(pilot)
        table = app.screen.query_one(RowTable)
        before = table.cells[0][0]
        app.theme = "rmq-light"
        await settle(pilot)
        after = table.cells[0][0]
        assert before.plain == after.plain == "STOP"
        assert before.spans != after.spans  # the status colour comes from the theme


async def test_no_color_is_respected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.no_color


@pytest.mark.parametrize("theme", ["rmq-dark", "rmq-light", "rmq-contrast"])
async def test_every_project_theme_draws_the_console(theme: str) -> None:
    app, _ = fake_app(config=config(theme=theme))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.theme == theme
        assert isinstance(app.screen, OverviewScreen)
        await pilot.press("g")
        await settle(pilot)
        assert isinstance(app.screen, GroupsScreen)


def test_project_themes_validate() -> None:
    loaded = load_themes([PROJECT_THEMES])
    assert loaded.problems == ()
    names = {t.name: t for t in loaded.themes}
    assert not names["rmq-light"].dark
    contrast = names["rmq-contrast"]
    assert contrast.ansi  # the terminal's own 16 colours
    assert contrast.primary.startswith("ansi_")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("name: x\nprimary: notacolour\n", "primary: 'notacolour' is not a colour"),
        ("primary: '#fff'\n", "name: required"),
        ("name: x\nprimary: '#fff'\nshade: 3\n", "unknown setting(s) shade"),
        ("name: x\nprimary: '#fff'\ndark: maybe\n", "dark: expected true or false"),
        ("- a list\n", "expected a mapping"),
        ("name: [unclosed\n", "cannot read"),
        ("name: x\nprimary: ansi_red\nansi: true\n", "an ansi theme needs ansi-background"),
    ],
)
def test_bad_theme_files_are_named(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ThemeError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        parse_theme(path)
    loaded = load_themes([tmp_path])
    assert loaded.themes == ()
    assert len(loaded.problems) == 1
    assert str(path) in loaded.problems[0]


async def test_a_user_theme_file_is_loaded_and_used(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text("name: mine\nprimary: '#884488'\ndark: true\n")
    app, _ = fake_app(config=config(theme="mine"), theme_paths=[PROJECT_THEMES, tmp_path])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.theme == "mine"
