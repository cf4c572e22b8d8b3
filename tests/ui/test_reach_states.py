"""A cluster reached through a SOCKS proxy or an address map says so in its banner, and its
overview shows each broker's own address (what mqadmin shows) with the one it is reached at
beside it where they differ. (Against a real broker: tests/integration/test_other_network.py.)"""

from __future__ import annotations

from dataclasses import replace

from console.config import ClusterConfig, Config
from tests.ui.fakes import fake_app
from tests.ui.helpers import banner, screen_lines, settle, shown


async def test_the_banner_and_the_overview_say_how_the_cluster_is_reached() -> None:
    far = ClusterConfig(
        "far",
        ("127.0.0.1:9876",),
        address_map=(("10.1.2.3", "127.0.0.1"),),
        socks="127.0.0.1:1080",
    )
    config = Config(clusters=(far,), refresh_interval=3600, theme="rmq-dark")
    app, fake = fake_app(open_cluster=far, config=config)
    first = fake.brokers[0]
    fake.brokers = [replace(first, reached="127.0.0.1:10911"), *fake.brokers[1:]]
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "via SOCKS 127.0.0.1:1080, addresses mapped" in banner(app)
        rows = {r["broker"]: r for r in shown(app)}
        assert rows[first.name]["addr"] == f"{first.addr} → 127.0.0.1:10911"
        others = [b for b in fake.brokers[1:] if b.broker_id == 0]
        assert all(rows[b.name]["addr"] == b.addr for b in others)
        assert all(len(line) <= 80 for line in screen_lines(app))


async def test_a_cluster_reached_directly_says_nothing_of_it() -> None:
    near = ClusterConfig("near", ("127.0.0.1:9876",))
    config = Config(clusters=(near,), refresh_interval=3600, theme="rmq-dark")
    app, _ = fake_app(open_cluster=near, config=config)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "SOCKS" not in banner(app)
        assert "mapped" not in banner(app)
