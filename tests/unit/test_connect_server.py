"""The Connect server's record, its clear refusals before any JVM starts (a busy port, no Java),
and which engine a command plans on."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from console.config import Config
from console.locations import CACHE_ENV
from console.services.infra import connect_server as server
from console.services.infra import spark_runner
from console.services.infra.connect_server import (
    JavaMissing,
    PortBusy,
    ServerHome,
    ServerRecord,
    connect_address,
    public_url,
)
from console.services.infra.spark_engine import EngineUnavailable, choose_engine
from console.services.plan.preview_planners import console_runner


def record(pid: int, port: int = 15002) -> ServerRecord:
    return ServerRecord(
        pid=pid, port=port, master="local[*]", log="/x/server.log", started_at_ms=1, token="t0k"
    )


@pytest.fixture
def home(tmp_path: Path) -> ServerHome:
    return ServerHome(tmp_path / "spark-connect")


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A live process whose command line names the server class (what `running` checks)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)", server.SERVER_CLASS]
    )
    # Until the child has exec'd, its command line is still this test's own.
    cmdline = Path(f"/proc/{proc.pid}/cmdline")
    deadline = time.monotonic() + 30
    while server.SERVER_CLASS.encode() not in cmdline.read_bytes():
        assert time.monotonic() < deadline, "the sleeper did not start"
        time.sleep(0.01)
    yield proc
    proc.kill()
    proc.wait()


def test_record_round_trip_is_private(home: ServerHome) -> None:
    home.prepare()
    home.write(record(123))
    assert home.read() == record(123)
    assert stat.S_IMODE(home.record_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(home.root.stat().st_mode) == 0o700
    assert record(1).url == "sc://localhost:15002"
    assert record(1).client_env == {"SPARK_CONNECT_AUTHENTICATE_TOKEN": "t0k"}


def test_a_torn_record_is_no_record(home: ServerHome) -> None:
    home.prepare()
    home.record_path.write_text("{not json")
    assert home.read() is None


def test_a_dead_or_foreign_pid_is_forgotten(
    home: ServerHome, sleeper: subprocess.Popen[bytes]
) -> None:
    home.prepare()
    home.write(record(sleeper.pid))
    assert server.running(home) == record(sleeper.pid)
    home.write(record(os.getpid()))  # alive, but not a Connect server
    assert server.running(home) is None
    assert not home.record_path.exists()


def test_a_busy_port_is_refused_before_spark_starts(home: ServerHome) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(PortBusy, match=rf"port {port} on 127.0.0.1 is in use.*--port 0"):
            server.start(home, port=port)
    assert home.read() is None


def test_no_java_is_said_plainly(home: ServerHome, tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}  # no JAVA_HOME, no java on the PATH
    with pytest.raises(JavaMissing, match="Java was not found.*JAVA_HOME"):
        server.start(home, port=0, env=env)
    with pytest.raises(JavaMissing):
        server.start(home, port=0, env={**env, "JAVA_HOME": str(tmp_path / "nowhere")})
    assert home.read() is None


def test_a_connect_url_is_not_a_server_master(home: ServerHome) -> None:
    with pytest.raises(server.ConnectServerError, match="local\\[\\*\\] or a spark:// master"):
        server.start(home, master="sc://elsewhere:15002")


def test_connect_urls() -> None:
    assert connect_address("sc://localhost") == ("localhost", 15002)
    assert connect_address("sc://10.0.0.5:15010/;token=abc;use_ssl=true") == ("10.0.0.5", 15010)
    assert connect_address("sc://[::1]:15003") == ("::1", 15003)
    assert public_url("sc://h:1/;token=secret") == "sc://h:1"
    with pytest.raises(ValueError, match="bad port") as bad:
        connect_address("sc://h:notaport/;token=secret")
    assert "secret" not in str(bad.value)
    with pytest.raises(ValueError, match="not a Spark Connect URL"):
        connect_address("spark://h:7077")


def test_probe_of_a_closed_port_says_nothing_listens() -> None:
    port = server.free_port()
    found = server.probe(f"sc://127.0.0.1:{port}/;token=secret")
    assert not found.answers
    assert found.error == f"nothing listens on 127.0.0.1:{port}"
    assert found.url == f"sc://127.0.0.1:{port}"


# ---- which engine -----------------------------------------------------------------------------


def never(_: str) -> bool:
    return False


def always(_: str) -> bool:
    return True


def test_engine_without_a_server_is_the_configured_master(home: ServerHome) -> None:
    engine = choose_engine(None, "local[*]", home=home, answers=always)
    assert (engine.master, engine.source, engine.note) == ("local[*]", "config", None)
    explicit = choose_engine("spark://m:7077", "local[*]", home=home, answers=never)
    assert (explicit.master, explicit.source) == ("spark://m:7077", "--master")


def test_engine_prefers_the_running_server(
    home: ServerHome, sleeper: subprocess.Popen[bytes]
) -> None:
    home.prepare()
    home.write(record(sleeper.pid, port=15077))
    engine = choose_engine(None, "local[*]", home=home, answers=always)
    assert engine.master == "sc://localhost:15077"
    assert engine.source == "spark up"
    assert engine.env == {"SPARK_CONNECT_AUTHENTICATE_TOKEN": "t0k"}
    # A server that stopped answering is passed over for the configured master.
    assert choose_engine(None, "local[*]", home=home, answers=never).master == "local[*]"
    # --master still wins.
    assert choose_engine("local[2]", "local[*]", home=home, answers=always).master == "local[2]"


def test_a_configured_server_that_does_not_answer(home: ServerHome) -> None:
    url = "sc://10.1.2.3:15002/;token=secret"
    with pytest.raises(EngineUnavailable, match="does not answer.*--local-fallback") as no:
        choose_engine(None, url, home=home, answers=never)
    assert "sc://10.1.2.3:15002 (spark_master)" in str(no.value)
    assert "secret" not in str(no.value)
    fallback = choose_engine(None, url, home=home, local_fallback=True, answers=never)
    assert (fallback.master, fallback.source) == ("local[*]", "local fallback")
    assert fallback.note is not None
    assert "does not answer" in fallback.note
    assert "secret" not in fallback.note
    assert choose_engine(None, url, home=home, answers=always).master == url


def test_the_console_previews_on_the_running_server_as_the_cli_plans(
    tmp_path: Path,
    home: ServerHome,
    sleeper: subprocess.Popen[bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[tuple[str, Mapping[str, str] | None]] = []

    def shared(master: str, log: Path, conf: object = None, env: Any = None) -> object:
        asked.append((master, env))
        return object()

    monkeypatch.setattr(spark_runner, "shared_runner", shared)
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))  # where `spark up` keeps its record: `home`
    config = Config(workspace=str(tmp_path / "ws"), spark_master="local[1]")
    console_runner(config)  # no server: the configured master, no token
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        home.prepare()
        port = listener.getsockname()[1]
        home.write(record(sleeper.pid, port=port))
        console_runner(config)
    assert asked == [
        ("local[1]", None),
        (f"sc://localhost:{port}", {"SPARK_CONNECT_AUTHENTICATE_TOKEN": "t0k"}),
    ]
