"""The real RocketMQ sandbox, once per test session, for every integration test.

The fixture never skips: an integration run without a working sandbox is a failure, and its
message says why (a missing JDK or Maven, a port in use, the tail of a JVM log, ...).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.sandbox.acl import AclOptions, AclSandbox
from console.sandbox.background import (
    Background,
    BackgroundAclSandbox,
    BackgroundLegacySandbox,
    BackgroundSandbox,
)
from console.sandbox.cluster import BROKER_NAMES
from console.sandbox.legacy import LegacyOptions, LegacySandbox
from console.sandbox.ports import free_ports
from console.sandbox.replica import ReplicaOptions, ReplicaSandbox, replica_sandbox
from console.sandbox.runner import Sandbox, SandboxOptions
from console.services.spark_runner import SparkRunner

_HERE = Path(__file__).parent
_measured: dict[str, str] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Everything in this directory needs the sandbox, marked or not.
    for item in items:
        if _HERE in item.path.parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """A seeded two-broker cluster on free ports in a fresh run directory; stopped at the end."""
    options = SandboxOptions(
        run_dir=tmp_path_factory.mktemp("sandbox"), ports=free_ports(BROKER_NAMES)
    )
    background = BackgroundSandbox(options)
    try:
        sb = background.start()
    except Exception as exc:
        background.stop()  # whatever did start is stopped by now; this joins the thread
        pytest.fail(f"the RocketMQ sandbox did not start: {exc}", pytrace=False)
    _measured["start"] = _describe_start(sb)
    _measured["rss"] = ", ".join(f"{n} {kb // 1024} MiB" for n, kb in sorted(sb.rss_kb().items()))
    yield sb
    started = time.monotonic()
    background.stop()
    _measured["teardown"] = f"{time.monotonic() - started:.1f}s"


@pytest.fixture(scope="session")
def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclSandbox]:
    """A separate seeded cluster whose broker authenticates every request (ACL 2.0): a name
    server and one broker, a user with a random password (`acl_cluster.user`), topic, group,
    committed offsets and timed batches in `acl_cluster.seed`; stopped at the end."""
    background = BackgroundAclSandbox(AclOptions(run_dir=tmp_path_factory.mktemp("acl-cluster")))
    started = time.monotonic()
    try:
        acl = background.start()
    except Exception as exc:
        background.stop()
        pytest.fail(f"the ACL cluster did not start: {exc}", pytrace=False)
    _measured["acl start"] = f"{time.monotonic() - started:.1f}s"
    yield acl
    background.stop()


@pytest.fixture(scope="session")
def replica_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplicaSandbox]:
    """A separate cluster of one master and its slave (broker id 1, a JVM of its own), seeded
    (`replica_cluster.seed`) and copied to the slave; its master may be stopped by a test
    without disturbing any other cluster. Stopped at the end."""
    options = ReplicaOptions(run_dir=tmp_path_factory.mktemp("replica-cluster"))
    background = Background(lambda: replica_sandbox(options))
    started = time.monotonic()
    try:
        replica = background.start()
    except Exception as exc:
        background.stop()
        pytest.fail(f"the master/slave cluster did not start: {exc}", pytrace=False)
    _measured["replica start"] = f"{time.monotonic() - started:.1f}s"
    yield replica
    background.stop()


@pytest.fixture(scope="session")
def legacy_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LegacySandbox]:
    """A separate RocketMQ 4.9.7 cluster (a name server and one broker): a group with committed,
    committed-0 and never-committed queues, and one committed below an expired commit log's min
    offset (`legacy_cluster.seed`); stopped at the end."""
    background = BackgroundLegacySandbox(LegacyOptions(run_dir=tmp_path_factory.mktemp("legacy")))
    started = time.monotonic()
    try:
        legacy = background.start()
    except Exception as exc:
        background.stop()
        pytest.fail(f"the RocketMQ 4.9.7 cluster did not start: {exc}", pytrace=False)
    _measured["4.9.7 start"] = f"{time.monotonic() - started:.1f}s"
    yield legacy
    background.stop()


def _describe_start(sb: Sandbox) -> str:
    t = sb.timings
    return (
        f"{t.total:.1f}s (jars {t.fetch:.1f}s, build {t.build:.1f}s, cluster {t.cluster_start:.1f}s"
        f", seed {t.seed:.1f}s, live consumers {t.live_start:.1f}s)"
    )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _measured:
        terminalreporter.section("rocketmq sandbox")
        for key, value in _measured.items():
            terminalreporter.write_line(f"{key}: {value}")


@pytest.fixture(scope="session")
def plan_runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkRunner]:
    """One warm local Spark session for the tests that plan in-process before applying."""
    log = tmp_path_factory.mktemp("plan-spark") / "spark.log"
    with SparkRunner("local[2]", log_path=log) as runner:
        yield runner
