"""The warm job host of `spark up` as a plan command finds it: trusted only when its record
names the running server, this interpreter and this code, its process is alive and its socket
answers `ready` at once; anything else is a host of the command's own (today's path), said
nowhere. The host here is the real RPC listener in a process whose command line is the real
host's (tests/unit/warm_listener.py); the Spark side is proven in
tests/integration/test_plan_connect.py."""

from __future__ import annotations

import dataclasses
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from console.cli import main
from console.cli.plan import _runner
from console.locations import CACHE_ENV
from console.services.infra import connect_server as server
from console.services.infra import warm_host
from console.services.infra.connect_server import ServerHome, ServerRecord
from console.services.infra.rpc import same_user
from console.services.infra.spark_engine import Engine, engine_of
from console.services.infra.spark_jobs import JobProgress, JobState
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.warm_host import HostFiles, HostRecord, WarmRunner
from console.services.infra.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ServerHome:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    home = ServerHome.default()
    home.prepare()
    return home


def _until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _spawn(argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(argv, env=env, start_new_session=True)
    marker = argv[-1].encode()
    cmdline = Path(f"/proc/{proc.pid}/cmdline")
    # Until the child has exec'd, its command line is still this test's own.
    _until(lambda: marker in cmdline.read_bytes().split(b"\0"), "the child did not start")
    return proc


@pytest.fixture
def server_record(home: ServerHome) -> Iterator[ServerRecord]:
    """A "server" the command finds running: a live process naming the server class."""
    proc = _spawn([sys.executable, "-c", "import time; time.sleep(600)", server.SERVER_CLASS])
    record = ServerRecord(
        pid=proc.pid, port=15999, master="local[2]", log="/x", started_at_ms=1, token="t0k"
    )
    home.write(record)
    yield record
    proc.kill()
    proc.wait()


HostFactory = Callable[..., tuple[subprocess.Popen[bytes], HostRecord]]


@pytest.fixture
def live_host(home: ServerHome, server_record: ServerRecord) -> Iterator[HostFactory]:
    """Start the stand-in host on the socket of the server's folder, recorded as `spark up`
    records the real one."""
    started: list[subprocess.Popen[bytes]] = []

    def start(*, ready_fails: bool = False) -> tuple[subprocess.Popen[bytes], HostRecord]:
        files = HostFiles(home)
        env = {**os.environ, "RMQ_TEST_SOCKET": str(files.socket_path)}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
        if ready_fails:
            env["RMQ_TEST_READY_FAILS"] = "1"
        argv = [sys.executable, "-m", "tests.unit.warm_listener", "jobs.host", "--listen"]
        proc = _spawn(argv, env)
        started.append(proc)
        _until(files.socket_path.exists, "the host did not listen")
        record = HostRecord(
            pid=proc.pid,
            socket=str(files.socket_path),
            server_pid=server_record.pid,
            server_port=server_record.port,
            python=sys.executable,
            code=warm_host.this_code(),
            log=str(files.log_path),
            started_at_ms=1,
        )
        files.write(record)
        return proc, record

    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def test_a_plan_goes_to_the_live_host_and_leaves_it_running(
    home: ServerHome, server_record: ServerRecord, live_host: HostFactory
) -> None:
    proc, record = live_host()
    seen: list[JobProgress] = []
    for _ in range(2):  # one command after another, each on a connection of its own
        runner = warm_host.attach(home, server_record)
        assert isinstance(runner, WarmRunner)
        with runner:
            answer = runner.submit("plan", "{}", seen.append).result(30)
        assert answer == f"plan {{}} in {proc.pid}"
        assert proc.poll() is None
    assert [p.state for p in seen[-3:]] == [JobState.QUEUED, JobState.RUNNING, JobState.SUCCEEDED]
    assert seen[-2].step == "planning"
    assert runner.log_path == Path(record.log)
    assert stat.S_IMODE(HostFiles(home).record_path.stat().st_mode) == 0o600


def test_the_plan_command_takes_the_warm_host_only_for_its_server(
    home: ServerHome, server_record: ServerRecord, live_host: HostFactory, tmp_path: Path
) -> None:
    workspace = Workspace(tmp_path / "ws")
    spark_up = engine_of(server_record)
    assert type(_runner(spark_up, workspace)) is SparkRunner  # no host yet: a host of its own
    live_host()
    warm = _runner(spark_up, workspace)
    assert isinstance(warm, WarmRunner)
    warm.close()
    # Another server, or no server at all: the command's own host, as without `spark up`.
    elsewhere = Engine("sc://localhost:16000", "--master")
    assert type(_runner(elsewhere, workspace)) is SparkRunner
    assert type(_runner(Engine("local[2]", "config"), workspace)) is SparkRunner


def test_a_host_whose_session_did_not_start_is_not_used(
    home: ServerHome, server_record: ServerRecord, live_host: HostFactory
) -> None:
    live_host(ready_fails=True)
    assert warm_host.attach(home, server_record) is None


@pytest.mark.parametrize(
    "change",
    [
        {"server_pid": 1},
        {"server_port": 15998},
        {"python": "/usr/bin/python3-other"},
        {"code": "/elsewhere/console"},
    ],
    ids=["another server pid", "another server port", "another python", "another checkout"],
)
def test_a_host_of_another_server_or_install_is_not_used(
    home: ServerHome, server_record: ServerRecord, live_host: HostFactory, change: dict[str, object]
) -> None:
    proc, record = live_host()
    HostFiles(home).write(dataclasses.replace(record, **change))  # type: ignore[arg-type]
    assert warm_host.attach(home, server_record) is None
    assert warm_host.running(home, server_record) is None
    assert HostFiles(home).read() is not None  # alive: not ours to forget
    assert proc.poll() is None


def test_a_dead_host_is_forgotten(
    home: ServerHome, server_record: ServerRecord, live_host: HostFactory
) -> None:
    proc, _ = live_host()
    proc.kill()
    proc.wait()
    assert warm_host.attach(home, server_record) is None
    assert HostFiles(home).read() is None


def test_a_recycled_pid_or_a_silent_socket_is_not_trusted(
    home: ServerHome, server_record: ServerRecord, live_host: HostFactory
) -> None:
    proc, record = live_host()
    files = HostFiles(home)
    files.write(dataclasses.replace(record, pid=os.getpid()))  # alive, but not a job host
    assert warm_host.attach(home, server_record) is None
    files.write(dataclasses.replace(record, socket=str(home.root / "gone.sock")))
    assert warm_host.attach(home, server_record) is None
    with socket.socket(socket.AF_UNIX) as mute:  # listens, never answers `ready`
        mute.bind(str(home.root / "mute.sock"))
        mute.listen(1)
        files.write(dataclasses.replace(record, socket=str(home.root / "mute.sock")))
        assert warm_host.attach(home, server_record) is None


def test_stop_ends_the_host_and_forgets_it(
    home: ServerHome, server_record: ServerRecord, live_host: HostFactory
) -> None:
    proc, record = live_host()
    assert warm_host.stop(home, timeout=10) == record
    assert proc.wait(10) is not None
    assert HostFiles(home).read() is None
    assert not HostFiles(home).socket_path.exists()
    assert warm_host.stop(home) is None


def test_a_record_torn_or_foreign_is_no_host(home: ServerHome, server_record: ServerRecord) -> None:
    HostFiles(home).record_path.write_text('{"pid": "x"')
    assert warm_host.attach(home, server_record) is None
    assert warm_host.running(home, server_record) is None


def test_a_peer_of_our_own_user_is_let_in() -> None:
    a, b = socket.socketpair()
    with a, b:
        assert same_user(a)


def test_spark_down_stops_the_host_and_its_server(
    home: ServerHome,
    server_record: ServerRecord,
    live_host: HostFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    proc, record = live_host()
    assert main(["spark", "down"]) == 0
    out = capsys.readouterr().out
    assert f"stopped the warm job host (pid {record.pid})" in out
    assert f"stopped the Spark Connect server at {server_record.url}" in out
    assert proc.wait(10) is not None
    assert HostFiles(home).read() is None
    assert home.read() is None
