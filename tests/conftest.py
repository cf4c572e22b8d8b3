"""Fixtures shared by the Spark and the integration suites, and the property tests' settings."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.connect import (
    SHARED_ENV,
    ConnectServer,
    connect_server,
    joined_server,
    use_quick_spark_jvms,
)

use_quick_spark_jvms()  # for every Spark JVM the session starts, or a CLI it runs

# Property tests check what holds, not how fast: hypothesis's default 200 ms per example is a
# timing assertion that a loaded machine fails (DeadlineExceeded) with nothing wrong.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


@pytest.fixture(scope="session")
def connect(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    """One Spark Connect server for the whole session (pyspark's own, through `spark up`): the
    one `make test`'s streams share, or one of this session's own."""
    tmp = tmp_path_factory.mktemp("spark-connect")
    shared = os.environ.get(SHARED_ENV)
    with joined_server(Path(shared), tmp) if shared else connect_server(tmp) as server:
        yield server
