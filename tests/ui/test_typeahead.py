"""Keys that arrive in one read (an SSH session batches keystrokes) land where the focus went:
"/" and a name fill the filter box, enter enter opens the row, as if typed one by one."""

from __future__ import annotations

from pathlib import Path

from textual import events

from console.ui.app import ConsoleApp
from console.ui.screens.dialogs import SaveDialog
from console.ui.screens.group import GroupScreen
from console.ui.widgets.dataview import FilterInput

from .fakes import fake_app
from .helpers import keys, settle, view


def type_in_one_read(app: ConsoleApp, *names: str) -> None:
    """Hand the keys to the app all at once, as the terminal driver does with one read: none of
    them is handled before the last is queued (Pilot.press waits after each key)."""
    for name in names:
        character = name if len(name) == 1 else {"slash": "/", "enter": "\r"}.get(name)
        app.post_message(events.Key(name, character))


async def test_a_name_typed_right_after_slash_goes_into_the_filter() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("g")
        await settle(pilot)
        type_in_one_read(app, "slash", *"bil")
        await settle(pilot)
        assert isinstance(app.focused, FilterInput)
        assert app.focused.value == "bil"
        assert keys(app) == ["billing"]


async def test_filter_and_open_in_one_read() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("g")
        await settle(pilot)
        type_in_one_read(app, "slash", *"sea", "enter", "enter")
        await settle(pilot)
        assert isinstance(app.screen, GroupScreen)
        assert app.screen.group == "search"


async def test_keys_typed_ahead_of_a_screen_change_act_on_the_new_screen() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        type_in_one_read(app, "g", "slash", *"aud")
        await settle(pilot)
        assert app.screen.crumb == "groups"
        assert keys(app) == ["audit"]
        assert view(app).query_text == "aud"


async def test_a_text_box_applies_its_own_keys_in_typing_order() -> None:
    """ctrl+u, a character and enter in one read: the box is cleared, then typed into, then
    submitted, as typed (Textual runs a box's bindings only after the keys behind them)."""
    app, _ = fake_app()
    submitted: list[Path | None] = []
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("g")
        await settle(pilot)
        await pilot.press("slash", *"sea")
        await settle(pilot)
        box = app.focused
        assert isinstance(box, FilterInput)
        type_in_one_read(app, "ctrl+u", *"bil", "left", "left", "backspace", "a", "home", "x")
        await settle(pilot)
        assert box.value == "xail"
        assert view(app).query_text == "xail"

    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.push_screen(SaveDialog("csv", Path("/tmp/rows.csv")), submitted.append)
        await settle(pilot)
        type_in_one_read(app, "ctrl+u", *"/x.csv", "enter")
        await settle(pilot)
    assert submitted == [Path("/x.csv")]
