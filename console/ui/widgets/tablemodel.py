"""Rows of a console table, and how a filter and a sort order arrange them (no widgets here)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rich.cells import cell_len
from rich.text import Text


@dataclass(frozen=True, slots=True)
class Column:
    key: str
    label: str  # the short header an 80-column screen has room for
    title: str = ""  # the full name, for CSV headers and help
    numeric: bool = False

    @property
    def export_title(self) -> str:
        return self.title or self.label


@dataclass(frozen=True, slots=True)
class Cell:
    value: Any  # raw: what a CSV holds and what sorts, None when unknown
    text: str | Text  # shown
    sort: Any = None  # a sort key when the raw value does not order as the column should

    @property
    def plain(self) -> str:
        return self.text.plain if isinstance(self.text, Text) else self.text

    @property
    def sort_key(self) -> Any:
        return self.value if self.sort is None else self.sort


def cell(value: Any, text: str | Text | None = None, sort: Any = None) -> Cell:
    return Cell(value, str(value) if text is None else text, sort)


@dataclass(frozen=True, slots=True)
class Row:
    key: str
    cells: tuple[Cell, ...]
    # Worked out where the row is built (off the UI thread for the big lists), not on every
    # keystroke of a filter: the cells' widths, and the text a filter searches.
    widths: tuple[int, ...] = field(init=False, compare=False, repr=False)
    haystack: str = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "widths", tuple(_width(c.text) for c in self.cells))
        object.__setattr__(self, "haystack", "\0".join(c.plain.casefold() for c in self.cells))


@dataclass(frozen=True, slots=True)
class SortOrder:
    column: int | None = None  # None keeps the order the rows came in
    reverse: bool = False


def arrange(rows: Iterable[Row], query: str, order: SortOrder) -> list[Row]:
    """Rows whose cells contain every word of `query` (case-insensitive), in `order`."""
    terms = query.casefold().split()
    kept = [r for r in rows if all(t in r.haystack for t in terms)] if terms else list(rows)
    if order.column is None:
        return kept
    i = order.column
    # Unknown values go last whichever way the column sorts: they are never the "top" of anything.
    known = [r for r in kept if r.cells[i].sort_key is not None]
    unknown = [r for r in kept if r.cells[i].sort_key is None]
    known.sort(key=lambda r: r.cells[i].sort_key, reverse=order.reverse)
    return known + unknown


def _width(text: str | Text) -> int:
    return text.cell_len if isinstance(text, Text) else cell_len(text)
