"""Fixtures shared by the Spark and the integration suites, and the property tests' settings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import settings

from tests.connect import ConnectServer, connect_server

# Property tests check what holds, not how fast: hypothesis's default 200 ms per example is a
# timing assertion that a loaded machine fails (DeadlineExceeded) with nothing wrong.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


@pytest.fixture(scope="session")
def connect(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    """One Spark Connect server for the whole session (pyspark's own, through `spark up`)."""
    with connect_server(tmp_path_factory.mktemp("spark-connect")) as server:
        yield server
