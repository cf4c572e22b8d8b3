"""A table the way every console view shows one: filter with `/`, sort by any column, save as CSV.

Rows come in as `tablemodel.Row`s (raw values for sorting and CSV, text for show); the DataTable
inside only ever shows the arranged (filtered, sorted) rows. A refresh whose rows keep their order
updates changed cells in place, so the cursor and the scroll position stay where the operator left
them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual import on
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Input

from console.ui.widgets.tablemodel import Column, Row, SortOrder, arrange


class FilterInput(Input):
    BINDINGS = [
        Binding("escape", "cancel", "Clear filter", id="filter_clear", show=False),
        Binding("enter,down", "done", "Keep filter", id="filter_keep", show=False),
    ]

    class Cancelled(Message):
        pass

    class Finished(Message):
        pass

    def action_cancel(self) -> None:
        self.value = ""
        self.post_message(self.Cancelled())

    def action_done(self) -> None:
        self.post_message(self.Finished())


class DataView(Vertical):
    BINDINGS = [
        Binding("slash", "filter", "Filter", id="filter"),
        Binding("s", "sort", "Sort", id="sort"),
        Binding("S", "sort_reverse", "Reverse sort", id="sort_reverse", show=False),
        Binding("ctrl+s", "save_csv", "Save CSV", id="save_csv", show=False),
        Binding("escape", "clear_filter", "Clear filter", id="clear_filter", show=False),
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
        self._shown_order: SortOrder | None = None
        self._ready = False

    def compose(self) -> ComposeResult:
        yield FilterInput(placeholder="filter: words to match, esc clears")
        yield DataTable(cursor_type="row", zebra_stripes=False)

    def on_mount(self) -> None:
        self.filter_input.display = False
        self._ready = True
        self._render_rows(force=True)

    @property
    def table(self) -> DataTable[Any]:
        return self.query_one(DataTable)

    @property
    def filter_input(self) -> FilterInput:
        return self.query_one(FilterInput)

    # ---- data ----------------------------------------------------------------------------------

    @property
    def rows(self) -> tuple[Row, ...]:
        return self._rows

    @property
    def shown(self) -> list[Row]:
        return list(self._shown)

    def set_rows(self, rows: Sequence[Row], *, force: bool = False) -> None:
        rows = tuple(rows)
        if rows == self._rows and not force:
            return
        self._rows = rows
        self._render_rows(force=force)

    @property
    def current_key(self) -> str | None:
        table = self.table
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return str(key) if key is not None else None

    def current_row(self) -> Row | None:
        key = self.current_key
        return next((r for r in self._shown if r.key == key), None)

    def export(self) -> tuple[list[str], list[list[Any]]]:
        """Headers and raw values of the rows as shown (filtered and sorted)."""
        headers = [c.export_title for c in self.columns]
        return headers, [[c.value for c in r.cells] for r in self._shown]

    # ---- rendering ------------------------------------------------------------------------------

    def _render_rows(self, *, force: bool = False) -> None:
        if not self._ready:
            return  # on_mount renders what was set before
        shown = arrange(self._rows, self.query_text, self.order)
        table = self.table
        same_keys = [r.key for r in shown] == [r.key for r in self._shown]
        if same_keys and self._shown_order == self.order and table.columns and not force:
            for old, new in zip(self._shown, shown, strict=True):
                if old == new:
                    continue
                for col, a, b in zip(self.columns, old.cells, new.cells, strict=True):
                    if a != b:
                        table.update_cell(new.key, col.key, self._cell_text(col, b.text))
            self._shown = shown
            self._update_title()
            return
        current = self.current_key
        table.clear(columns=True)
        for i, col in enumerate(self.columns):
            table.add_column(self._header(i, col), key=col.key)
        for r in shown:
            cells = zip(self.columns, r.cells, strict=True)
            table.add_row(*(self._cell_text(c, cell.text) for c, cell in cells), key=r.key)
        self._shown = shown
        self._shown_order = self.order
        keys = [r.key for r in shown]
        if current in keys:
            table.move_cursor(row=keys.index(current), animate=False, scroll=True)
        self._update_title()

    def _header(self, i: int, col: Column) -> Text:
        label = col.label
        if self.order.column == i:
            label += "▼" if self.order.reverse else "▲"
        return Text(label, justify="right" if col.numeric else "left")

    @staticmethod
    def _cell_text(col: Column, text: str | Text) -> Text:
        # Never a str: DataTable reads str cells as markup, and names may contain "[".
        out = text.copy() if isinstance(text, Text) else Text(text)
        if col.numeric:
            out.justify = "right"
        return out

    def _update_title(self) -> None:
        parts = [self.title, f"{len(self._shown)}/{len(self._rows)}"]
        if self.query_text:
            parts.append(f"filter “{self.query_text}”")
        self.border_title = " · ".join(parts)

    # ---- actions ------------------------------------------------------------------------------

    def action_filter(self) -> None:
        box = self.filter_input
        box.display = True
        box.focus()

    def action_clear_filter(self) -> None:
        if not self.query_text:
            raise SkipAction()  # nothing to clear: let esc go back
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

    @on(FilterInput.Cancelled)
    def _filter_cancelled(self, event: FilterInput.Cancelled) -> None:
        event.stop()
        self._close_filter()

    @on(FilterInput.Finished)
    @on(Input.Submitted)
    def _filter_finished(self, event: Message) -> None:
        event.stop()
        if not self.query_text:
            self.filter_input.display = False
        self.table.focus()

    def _close_filter(self) -> None:
        self.set_query("")
        self.filter_input.display = False
        self.table.focus()

    @on(DataTable.HeaderSelected)
    def _header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.sort_by(event.column_index)
