from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _plain_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """No developer config, theme or NO_COLOR leaks into the console under test, and nothing
    the console keeps (the lag history of every refresh, ...) lands in the developer's own
    workspace: a config without `workspace` finds the default one under this HOME."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    config_dir = tmp_path_factory.mktemp("config")
    monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config_dir / "config.yaml"))
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    return
