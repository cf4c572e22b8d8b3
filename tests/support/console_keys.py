"""The console driven at 80x24 as an operator drives it, for the tests against real clusters:
a group opened from the groups list, its reset previewed."""

from __future__ import annotations

import asyncio

from textual.pilot import Pilot

from console.services.plan.preview_flow import Stage
from console.ui.app import ConsoleApp
from console.ui.screens.group import GroupScreen
from console.ui.screens.preview import PreviewScreen
from tests.ui.helpers import settle, status

#: How long a step may take against a real cluster on a loaded machine (a plan job included).
STEP_TIMEOUT_S = 900.0


async def settled(pilot: Pilot[int], timeout_s: float = STEP_TIMEOUT_S) -> None:
    await asyncio.wait_for(settle(pilot), timeout_s)


async def open_group(pilot: Pilot[int], app: ConsoleApp, group: str) -> GroupScreen:
    """The group, from the groups list (`g`, `/` and its name, enter)."""
    await settled(pilot)
    await pilot.press("g")
    await settled(pilot)
    await pilot.press("slash", *group, "enter", "enter")
    await settled(pilot)
    screen = app.screen
    assert isinstance(screen, GroupScreen), status(app)
    return screen


async def preview_shift_by(pilot: Pilot[int], app: ConsoleApp, by: int) -> PreviewScreen:
    """From the group's screen: `R`, the shift-by strategy with `by` messages, previewed."""
    assert isinstance(app.screen, GroupScreen), status(app)
    await pilot.press("R")
    await settled(pilot)
    screen = app.screen
    assert isinstance(screen, PreviewScreen)
    await pilot.press("shift+tab", "enter", "up", "enter")  # the strategy list: shift-by
    await pilot.press("tab", *str(by), "enter")
    await settled(pilot)
    assert screen.flow.stage is Stage.PREVIEWED, (screen.flow.error, status(app))
    return screen
