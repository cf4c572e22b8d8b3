"""`/` filters any table, `s`/`S` and header clicks sort any column, the cursor stays put."""

from __future__ import annotations

from console.ui.widgets.dataview import FilterInput
from console.ui.widgets.tablemodel import Cell, Row, SortOrder, arrange, cell

from .fakes import fake_app
from .helpers import keys, settle, shown, view


async def open_groups(pilot: object) -> None:
    await settle(pilot)  # type: ignore[arg-type]
    await pilot.press("g")  # type: ignore[attr-defined]
    await settle(pilot)  # type: ignore[arg-type]


async def test_slash_filters_and_esc_clears() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_groups(pilot)
        await pilot.press("slash", *"bil")
        await pilot.pause()
        assert isinstance(app.focused, FilterInput)
        assert keys(app) == ["billing"]
        assert view(app).border_title == "groups · 1/4 · filter “bil”"
        await pilot.press("enter")  # keep the filter, back to the table
        await pilot.pause()
        assert keys(app) == ["billing"]
        assert app.focused is view(app).table
        await pilot.press("escape")  # first esc clears the filter ...
        await pilot.pause()
        assert keys(app) == ["audit", "billing", "search", "shadow"]
        await pilot.press("escape")  # ... the next one goes back
        await settle(pilot)
        assert app.screen.crumb == "prod"


async def test_filter_matches_every_word_in_any_column() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_groups(pilot)
        await pilot.press("slash", *"offline push")
        await pilot.pause()
        assert keys(app) == ["audit"]
        await pilot.press("escape")  # esc in the box clears it
        await pilot.pause()
        assert len(keys(app)) == 4


async def test_filter_survives_a_refresh() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_groups(pilot)
        await pilot.press("slash", *"sea", "enter", "r")
        await settle(pilot)
        assert keys(app) == ["search"]


async def test_s_sorts_by_the_next_column_and_capital_s_reverses() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_groups(pilot)
        await pilot.press("s")  # ST: worst first when reversed; first press sorts ascending
        await pilot.pause()
        assert view(app).order == SortOrder(0, False)
        await pilot.press("s")  # GROUP, A to Z
        await pilot.pause()
        assert view(app).order == SortOrder(1, False)
        assert keys(app) == ["audit", "billing", "search", "shadow"]
        await pilot.press("S")
        await pilot.pause()
        assert keys(app) == ["shadow", "search", "billing", "audit"]
        await pilot.press("s")  # LAG: biggest first, unknown last
        await pilot.pause()
        assert [r["lag"] for r in shown(app)] == ["1490", "120+?", "0", "unknown"]


async def test_header_click_sorts_and_a_second_click_reverses() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_groups(pilot)
        table = view(app).table
        await pilot.click(table, offset=(8, 0))  # GROUP header
        await pilot.pause()
        assert keys(app) == ["audit", "billing", "search", "shadow"]
        await pilot.click(table, offset=(8, 0))
        await pilot.pause()
        assert keys(app) == ["shadow", "search", "billing", "audit"]
        assert table.layout_spec.headers[1].plain == "GROUP▼"


async def test_the_cursor_stays_on_its_row_across_a_refresh() -> None:
    app, fake = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_groups(pilot)
        await pilot.press("down", "down")
        await pilot.pause()
        assert view(app).current_key == "search"
        fake.advance()
        await pilot.press("r")
        await settle(pilot)
        assert view(app).current_key == "search"


async def test_any_table_filters_the_queue_table_too() -> None:
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_groups(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)
        await pilot.press("slash", *"retry")
        await pilot.pause()
        assert keys(app, "#queues") == ["%RETRY%billing|broker-a|0"]


# ---- the arrangement itself, without widgets ---------------------------------------------------


def _rows() -> list[Row]:
    def r(key: str, n: int | None) -> Row:
        return Row(key, (cell(key), Cell(n, "?" if n is None else str(n))))

    return [r("b", 2), r("a", None), r("c", 10)]


def test_unknown_values_sort_last_both_ways() -> None:
    assert [r.key for r in arrange(_rows(), "", SortOrder(1, False))] == ["b", "c", "a"]
    assert [r.key for r in arrange(_rows(), "", SortOrder(1, True))] == ["c", "b", "a"]


def test_no_sort_keeps_the_source_order_and_filter_is_case_blind() -> None:
    assert [r.key for r in arrange(_rows(), "", SortOrder())] == ["b", "a", "c"]
    assert [r.key for r in arrange(_rows(), "C", SortOrder())] == ["c"]
