"""The real RocketMQ sandbox, once per test session, for every integration test.

The fixture never skips: an integration run without a working sandbox is a failure, and its
message says why (a missing JDK or Maven, a port in use, the tail of a JVM log, ...).

The separate clusters whose start is mostly waiting (the 4.9.7 broker's commit logs expiring,
the slave catching up with its master) are begun as the session starts, when a selected test
needs them (tests/streams.py runs their files first). Each cluster is stopped, in the
background, once the last test of the session that takes it has torn down; what is still
running at the session's end is stopped then, all at once.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from console.locations import CACHE_ENV
from console.sandbox.acl import AclOptions, AclSandbox
from console.sandbox.background import (
    Background,
    BackgroundAclSandbox,
    BackgroundLegacySandbox,
    BackgroundSandbox,
)
from console.sandbox.cluster import BROKER_NAMES
from console.sandbox.controller_cluster import (
    ControllerOptions,
    ControllerSandbox,
    controller_sandbox,
)
from console.sandbox.dledger_cluster import DLedgerOptions, DLedgerSandbox, dledger_sandbox
from console.sandbox.far import FarOptions, FarSandbox, far_sandbox
from console.sandbox.legacy import LegacyOptions, LegacySandbox
from console.sandbox.ports import free_ports
from console.sandbox.replica import ReplicaOptions, ReplicaSandbox, replica_sandbox
from console.sandbox.runner import Sandbox, SandboxOptions
from console.services.infra.spark_runner import SparkRunner, close_shared_runner, shared_runner
from tests.connect import ConnectServer
from tests.streams import BEGUN_EARLY
from tests.support.releases import NEWEST_RELEASE
from tests.support.terminal import Tmux

#: The master the UI tests' consoles plan on: their warm session is `plan_runner`'s.
CONSOLE_SPARK_MASTER = "local[2]"

_HERE = Path(__file__).parent
#: How long a cluster of the suite may take to start. The sandbox's own 120 s is enough for an
#: operator's machine; `make test` starts its clusters while three more pytest sessions start
#: theirs on the same two cores (load 18-20), and a proxy given what was left of 120 s (85 s)
#: once failed to serve in time. A healthy start waits no longer for it.
START_BUDGET_S = 300.0
_measured: dict[str, str] = {}
#: Clusters begun ahead of the tests that use them, by fixture name.
_early: dict[str, Background[Any]] = {}
#: Every cluster started in this session and still running, by fixture name: stopped after
#: the last test that takes it (`pytest_runtest_teardown`), or together at the session's end.
_started: dict[str, Background[Any]] = {}
#: Clusters being stopped after their last test: the session's end waits for them.
_retiring: list[Future[None]] = []
_stopper = ThreadPoolExecutor(thread_name_prefix="retire-cluster")
_LAST_TAKERS = pytest.StashKey[dict[str, str]]()


@pytest.fixture(scope="session", autouse=True)
def _clusters(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    wanted = {n for item in request.session.items for n in getattr(item, "fixturenames", ())}
    makers: dict[str, Callable[[], Background[Any]]] = {
        "legacy_cluster": lambda: BackgroundLegacySandbox(_legacy_options(tmp_path_factory)),
        "replica_cluster": lambda: Background(
            functools.partial(replica_sandbox, _replica_options(tmp_path_factory))
        ),
        "proxy_cluster": lambda: BackgroundSandbox(_proxy_options(tmp_path_factory)),
        "controller_cluster": lambda: Background(
            functools.partial(controller_sandbox, _controller_options(tmp_path_factory))
        ),
    }
    assert makers.keys() == BEGUN_EARLY
    for name in sorted(BEGUN_EARLY & wanted):
        _early[name] = makers[name]()
    for background in _early.values():
        background.begin()
    yield
    # Each JVM takes seconds to shut down cleanly: one cluster after another was most of a
    # minute at the end of every run.
    everything = [*_started.values(), *_early.values()]
    _started.clear()
    started = time.monotonic()
    with ThreadPoolExecutor(max(1, len(everything))) as pool:
        stops = [pool.submit(b.stop) for b in everything]
    _measured["teardown"] = f"{time.monotonic() - started:.1f}s ({len(everything)} clusters)"
    _stopper.shutdown()
    for stop in [*_retiring, *stops]:
        stop.result()  # a cluster that failed to stop fails the session


def _last_takers(session: pytest.Session) -> dict[str, str]:
    """The last test of the session to take each cluster (directly or through a fixture), by
    fixture name."""
    last: dict[str, str] = {}
    for item in session.items:
        for name in getattr(item, "fixturenames", ()):
            last[name] = item.nodeid
    return last


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """A cluster no test left in the session takes is stopped as soon as the test that took it
    last has torn down, in the background: left running to the end of a stream, its brokers,
    consumers and trickle keep taking the two cores every stream shares (the proxy cluster
    alone some 20 % of a core, for the ten minutes the newest release's tests take after it)."""
    try:
        return (yield)
    finally:
        stash = item.session.stash
        if _LAST_TAKERS not in stash:
            stash[_LAST_TAKERS] = _last_takers(item.session)
        last = stash[_LAST_TAKERS]
        for name in [n for n in _started if last.get(n) == item.nodeid]:
            _retiring.append(_stopper.submit(_started.pop(name).stop))
            _measured[f"{name} stopped"] = f"after {item.nodeid}"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Everything in this directory needs the sandbox, marked or not.
    for item in items:
        if _HERE in item.path.parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    """A seeded two-broker cluster on free ports in a fresh run directory; stopped at the end."""
    options = SandboxOptions(
        run_dir=tmp_path_factory.mktemp("sandbox"),
        ports=free_ports(BROKER_NAMES),
        start_timeout=START_BUDGET_S,
    )
    background = BackgroundSandbox(options)
    try:
        sb = background.start()
    except Exception as exc:
        background.stop()  # whatever did start is stopped by now; this joins the thread
        pytest.fail(f"the RocketMQ sandbox did not start: {exc}", pytrace=False)
    _started["sandbox"] = background
    _measured["start"] = _describe_start(sb)
    _measured["rss"] = ", ".join(f"{n} {kb // 1024} MiB" for n, kb in sorted(sb.rss_kb().items()))
    return sb


@pytest.fixture(scope="session")
def newest_cluster(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    """A second seeded two-broker cluster, the main sandbox's scenario on the newest release
    (NEWEST_RELEASE) with its own proxy of that release, whose every server enforces mutual
    TLS with a CA of its own (`newest_cluster.tls`: the config's `tls:`; the proxy's gRPC port
    takes TLS without a client certificate). Half moved to RocksDB, as a rolling migration
    leaves a cluster: broker-b keeps consumer offsets in RocksDB (configManagerVersion=v2),
    broker-a in its JSON file, where alone 5.5.0's brokers count a lite group's lag; so the lite
    scenario's parent topic lives on broker-a (console.sandbox.lite_scenario:
    `newest_cluster.lite`, a lite producer and LitePushConsumer through the proxy). One cluster
    for the newest release, TLS, the RocksDB store and lite topics, not four. Started when its
    first test runs, not with the session: its consumers and trickle keep some 17 % of a core
    busy while it runs, which the other streams would pay for from the start. Stopped at the
    end."""
    options = SandboxOptions(
        run_dir=tmp_path_factory.mktemp("newest"),
        ports=free_ports(BROKER_NAMES, proxy=True),
        version=NEWEST_RELEASE,
        mutual_tls=True,
        offset_store_of={"broker-b": "rocksdb"},
        proxy=True,
        pop=False,
        lite_brokers=("broker-a",),
        start_timeout=START_BUDGET_S,
    )
    background = BackgroundSandbox(options)
    try:
        newest: Sandbox = background.start()
    except Exception as exc:
        background.stop()
        pytest.fail(f"the {NEWEST_RELEASE} TLS cluster did not start: {exc}", pytrace=False)
    _started["newest_cluster"] = background
    _measured[f"{NEWEST_RELEASE} TLS start"] = _describe_start(newest)
    return newest


@pytest.fixture(scope="session")
def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> AclSandbox:
    """A separate seeded cluster whose broker authenticates every request (ACL 2.0): a name
    server and one broker, a user with a random password (`acl_cluster.user`), topic, group,
    committed offsets and timed batches in `acl_cluster.seed`; stopped at the end."""
    background = BackgroundAclSandbox(
        AclOptions(run_dir=tmp_path_factory.mktemp("acl-cluster"), start_timeout=START_BUDGET_S)
    )
    started = time.monotonic()
    try:
        acl = background.start()
    except Exception as exc:
        background.stop()
        pytest.fail(f"the ACL cluster did not start: {exc}", pytrace=False)
    _started["acl_cluster"] = background
    _measured["acl start"] = f"{time.monotonic() - started:.1f}s"
    return acl


@pytest.fixture(scope="session")
def far_cluster(tmp_path_factory: pytest.TempPathFactory) -> FarSandbox:
    """A separate cluster "on another network": a name server and one broker that binds
    127.0.0.1 and registers 127.0.0.77, where nothing listens (`far_cluster.broker_addr`),
    seeded through a mapped client (`far_cluster.seed`); no consumers. Stopped at the end."""
    options = FarOptions(
        run_dir=tmp_path_factory.mktemp("far-cluster"), start_timeout=START_BUDGET_S
    )
    background = Background(functools.partial(far_sandbox, options))
    started = time.monotonic()
    try:
        far: FarSandbox = background.start()
    except Exception as exc:
        background.stop()
        pytest.fail(f"the far cluster did not start: {exc}", pytrace=False)
    _started["far_cluster"] = background
    _measured["far start"] = f"{time.monotonic() - started:.1f}s"
    return far


@pytest.fixture(scope="session")
def replica_cluster(tmp_path_factory: pytest.TempPathFactory) -> ReplicaSandbox:
    """A separate cluster of one master and its slave (broker id 1, a JVM of its own), seeded
    (`replica_cluster.seed`) and copied to the slave; its master may be stopped by a test
    without disturbing any other cluster. Stopped at the end."""
    background = _early.pop("replica_cluster", None)
    if background is None:
        options = _replica_options(tmp_path_factory)
        background = Background(lambda: replica_sandbox(options))
    started = time.monotonic()
    try:
        replica: ReplicaSandbox = background.start()
    except Exception as exc:
        background.stop()
        pytest.fail(f"the master/slave cluster did not start: {exc}", pytrace=False)
    _started["replica_cluster"] = background
    _measured["replica start"] = f"waited {time.monotonic() - started:.1f}s"
    return replica


@pytest.fixture(scope="session")
def controller_cluster(tmp_path_factory: pytest.TempPathFactory) -> ControllerSandbox:
    """A separate cluster in controller mode: a name server, a controller, and one broker set
    of two replicas (JVMs of their own) the controller elects a master among, seeded
    (`controller_cluster.seed`) and copied to both. Its tests kill, pause and restart the
    replicas: they are one file's, in order. Stopped at the end."""
    background = _early.pop("controller_cluster", None)
    if background is None:
        options = _controller_options(tmp_path_factory)
        background = Background(lambda: controller_sandbox(options))
    started = time.monotonic()
    try:
        sb: ControllerSandbox = background.start()
    except Exception as exc:
        background.stop()
        pytest.fail(f"the controller-mode cluster did not start: {exc}", pytrace=False)
    _started["controller_cluster"] = background
    _measured["controller start"] = f"waited {time.monotonic() - started:.1f}s"
    return sb


@pytest.fixture(scope="session")
def dledger_cluster(tmp_path_factory: pytest.TempPathFactory) -> DLedgerSandbox:
    """A separate RocketMQ 4.9.7 cluster in DLedger mode: a name server and one broker set of
    three peers (JVMs of their own) that elect its master themselves, seeded
    (`dledger_cluster.seed`) and copied to every peer. Its tests kill and restart the peers:
    they are one file's, in order. Started when its first test runs; stopped after its last."""
    options = DLedgerOptions(
        run_dir=tmp_path_factory.mktemp("dledger-cluster"), start_timeout=START_BUDGET_S
    )
    background = Background(functools.partial(dledger_sandbox, options))
    started = time.monotonic()
    try:
        sb: DLedgerSandbox = background.start()
    except Exception as exc:
        background.stop()
        pytest.fail(f"the DLedger cluster did not start: {exc}", pytrace=False)
    _started["dledger_cluster"] = background
    _measured["dledger start"] = f"{time.monotonic() - started:.1f}s"
    return sb


def _controller_options(tmp_path_factory: pytest.TempPathFactory) -> ControllerOptions:
    return ControllerOptions(
        run_dir=tmp_path_factory.mktemp("controller-cluster"),
        brokers=("broker-a",),
        start_timeout=START_BUDGET_S,
    )


def _legacy_options(tmp_path_factory: pytest.TempPathFactory) -> LegacyOptions:
    return LegacyOptions(run_dir=tmp_path_factory.mktemp("legacy"), start_timeout=START_BUDGET_S)


def _replica_options(tmp_path_factory: pytest.TempPathFactory) -> ReplicaOptions:
    return ReplicaOptions(
        run_dir=tmp_path_factory.mktemp("replica-cluster"), start_timeout=START_BUDGET_S
    )


def _proxy_options(tmp_path_factory: pytest.TempPathFactory) -> SandboxOptions:
    return SandboxOptions(
        run_dir=tmp_path_factory.mktemp("proxy-cluster"),
        ports=free_ports(BROKER_NAMES, proxy=True),
        seed=False,
        live=True,
        proxy=True,
        start_timeout=START_BUDGET_S,
    )


@pytest.fixture(scope="session")
def proxy_cluster(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    """A separate two-broker cluster with a proxy in front (cluster mode) and RocketMQ 5's
    consumers alone (console.sandbox.pop: a remoting POP group and a gRPC group on `clicks`,
    `proxy_cluster.pop`): the main sandbox's offline groups would read partial there (a
    cluster with proxies nobody asked), so it is a cluster of its own. Stopped at the end."""
    background = _early.pop("proxy_cluster", None)
    if background is None:
        background = BackgroundSandbox(_proxy_options(tmp_path_factory))
    started = time.monotonic()
    try:
        sb: Sandbox = background.start()
    except Exception as exc:
        background.stop()
        pytest.fail(f"the proxy cluster did not start: {exc}", pytrace=False)
    _started["proxy_cluster"] = background
    _measured["proxy start"] = f"waited {time.monotonic() - started:.1f}s ({_describe_start(sb)})"
    _measured["proxy rss"] = ", ".join(
        f"{n} {kb // 1024} MiB" for n, kb in sorted(sb.rss_kb().items())
    )
    return sb


@pytest.fixture(scope="session")
def legacy_cluster(tmp_path_factory: pytest.TempPathFactory) -> LegacySandbox:
    """A separate RocketMQ 4.9.7 cluster (a name server and one broker): a group with committed,
    committed-0 and never-committed queues, and one committed below an expired commit log's min
    offset (`legacy_cluster.seed`); stopped at the end."""
    background = _early.pop("legacy_cluster", None)
    if background is None:
        background = BackgroundLegacySandbox(_legacy_options(tmp_path_factory))
    started = time.monotonic()
    try:
        legacy: LegacySandbox = background.start()
    except Exception as exc:
        background.stop()
        pytest.fail(f"the RocketMQ 4.9.7 cluster did not start: {exc}", pytrace=False)
    _started["legacy_cluster"] = background
    _measured["4.9.7 start"] = f"waited {time.monotonic() - started:.1f}s"
    return legacy


def _describe_start(sb: Sandbox) -> str:
    t = sb.timings
    return (
        f"{t.total:.1f}s (jars {t.fetch:.1f}s, build {t.build:.1f}s, cluster {t.cluster_start:.1f}s"
        f", seed {t.seed:.1f}s, live consumers {t.live_start:.1f}s, POP {t.pop_start:.1f}s"
        f", lite {t.lite_start:.1f}s)"
    )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _measured:
        terminalreporter.section("rocketmq sandbox")
        for key, value in _measured.items():
            terminalreporter.write_line(f"{key}: {value}")


@pytest.fixture(scope="session")
def plan_runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkRunner]:
    """One warm local Spark session for the tests that plan in-process before applying, and
    the same one the consoles of the UI tests find (`shared_runner`, the console's own warm
    session, on the same master): one Spark JVM for all of them, stopped at the end."""
    log = tmp_path_factory.mktemp("plan-spark") / "spark.log"
    try:
        yield shared_runner(CONSOLE_SPARK_MASTER, log)
    finally:
        close_shared_runner()


@pytest.fixture
def warm_cli(connect: ConnectServer, monkeypatch: pytest.MonkeyPatch) -> ConnectServer:
    """CLI commands run in the test process find the session's Spark Connect server, as after
    `rmq-console spark up`, instead of starting Spark each time."""
    monkeypatch.setenv(CACHE_ENV, str(connect.cache))
    return connect


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    """A tmux session of its own (80x24 when started), killed after the test."""
    session = Tmux(f"rmqc-ui-{uuid.uuid4().hex[:8]}")
    yield session
    session.kill()
