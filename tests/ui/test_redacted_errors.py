"""The error dialog passes its text through the secrets backstop."""

from __future__ import annotations

import secrets

from console.redact import MASK, hide
from console.rocketmq.errors import BrokerError
from console.ui.screens.dialogs import ErrorDialog

from .fakes import FakeCluster, fake_app
from .helpers import settle


async def test_a_secret_in_an_error_is_masked_in_the_dialog() -> None:
    value = secrets.token_urlsafe(12)
    hide(value)
    # A broker that echoed what it was sent, the way no broker should.
    echoed = BrokerError("10.0.0.1:10911", 12, 16, f"bad signature for secret {value}")
    app, _ = fake_app(FakeCluster(failures={"brokers": echoed}))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ErrorDialog)
        assert dialog.message.endswith(f"bad signature for secret {MASK}")
        assert value not in dialog.message
