"""The table widget on its own: cursor keys, paging, the header on top, clicks."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult

from console.services.infra.fanout import Cadence
from console.ui.widgets.rowtable import RowTable, TableLayout

LAYOUT = TableLayout((Text("NAME"), Text("N")), (8, 4), (False, True))


class TableApp(App[None]):
    def __init__(self, rows: int) -> None:
        super().__init__()
        self.rows = rows
        self.selected: list[str] = []
        self.headers: list[int] = []

    def compose(self) -> ComposeResult:
        yield RowTable()

    def on_mount(self) -> None:
        table = self.query_one(RowTable)
        keys = [f"r{i:03d}" for i in range(self.rows)]
        table.set_data(LAYOUT, keys, [(Text(k), Text(str(i))) for i, k in enumerate(keys)])
        table.focus()

    def on_row_table_row_selected(self, event: RowTable.RowSelected) -> None:
        self.selected.append(event.key)

    def on_row_table_header_selected(self, event: RowTable.HeaderSelected) -> None:
        self.headers.append(event.column)


async def test_cursor_moves_and_pages_and_the_view_follows() -> None:
    app = TableApp(500)
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(RowTable)
        await pilot.press("down", "down")
        assert table.cursor_key == "r002"
        await pilot.press("pagedown")
        await pilot.pause()
        assert table.cursor_row == 2 + 11  # the screen less the header line
        await pilot.press("end")
        await pilot.pause()
        assert table.cursor_key == "r499"
        assert table.scroll_y == 500 + 1 - 12  # the last row on the last line
        await pilot.press("home")
        await pilot.pause()
        assert (table.cursor_row, table.scroll_y) == (0, 0)
        await pilot.press("up")
        assert table.cursor_row == 0
        await pilot.press("enter")
        await pilot.pause()
        assert app.selected == ["r000"]


async def test_the_header_stays_on_top_and_rows_paint_below_it() -> None:
    app = TableApp(50)
    async with app.run_test(size=(40, 6)) as pilot:
        table = app.query_one(RowTable)
        await pilot.press("end")
        await pilot.pause()
        assert table.render_line(0).text.split() == ["NAME", "N"]
        assert table.render_line(5).text.split() == ["r049", "49"]
        # Numbers right-aligned in their column: NAME is 8 wide, N is 4, one space either side.
        assert table.render_line(5).text[:16] == " r049        49 "


async def test_clicks_move_the_cursor_select_and_sort() -> None:
    app = TableApp(5)
    async with app.run_test(size=(40, 10)) as pilot:
        table = app.query_one(RowTable)
        await pilot.click(RowTable, offset=(2, 3))
        await pilot.pause()
        assert table.cursor_key == "r002"
        await pilot.click(RowTable, offset=(2, 3))
        await pilot.pause()
        assert app.selected == ["r002"]
        await pilot.click(RowTable, offset=(12, 0))
        await pilot.pause()
        assert app.headers == [1]


async def test_new_rows_keep_the_cursor_on_its_key() -> None:
    app = TableApp(5)
    async with app.run_test(size=(40, 10)) as pilot:
        table = app.query_one(RowTable)
        await pilot.press("down", "down")
        keys = ["r004", "r002", "r000"]
        table.set_data(LAYOUT, keys, [(Text(k), Text("0")) for k in keys], cursor_key="r002")
        assert table.cursor_key == "r002"
        table.set_data(LAYOUT, ["x"], [(Text("x"), Text("0"))], cursor_key="r002")
        assert table.cursor_key == "x"
        table.set_data(LAYOUT, [], [], cursor_key="x")
        assert table.cursor_key is None


def test_cadence_passes_first_last_and_one_per_interval() -> None:
    now = [0.0]
    seen: list[tuple[int, int]] = []
    step = Cadence(lambda d, t: seen.append((d, t)), interval=1.0, clock=lambda: now[0])
    for done in range(11):
        now[0] = done * 0.3
        step(done, 10)
    assert seen == [(0, 10), (4, 10), (8, 10), (10, 10)]
