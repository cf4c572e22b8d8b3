"""Keys that arrive in one read (an SSH session batches keystrokes) land where the focus went:
"/" and a name fill the filter box, enter enter opens the row, as if typed one by one."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from textual import events
from textual.widgets import Input

from console.ui.app import ConsoleApp
from console.ui.screens.apply import ConfirmApplyDialog, write_summary
from console.ui.screens.dialogs import SaveDialog
from console.ui.screens.group import GroupScreen
from console.ui.widgets.dataview import FilterInput
from tests.support.checks import drifted_check

from .fakes import STAGING, fake_app
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


async def test_keys_of_two_reads_keep_their_order_when_the_first_follows_the_focus() -> None:
    """shift+tab and "bill" in one read, "ing" in the next: "bill" goes to the button focused
    when it was read and comes back to follow the focus to the name box, behind "ing", which
    went there at once; the box once held "ingbill". The second read comes after a varying
    number of event-loop turns, to land in every stage of the first read's way back."""
    app, _ = fake_app(open_cluster=None)
    summary = replace(write_summary(drifted_check(), STAGING), drift=False)
    typed: dict[int, str] = {}
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for turns in range(12):
            dialog = ConfirmApplyDialog(summary)
            app.push_screen(dialog)
            await settle(pilot)
            type_in_one_read(app, "shift+tab", *"bill")
            for _ in range(turns):
                await asyncio.sleep(0)
            type_in_one_read(app, *"ing")
            await settle(pilot)
            typed[turns] = dialog.query_one("#confirm-group", Input).value
            dialog.dismiss(None)
            await settle(pilot)
    assert {t: v for t, v in typed.items() if v != "billing"} == {}
