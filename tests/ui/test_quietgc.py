"""Full collections run while the keyboard is quiet, and at the latest after `longest_s`."""

from __future__ import annotations

import gc

from console.ui.quietgc import QuietCollector

from .fakes import fake_app
from .helpers import settle


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def collector(clock: Clock, runs: list[float]) -> QuietCollector:
    return QuietCollector(
        quiet_s=1.0,
        every_s=5.0,
        longest_s=60.0,
        clock=clock,
        collect=lambda: runs.append(clock.now),
    )


def test_no_full_collection_while_keys_keep_coming() -> None:
    clock, runs = Clock(), []
    c = collector(clock, runs)
    for _ in range(100):  # 50 s of a key every half second
        clock.now += 0.5
        c.key_seen()
        c.tick()
    assert runs == []


def test_a_quiet_keyboard_gets_one_every_few_seconds() -> None:
    clock, runs = Clock(), []
    c = collector(clock, runs)
    clock.now += 0.5
    c.key_seen()
    clock.now += 0.9
    assert not c.tick()  # quiet for 0.9 s only, and 1.4 s since the last one
    clock.now += 4.0
    assert c.tick()  # quiet, 5.4 s since
    clock.now += 1.0
    assert not c.tick()  # only 1 s since the last one
    clock.now += 4.0
    assert c.tick()
    assert runs == [1005.4, 1010.4]


def test_a_key_held_down_for_a_minute_still_gets_one() -> None:
    clock, runs = Clock(), []
    c = collector(clock, runs)
    for _ in range(1300):  # 65 s of keys every 50 ms
        clock.now += 0.05
        c.key_seen()
        c.tick()
    assert len(runs) == 1
    assert 1059.9 < runs[0] < 1060.1


def test_install_stops_automatic_full_collections_and_uninstall_restores() -> None:
    before = gc.get_threshold()
    c = QuietCollector()
    c.install()
    try:
        gen0, gen1, gen2 = gc.get_threshold()
        assert (gen0, gen1) == before[:2]
        assert gen2 > 1_000_000
    finally:
        c.uninstall()
    assert gc.get_threshold() == before


async def test_the_console_takes_over_full_collections_while_it_runs() -> None:
    before = gc.get_threshold()
    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert gc.get_threshold()[2] > 1_000_000
    assert gc.get_threshold() == before
