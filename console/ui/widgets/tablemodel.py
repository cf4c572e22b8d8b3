"""Rows of a console table, and how a filter and a sort order arrange them (no widgets here)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True, slots=True)
class SortOrder:
    column: int | None = None  # None keeps the order the rows came in
    reverse: bool = False


def matches(row: Row, terms: Sequence[str]) -> bool:
    """Every term (case-insensitive) appears in some cell."""
    texts = [c.plain.casefold() for c in row.cells]
    return all(any(t in text for text in texts) for t in terms)


def arrange(rows: Iterable[Row], query: str, order: SortOrder) -> list[Row]:
    terms = query.casefold().split()
    kept = [r for r in rows if matches(r, terms)] if terms else list(rows)
    if order.column is None:
        return kept
    i = order.column
    # Unknown values go last whichever way the column sorts: they are never the "top" of anything.
    known = [r for r in kept if r.cells[i].sort_key is not None]
    unknown = [r for r in kept if r.cells[i].sort_key is None]
    known.sort(key=lambda r: r.cells[i].sort_key, reverse=order.reverse)
    return known + unknown
