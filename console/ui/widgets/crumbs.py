"""The breadcrumb line: where the operator is, shortened to fit rather than cut off.

A screen deep in a long-named cluster and group must still name the group: each name gives up
its middle to an ellipsis (the ends of a name are what tell `orders-etl-eu` from
`orders-etl-us`), the outer ones first, the one on screen last.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

SEPARATOR = " › "
ELLIPSIS = "…"
#: A name is not shortened below this many characters while another can give up more.
SHORTEST = 8


def shorten(name: str, width: int) -> str:
    """`name` in at most `width` characters, its middle replaced by an ellipsis."""
    if len(name) <= width:
        return name
    if width <= 1:
        return ELLIPSIS[:width]
    keep = width - 1
    head = (keep + 1) // 2
    return name[:head] + ELLIPSIS + name[len(name) - (keep - head) :]


def fit(parts: Sequence[str], width: int) -> str:
    """The crumbs joined, each shortened as little as needed to fit in `width` columns."""
    names = [p for p in parts if p]
    if not names:
        return ""
    room = width - len(SEPARATOR) * (len(names) - 1)
    sizes = [len(n) for n in names]
    # Outer names give up characters first, down to SHORTEST; then all, the current one last.
    for floor in (SHORTEST, 1):
        for i in range(len(names)):
            excess = sum(sizes) - room
            if excess <= 0:
                break
            sizes[i] = max(min(floor, sizes[i]), sizes[i] - excess)
    return SEPARATOR.join(shorten(n, s) for n, s in zip(names, sizes, strict=True))


class Crumbs(Static):
    def __init__(self, *, id: str | None = "crumbs") -> None:
        super().__init__(id=id)
        self.parts: tuple[str, ...] = ()

    def show(self, parts: Sequence[str]) -> None:
        self.parts = tuple(parts)
        self.refresh()

    @property
    def line(self) -> str:
        return fit(self.parts, self.content_size.width)

    def render(self) -> Text:
        return Text(self.line, no_wrap=True, overflow="ellipsis")
