"""Reading the console's state in Pilot tests: what a table shows, what a line says."""

from __future__ import annotations

import contextlib
import html
import re
import time
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import Static
from textual.worker import WorkerFailed

from console.ui.app import ConsoleApp
from console.ui.widgets.banner import ClusterBanner
from console.ui.widgets.crumbs import Crumbs
from console.ui.widgets.dataview import DataView
from console.ui.widgets.statusline import StatusLine


async def settle(pilot: Pilot[int]) -> None:
    """Let every worker finish and every message be handled.

    A failed worker is not an error here: the console turns it into an error dialog, which the
    tests look at.
    """
    for _ in range(2):
        with contextlib.suppress(WorkerFailed):
            await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def until(pilot: Pilot[int], shown: Callable[[], bool], *, timeout_s: float = 20.0) -> None:
    """Handle messages until `shown()` holds: for a worker that waits on the operator (an apply
    session waiting for its confirmation), which `settle` would wait for forever."""
    deadline = time.monotonic() + timeout_s
    while not shown():
        assert time.monotonic() < deadline, "the console never got there"
        await pilot.pause(0.02)
    await pilot.pause()  # and laid out: a click lands where it is drawn


async def asked(pilot: Pilot[int], *, timeout_s: float = 60.0) -> None:
    """Until an apply session shows its confirm dialog, or the error that ended it."""
    from console.ui.screens.apply import ConfirmApplyDialog
    from console.ui.screens.dialogs import ErrorDialog

    app = pilot.app
    await until(
        pilot, lambda: isinstance(app.screen, ConfirmApplyDialog | ErrorDialog), timeout_s=timeout_s
    )


def view(app: ConsoleApp, selector: str = "DataView") -> DataView:
    return app.screen.query_one(selector, DataView)


def shown(app: ConsoleApp, selector: str = "DataView") -> list[dict[str, str]]:
    """The rows of a table as shown, each as {column key: text}."""
    v = view(app, selector)
    return [
        {c.key: cell.plain for c, cell in zip(v.columns, r.cells, strict=True)} for r in v.shown
    ]


def values(app: ConsoleApp, selector: str = "DataView") -> dict[str, dict[str, object]]:
    """Raw values behind the rows shown: row key -> {column key: value}."""
    v = view(app, selector)
    return {
        r.key: {c.key: cell.value for c, cell in zip(v.columns, r.cells, strict=True)}
        for r in v.shown
    }


def keys(app: ConsoleApp, selector: str = "DataView") -> list[str]:
    return [r.key for r in view(app, selector).shown]


def text_of(app: ConsoleApp, selector: str) -> str:
    """A line's text, non-breaking spaces read as spaces."""
    widget = app.screen.query_one(selector, Static)
    if isinstance(widget, StatusLine | Crumbs):
        text = widget.render().plain
    else:
        content = widget.content
        text = content.plain if isinstance(content, Text) else str(content)
    return text.replace("\u00a0", " ")


def status(app: ConsoleApp) -> str:
    return text_of(app, "#status")


def toasts(app: ConsoleApp) -> list[str]:
    """The notifications on screen."""
    return [t.render().plain for t in app.screen.query("Toast")]  # type: ignore[attr-defined]


_SVG_TEXT = re.compile(
    r'<text [^>]*?x="([\d.]+)"[^>]*?textLength="([\d.]+)"[^>]*?-line-(\d+)\)"[^>]*>(.*?)</text>'
)


def screen_lines(app: Any) -> list[str]:
    """The screen as the terminal shows it, one string per line: read off a screenshot (the
    composited screen, borders, overlays and all), so a value a widget holds but does not show
    is not there."""
    svg = app.export_screenshot()
    width, height = app.size
    grid = [[" "] * width for _ in range(height)]
    for x, length, line, escaped in _SVG_TEXT.findall(svg):
        text = html.unescape(escaped).replace("\u00a0", " ")
        column = round(float(x) / (float(length) / len(text)))
        row = grid[int(line)]
        for i, char in enumerate(text):
            if column + i < width:
                row[column + i] = char
    return ["".join(row).rstrip() for row in grid]


async def open_billing(pilot: object) -> None:
    """The groups list, then the billing group's screen."""
    await settle(pilot)  # type: ignore[arg-type]
    await pilot.press("g")  # type: ignore[attr-defined]
    await settle(pilot)  # type: ignore[arg-type]
    await pilot.press("down", "enter")  # type: ignore[attr-defined]
    await settle(pilot)  # type: ignore[arg-type]


def banner(app: ConsoleApp) -> str:
    """What the cluster banner at the top of the screen says."""
    return app.screen.query_one("#banner", ClusterBanner).render().plain
