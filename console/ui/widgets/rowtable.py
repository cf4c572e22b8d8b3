"""A read-only table that renders only the lines on screen.

Textual's DataTable does bookkeeping per row when rows are added (keys, heights, measured widths),
which for the 500-group list cost more than a key press may take, and a filter keystroke adds all
rows again. Here the rows are a plain list: setting them costs a list assignment, and painting
costs the visible lines only. The header stays on the first line; the cursor is a row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

PADDING = 1


@dataclass(frozen=True, slots=True)
class TableLayout:
    headers: tuple[Text, ...]
    widths: tuple[int, ...]
    right: tuple[bool, ...]  # right-justified (numeric) columns

    @property
    def total_width(self) -> int:
        return sum(w + 2 * PADDING for w in self.widths)


class RowTable(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {"rowtable--header", "rowtable--cursor"}
    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "First row", show=False),
        Binding("end", "jump(-1)", "Last row", show=False),
        Binding("left", "scroll_cells(-8)", "Scroll left", show=False),
        Binding("right", "scroll_cells(8)", "Scroll right", show=False),
        Binding("enter", "select", "Open", id="open", show=False),
    ]

    cursor_row = reactive(0, always_update=True, init=False)

    class RowSelected(Message):
        def __init__(self, table: RowTable, key: str) -> None:
            super().__init__()
            self.table = table
            self.key = key

        @property
        def control(self) -> RowTable:
            return self.table

    class CursorMoved(Message):
        """The cursor is on another row (moved by the operator, not by new data)."""

        def __init__(self, table: RowTable, key: str | None) -> None:
            super().__init__()
            self.table = table
            self.key = key

        @property
        def control(self) -> RowTable:
            return self.table

    class HeaderSelected(Message):
        def __init__(self, table: RowTable, column: int) -> None:
            super().__init__()
            self.table = table
            self.column = column

        @property
        def control(self) -> RowTable:
            return self.table

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.layout_spec = TableLayout((), (), ())
        self.keys: list[str] = []
        self.cells: list[Sequence[str | Text]] = []
        self._strips: dict[tuple[int, bool], Strip] = {}

    # ---- data ----------------------------------------------------------------------------------

    def set_data(
        self,
        layout: TableLayout,
        keys: Sequence[str],
        cells: Sequence[Sequence[str | Text]],
        *,
        cursor_key: str | None = None,
    ) -> None:
        """Replace the rows; the cursor stays on `cursor_key` when that row is still there."""
        self.layout_spec = layout
        self.keys = list(keys)
        self.cells = list(cells)
        self._strips.clear()
        self.virtual_size = Size(layout.total_width, len(self.keys) + 1)
        if cursor_key is not None and cursor_key in self.keys:
            row = self.keys.index(cursor_key)
        else:
            row = min(self.cursor_row, max(len(self.keys) - 1, 0))
        self.set_reactive(RowTable.cursor_row, row)
        self._scroll_to_cursor()
        self.refresh()

    @property
    def cursor_key(self) -> str | None:
        return self.keys[self.cursor_row] if self.keys else None

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()

    def on_focus(self) -> None:
        # The cursor's colours follow focus (see the CSS): repaint with the other ones.
        self._strips.clear()
        self.refresh()

    def on_blur(self) -> None:
        self._strips.clear()
        self.refresh()

    # ---- cursor and scrolling --------------------------------------------------------------------

    def watch_cursor_row(self, old: int, new: int) -> None:
        self._scroll_to_cursor()
        self.refresh()
        if old != new:
            self.post_message(self.CursorMoved(self, self.cursor_key))

    def _visible_rows(self) -> int:
        return max(self.scrollable_content_region.height - 1, 1)

    def _scroll_to_cursor(self) -> None:
        top = int(self.scroll_y)
        visible = self._visible_rows()
        row = self.cursor_row
        if row < top:
            self.scroll_to(y=row, animate=False)
        elif row >= top + visible:
            self.scroll_to(y=row - visible + 1, animate=False)

    def _move_to(self, row: int) -> None:
        if self.keys:
            self.cursor_row = max(0, min(row, len(self.keys) - 1))

    def action_cursor(self, delta: int) -> None:
        self._move_to(self.cursor_row + delta)

    def action_page(self, direction: int) -> None:
        self._move_to(self.cursor_row + direction * self._visible_rows())

    def action_jump(self, row: int) -> None:
        self._move_to(row if row >= 0 else len(self.keys) - 1)

    def action_scroll_cells(self, delta: int) -> None:
        self.scroll_to(x=self.scroll_x + delta, animate=False)

    def action_select(self) -> None:
        key = self.cursor_key
        if key is not None:
            self.post_message(self.RowSelected(self, key))

    def on_click(self, event: events.Click) -> None:
        if event.y == 0:
            column = self._column_at(event.x + int(self.scroll_x))
            if column is not None:
                self.post_message(self.HeaderSelected(self, column))
            return
        row = int(self.scroll_y) + event.y - 1
        if 0 <= row < len(self.keys):
            if row == self.cursor_row:
                self.action_select()
            else:
                self.cursor_row = row

    def _column_at(self, x: int) -> int | None:
        left = 0
        for i, w in enumerate(self.layout_spec.widths):
            left += w + 2 * PADDING
            if x < left:
                return i
        return None

    # ---- painting --------------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        scroll_x = int(self.scroll_x)
        base = self.rich_style
        if y == 0:
            strip = self._header_strip(base)
        else:
            row = int(self.scroll_y) + y - 1
            if row >= len(self.keys):
                return Strip.blank(width, base)
            strip = self._row_strip(row, row == self.cursor_row, base)
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def _header_strip(self, base: Style) -> Strip:
        key = (-1, False)
        if key not in self._strips:
            style = base + self.get_component_rich_style("rowtable--header")
            self._strips[key] = self._strip(self.layout_spec.headers, style, keep_spans=True)
        return self._strips[key]

    def _row_strip(self, row: int, cursor: bool, base: Style) -> Strip:
        key = (row, cursor)
        if key not in self._strips:
            if cursor:
                style = base + self.get_component_rich_style("rowtable--cursor")
                # A cursor row is one colour: coloured words would vanish on its background.
                self._strips[key] = self._strip(self.cells[row], style, keep_spans=False)
            else:
                self._strips[key] = self._strip(self.cells[row], base, keep_spans=True)
        return self._strips[key]

    def _strip(self, cells: Sequence[str | Text], style: Style, *, keep_spans: bool) -> Strip:
        console = self.app.console
        segments: list[Segment] = []
        pad = " " * PADDING
        spec = self.layout_spec
        for text, width, right in zip(cells, spec.widths, spec.right, strict=False):
            # Text() never reads markup: a group named "[x]" shows as "[x]".
            if isinstance(text, str):
                cell = Text(text)
            else:
                cell = text.copy() if keep_spans else Text(text.plain)
            cell.truncate(width, overflow="ellipsis")
            gap = " " * (width - cell.cell_len)
            segments.append(Segment(pad + (gap if right else ""), style))
            segments.extend(
                Segment(s.text, style + s.style if s.style else style) for s in cell.render(console)
            )
            segments.append(Segment(("" if right else gap) + pad, style))
        return Strip(segments, spec.total_width)
