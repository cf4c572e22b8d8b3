"""What the operator sees, at the sizes that matter: 80x24 (SSH) and 120x40.

Fake cluster, fixed clock, fixed theme: a changed picture is a changed console. Review a change
with `pytest tests/ui/test_snapshots.py --snapshot-update` and look at the SVGs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from textual.pilot import Pilot

from console.config import Config

from .fakes import PROD, STAGING, fake_app
from .helpers import settle

SnapCompare = Callable[..., bool]
SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


def keys(*presses: str) -> Callable[[Pilot[Any]], Awaitable[None]]:
    async def run(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        for key in presses:
            await pilot.press(key)
            await settle(pilot)

    return run


@pytest.mark.parametrize("size", SIZES)
def test_overview(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    app, _ = fake_app()
    assert snap_compare(app, terminal_size=size, run_before=keys())


@pytest.mark.parametrize("size", SIZES)
def test_groups(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    app, _ = fake_app()
    assert snap_compare(app, terminal_size=size, run_before=keys("g"))


@pytest.mark.parametrize("size", SIZES)
def test_group_after_three_refreshes(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    app, fake = fake_app()

    async def run(pilot: Pilot[Any]) -> None:
        await keys("g", "down", "enter")(pilot)
        for max_offset in (1300, 1400):
            fake.advance()
            fake.commit("billing", "orders", "broker-a", 0, max_offset=max_offset)
            await pilot.press("r")
            await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run)


def test_clusters(snap_compare: SnapCompare) -> None:
    app, _ = fake_app(open_cluster=None)
    assert snap_compare(app, terminal_size=(80, 24), run_before=keys())


def test_broker_down_in_high_contrast(snap_compare: SnapCompare) -> None:
    cfg = Config(clusters=(PROD, STAGING), refresh_interval=3600, theme="rmq-contrast")
    app, fake = fake_app(config=cfg)
    fake.take_down("broker-b")
    assert snap_compare(app, terminal_size=(80, 24), run_before=keys())


def test_help(snap_compare: SnapCompare) -> None:
    app, _ = fake_app()
    assert snap_compare(app, terminal_size=(80, 24), run_before=keys("g", "question_mark"))
