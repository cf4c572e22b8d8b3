"""A table the way every console view shows one: filter with `/`, sort by any column, save as CSV.

Rows come in as `tablemodel.Row`s (raw values for sorting and CSV, text for show); the RowTable
inside shows the arranged (filtered, sorted) rows, and the cursor stays on its row across
refreshes, filters and sorts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input

from console.ui.widgets.rowtable import RowTable, TableLayout
from console.ui.widgets.tablemodel import Column, Row, SortOrder, arrange
from console.ui.widgets.textbox import TextBox


class FilterInput(TextBox):
    """The filter box of a DataView. Its keys act on the view directly rather than through a
    message: the focus has to be back on the table before the next key is read (`/`, a name,
    enter, enter typed in one go must open the row)."""

    BINDINGS = [
        Binding("escape", "cancel", "Clear filter", id="filter_clear", show=False),
        Binding("enter,down", "done", "Keep filter", id="filter_keep", show=False),
    ]

    def __init__(self, view: DataView) -> None:
        super().__init__(placeholder="filter: words to match, esc clears")
        self.view = view

    def action_cancel(self) -> None:
        self.view.clear_filter()

    def action_done(self) -> None:
        self.view.keep_filter()


class DataView(Vertical):
    BINDINGS = [
        Binding("slash", "filter", "Filter", id="filter"),
        Binding("s", "sort", "Sort", id="sort"),
        Binding("S", "sort_reverse", "Reverse sort", id="sort_reverse", show=False),
        Binding("ctrl+s", "save_csv", "Save CSV", id="save_csv", show=False),
    ]

    class SaveRequested(Message):
        """The operator asked to save this table; the screen asks where."""

        def __init__(self, view: DataView) -> None:
            super().__init__()
            self.view = view

    def __init__(
        self,
        title: str,
        columns: Sequence[Column],
        *,
        order: SortOrder | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.title = title
        self.columns = tuple(columns)
        self.order = order or SortOrder()
        self.query_text = ""
        self._rows: tuple[Row, ...] = ()
        self._shown: list[Row] = []
        self._ready = False

    def compose(self) -> ComposeResult:
        yield FilterInput(self)
        yield RowTable()

    def on_mount(self) -> None:
        self.filter_input.display = False
        self._ready = True
        self._render_rows()

    @property
    def table(self) -> RowTable:
        return self.query_one(RowTable)

    @property
    def filter_input(self) -> FilterInput:
        return self.query_one(FilterInput)

    # ---- data ----------------------------------------------------------------------------------

    @property
    def shown(self) -> list[Row]:
        return list(self._shown)

    def set_rows(self, rows: Sequence[Row]) -> None:
        rows = tuple(rows)
        if rows == self._rows and self._shown:
            return
        self._rows = rows
        self._render_rows()

    @property
    def current_key(self) -> str | None:
        return self.table.cursor_key if self._ready else None

    def export(self) -> tuple[list[str], list[list[Any]]]:
        """Headers and raw values of the rows as shown (filtered and sorted)."""
        headers = [c.export_title for c in self.columns]
        return headers, [[c.value for c in r.cells] for r in self._shown]

    # ---- rendering ------------------------------------------------------------------------------

    def _render_rows(self) -> None:
        if not self._ready:
            return  # on_mount renders what was set before
        table = self.table
        current = table.cursor_key
        shown = arrange(self._rows, self.query_text, self.order)
        headers = tuple(self._header(i, col) for i, col in enumerate(self.columns))
        measured = [[h.cell_len for h in headers], *(r.widths for r in shown)]
        widths = tuple(max(column) for column in zip(*measured, strict=True))
        layout = TableLayout(headers, widths, tuple(c.numeric for c in self.columns))
        cells = [tuple(c.text for c in r.cells) for r in shown]
        table.set_data(layout, [r.key for r in shown], cells, cursor_key=current)
        self._shown = shown
        self._update_title()

    def _header(self, i: int, col: Column) -> Text:
        label = col.label
        if self.order.column == i:
            label += "▼" if self.order.reverse else "▲"
        return Text(label)

    def _update_title(self) -> None:
        parts = [self.title, f"{len(self._shown)}/{len(self._rows)}"]
        if self.query_text:
            parts.append(f"filter “{self.query_text}”")
        self.border_title = " · ".join(parts)

    # ---- actions ------------------------------------------------------------------------------

    def action_filter(self) -> None:
        box = self.filter_input
        box.display = True
        self._focus(box)

    def clear_filter(self) -> None:
        with self.filter_input.prevent(Input.Changed):
            self.filter_input.value = ""
        self._close_filter()

    def action_sort(self) -> None:
        current = self.order.column
        nxt = 0 if current is None else (current + 1) % len(self.columns)
        self.sort_by(nxt)

    def action_sort_reverse(self) -> None:
        column = self.order.column if self.order.column is not None else 0
        self.order = SortOrder(column, not self.order.reverse)
        self._render_rows()

    def action_save_csv(self) -> None:
        self.post_message(self.SaveRequested(self))

    def sort_by(self, column: int, reverse: bool | None = None) -> None:
        if reverse is None:
            if column == self.order.column:
                reverse = not self.order.reverse
            else:
                # Numbers read biggest first (most lag on top); names A to Z.
                reverse = self.columns[column].numeric
        self.order = SortOrder(column, reverse)
        self._render_rows()

    def set_query(self, text: str) -> None:
        self.query_text = text.strip()
        self._render_rows()

    # ---- events ---------------------------------------------------------------------------------

    @on(Input.Changed)
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.set_query(event.value)

    def focus_table(self) -> None:
        self._focus(self.table)

    def keep_filter(self) -> None:
        if not self.query_text:
            self.filter_input.display = False
        self._focus(self.table)

    def _close_filter(self) -> None:
        self.set_query("")
        self.filter_input.display = False
        self._focus(self.table)

    def _focus(self, widget: Widget) -> None:
        # At once, not on the next idle (Widget.focus): keys typed right after "/" (a paste, a
        # fast typist, tmux send-keys) must land in the box, not in the table.
        self.screen.set_focus(widget)

    @on(RowTable.HeaderSelected)
    def _header_selected(self, event: RowTable.HeaderSelected) -> None:
        event.stop()
        self.sort_by(event.column)
