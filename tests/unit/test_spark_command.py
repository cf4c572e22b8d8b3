"""`rmq-console spark status | down` when there is no server to ask or to stop, and when the
recorded one is dead or no longer answers: the exit codes (status: 0 every server answers, 1
one does not, 3 none to ask; down: 0) and what they say. No JVM starts here: a live server that
does not answer is a process whose command line names the server class, listening nowhere (the
server answering is proven in tests/spark/test_connect.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.cli import main
from console.config import CONFIG_ENV
from console.locations import CACHE_ENV
from console.services.infra import connect_server as server
from console.services.infra.connect_server import ServerHome, ServerRecord


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ServerHome:
    """The cache folder and an empty config of the test's own."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    config = tmp_path / "config.yaml"
    config.write_text("{}\n")
    monkeypatch.setenv(CONFIG_ENV, str(config))
    return ServerHome.default()


def recorded(home: ServerHome, pid: int, port: int) -> ServerRecord:
    record = ServerRecord(
        pid=pid,
        port=port,
        master="local[*]",
        log=str(home.log_path),
        started_at_ms=int(time.time() * 1000),
        token="t0k",
    )
    home.prepare()
    home.write(record)
    return record


@pytest.fixture
def hung() -> Iterator[subprocess.Popen[bytes]]:
    """A live "server" in a process group of its own (as `spark up` starts one), which never
    listens."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)", server.SERVER_CLASS],
        start_new_session=True,
    )
    cmdline = Path(f"/proc/{proc.pid}/cmdline")
    deadline = time.monotonic() + 30
    while server.SERVER_CLASS.encode() not in cmdline.read_bytes():
        assert time.monotonic() < deadline, "the stand-in did not start"
        time.sleep(0.01)
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def test_no_server_at_all(home: ServerHome, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spark", "status"]) == 3
    out = capsys.readouterr().out
    assert out.strip() == (
        "no Spark Connect server: none started by `rmq-console spark up`, and spark_master "
        "is local[*]"
    )
    assert main(["spark", "status", "--json"]) == 3
    assert json.loads(capsys.readouterr().out) == {"servers": []}
    assert main(["spark", "down"]) == 0
    assert capsys.readouterr().out.strip() == (
        "no Spark Connect server started by `rmq-console spark up` is running"
    )


def test_a_dead_server_is_forgotten(home: ServerHome, capsys: pytest.CaptureFixture[str]) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # its pid is free now: the record names a server that died
    recorded(home, gone.pid, server.free_port())
    assert main(["spark", "status"]) == 3
    assert "no Spark Connect server" in capsys.readouterr().out
    assert home.read() is None  # the stale record is gone
    recorded(home, gone.pid, server.free_port())
    assert main(["spark", "down"]) == 0
    assert "is running" in capsys.readouterr().out
    assert home.read() is None


def test_a_server_that_stopped_answering_is_named_and_stopped(
    home: ServerHome, hung: subprocess.Popen[bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    port = server.free_port()
    record = recorded(home, hung.pid, port)
    assert main(["spark", "status"]) == 1
    out = capsys.readouterr().out
    assert (
        f"Spark Connect server sc://localhost:{port} (spark up): does not answer: nothing "
        f"listens on localhost:{port}"
    ) in out
    assert f"pid {hung.pid}" in out
    assert f"log: {home.log_path}" in out
    assert main(["spark", "status", "--json"]) == 1
    done = capsys.readouterr()
    [entry] = json.loads(done.out)["servers"]
    assert (entry["answers"], entry["pid"], entry["source"]) == (False, hung.pid, "spark up")
    assert record.token not in done.out + done.err

    assert main(["spark", "down"]) == 0
    assert capsys.readouterr().out.strip() == (
        f"stopped the Spark Connect server at sc://localhost:{port} (pid {hung.pid})"
    )
    assert hung.wait(30) is not None  # the process is gone
    assert home.read() is None
    assert main(["spark", "status"]) == 3
    capsys.readouterr()


def test_a_configured_server_that_does_not_answer(
    home: ServerHome, capsys: pytest.CaptureFixture[str]
) -> None:
    port = server.free_port()
    Path(os.environ[CONFIG_ENV]).write_text(f"spark_master: sc://127.0.0.1:{port}/;token=s3cret\n")
    assert main(["spark", "status"]) == 1
    out = capsys.readouterr().out
    assert out.strip() == (
        f"Spark Connect server sc://127.0.0.1:{port} (spark_master): does not answer: nothing "
        f"listens on 127.0.0.1:{port}"
    )
    assert "s3cret" not in out
