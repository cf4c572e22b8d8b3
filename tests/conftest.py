"""Fixtures shared by the Spark and the integration suites."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.connect import ConnectServer, connect_server


@pytest.fixture(scope="session")
def connect(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    """One Spark Connect server for the whole session (pyspark's own, through `spark up`)."""
    with connect_server(tmp_path_factory.mktemp("spark-connect")) as server:
        yield server
