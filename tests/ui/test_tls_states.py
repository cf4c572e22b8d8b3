"""TLS in the console: a broker refusing our TLS is a configuration problem, named as such and
never counted down; a cluster whose TLS is not verified says so in its banner, like read-only.
(The same against real brokers: tests/integration/test_tls.py.)"""

from __future__ import annotations

from dataclasses import replace

from console.config import ClusterConfig, Config, TlsRef
from console.domain.gaps import Why
from console.rocketmq.errors import TlsCause, TlsRefused
from tests.ui.fakes import PROD, FakeCluster, fake_app
from tests.ui.helpers import banner, screen_lines, settle, shown, status, text_of


def refuse_tls(fake: FakeCluster, broker: str) -> TlsRefused:
    """The broker drops our connection: it requires a client certificate we do not have."""
    state = next(b for b in fake.brokers if b.name == broker)
    refused = TlsRefused(
        state.addr,
        TlsCause.CLIENT_CERTIFICATE,
        f"{state.addr} requires a TLS client certificate (mutual TLS; alert: bad certificate): "
        "set `tls.cert` and `tls.key`",
    )
    fake.brokers = [
        replace(b, up=False, error=str(refused), why=Why.TLS) if b.name == broker else b
        for b in fake.brokers
    ]
    return refused


async def test_a_broker_refusing_our_tls_is_named_not_down_at_80x24() -> None:
    app, fake = fake_app()
    refuse_tls(fake, "broker-a")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        rows = {r["broker"]: r for r in shown(app)}
        assert rows["broker-a"]["state"] == "TLS"
        assert rows["broker-b"]["state"] == "UP"
        assert "TLS REFUSED (check tls: in the config): broker-a" in status(app)
        assert "DOWN" not in status(app)
        assert text_of(app, "#totals").startswith(
            "2 brokers (1 refuse our TLS: check tls: in the config)"
        )
        lines = screen_lines(app)
        assert all(len(line) <= 80 for line in lines)
        text = " ".join(" ".join(line.split()) for line in lines)
        assert "requires a TLS client certificate (mutual TLS; alert: bad certificate)" in text


async def test_unverified_tls_is_in_the_banner_like_read_only() -> None:
    unverified = ClusterConfig("edge", ("10.2.0.9:9876",), tls=TlsRef(verify=False))
    verified = replace(PROD, tls=TlsRef(ca="/etc/rmq/ca.pem"))
    config = Config(clusters=(unverified, verified), refresh_interval=3600, theme="rmq-dark")
    app, _ = fake_app(open_cluster=unverified, config=config)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "UNVERIFIED TLS" in banner(app)
        assert app.screen.query_one("#banner").has_class("-unverified-tls")
    app, _ = fake_app(open_cluster=verified, config=config)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "UNVERIFIED" not in banner(app)
        assert "READ-ONLY" in banner(app)
