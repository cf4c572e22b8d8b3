"""Colours for values inside table cells, taken from the current theme's variables.

Cells are Rich text, which cannot refer to `$variables`; so the variable is looked up in the
running theme when the cell is built, and tables rebuild their cells when the theme changes.
"""

from __future__ import annotations

from functools import lru_cache

from rich.style import Style
from rich.text import Text
from textual.app import App
from textual.color import Color, ColorParseError

from console.domain.triage import Status

STATUS_TONES = {
    Status.OK: "text-success",
    Status.ERR: "text-error",
    Status.WARN: "text-warning",
    Status.REWIND: "text-accent",
    Status.STALL: "text-error",
    Status.STOP: "text-error",
}


def style(app: App[object], variable: str, *, bold: bool = False) -> Style:
    return _style(app.theme_variables.get(variable), bold)


@lru_cache(maxsize=256)
def _style(value: str | None, bold: bool) -> Style:
    # Cached: a refresh of the group list styles thousands of cells from a handful of values.
    try:
        color = Color.parse(value).rich_color if value else None
    except ColorParseError:
        color = None
    return Style(color=color, bold=bold or None)


def toned(app: App[object], text: str, variable: str, *, bold: bool = False) -> Text:
    # A span rather than the base style: Text equality compares spans, and tables compare
    # cells to decide what to repaint (a theme change must count as a change).
    out = Text(text)
    out.stylize(style(app, variable, bold=bold))
    return out


def status_text(app: App[object], status: Status, complete: bool = True) -> Text:
    # A verdict from too short a window is shown without emphasis: it may still change.
    strong = complete and status is not Status.OK
    return toned(app, status.value, STATUS_TONES[status], bold=strong)
