"""Name servers that do not answer, first in the list, against the real sandbox.

Dead: a port nothing listens on (connection refused). Hung: a socket that listens and never
accepts nor answers (the kernel completes the handshake, the request waits), as a SIGSTOPped
name server does. Either way the answers are right, the dead one costs each process at most
HEDGE_S once (not a timeout per call), and the CLI names it once on stderr.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.rocketmq.admin import AdminClient
from console.rocketmq.transport import HEDGE_S
from console.sandbox import scenario
from console.sandbox.runner import Sandbox

TIMEOUT = 3.0
COMMANDS = {
    "clusters": ["clusters", "--json"],
    "lag": ["lag", "-g", scenario.GROUP_OFFLINE, "--json"],
}


def rmq_console(*args: str, config: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    exe = Path(sys.executable).with_name("rmq-console")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RMQ_CONSOLE_CONFIG": str(config)}
    started = time.monotonic()
    result = subprocess.run(
        [str(exe), *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )
    return result, time.monotonic() - started


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "config.yaml"
    path.write_text("{}\n")
    return path


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def dead() -> str:
    return f"127.0.0.1:{_closed_port()}"


@pytest.fixture(scope="module")
def hung() -> Iterator[str]:
    """Listens, never accepts, never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(128)
        yield f"127.0.0.1:{s.getsockname()[1]}"


def _shape(command: str, stdout: str) -> object:
    """What must be the same whichever name server answered (live consumers move offsets)."""
    document = json.loads(stdout)
    if command == "lag":
        return sorted((q["topic"], q["broker"], q["queue_id"]) for q in document["queues"])
    return document


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(("which", "separator"), [("dead", ";"), ("hung", ",")])
def test_a_name_server_that_does_not_answer_first_in_the_list(
    sandbox: Sandbox,
    config: Path,
    request: pytest.FixtureRequest,
    command: str,
    which: str,
    separator: str,
) -> None:
    bad: str = request.getfixturevalue(which)
    good = sandbox.namesrv_addr
    args = [*COMMANDS[command], "--timeout", str(TIMEOUT)]
    alone, alone_s = rmq_console(*args, "--namesrv", good, config=config)
    assert (alone.returncode, alone.stderr) == (0, "")
    result, took_s = rmq_console(*args, "--namesrv", f"{bad}{separator}{good}", config=config)
    assert result.returncode == 0, result.stderr
    assert _shape(command, result.stdout) == _shape(command, alone.stdout)
    # Named once, with what answered instead.
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"rmq-console: name server {bad} did not answer (")
    assert line.endswith(f"; using {good}")
    # One hedge's wait (HEDGE_S) more than with the good name server alone, at most: less than
    # one timeout, where waiting it out would cost a timeout for each name-server call.
    print(f"{command} {which} first: {took_s:.2f}s (alone {alone_s:.2f}s)")
    assert took_s - alone_s < TIMEOUT


async def test_one_client_skips_a_hung_name_server_after_the_first_call(
    sandbox: Sandbox, hung: str
) -> None:
    async with AdminClient(f"{hung};{sandbox.namesrv_addr}", timeout=TIMEOUT) as admin:
        started = time.monotonic()
        # Fifty at once, as a fleet read starts: each waits one hedge, together.
        await asyncio.gather(*(admin.cluster_info() for _ in range(50)))
        first_s = time.monotonic() - started
        started = time.monotonic()
        for _ in range(20):  # then one after another: the hung one is not asked again
            await admin.cluster_info()
        then_s = time.monotonic() - started
        print(f"50 concurrent {first_s:.2f}s, then 20 in a row {then_s:.2f}s")
        assert first_s < HEDGE_S + 1.0
        assert then_s < 1.0
        assert admin.name_servers.current == sandbox.namesrv_addr
        (told,) = admin.name_servers.news()
        assert told.addr == hung
        assert told.reason.startswith("no answer within")
        assert told.instead == sandbox.namesrv_addr
        assert admin.name_servers.news() == ()  # told once
        assert [u.addr for u in admin.name_servers.unanswered()] == [hung]  # still skipped


async def test_a_dead_name_server_is_named_with_its_refusal(sandbox: Sandbox, dead: str) -> None:
    async with AdminClient([dead, sandbox.namesrv_addr], timeout=TIMEOUT) as admin:
        started = time.monotonic()
        for _ in range(10):
            await admin.cluster_info()
        assert time.monotonic() - started < 1.0
        (told,) = admin.name_servers.news()
        assert told.addr == dead
        assert told.reason.startswith("cannot connect")
        assert told.line().endswith(f"; using {sandbox.namesrv_addr}")


async def test_the_console_names_a_name_server_that_does_not_answer(
    sandbox: Sandbox, hung: str, tmp_path: Path
) -> None:
    """The console through its network process, the hung name server first: the overview is
    read from the one that answers, and the status line names the one that did not."""
    from console.config import ClusterConfig, Config
    from console.remote.proxy import remote_sources
    from console.ui.app import make_app
    from console.ui.themes import PROJECT_THEMES
    from tests.ui.helpers import screen_lines, settle, shown, status

    cluster = ClusterConfig(name="sandbox", namesrv=(hung, sandbox.namesrv_addr))
    config = Config(
        clusters=(cluster,), refresh_interval=3600, theme="rmq-dark", workspace=str(tmp_path)
    )
    app = make_app(config, remote_sources(config), cluster=cluster, theme_paths=[PROJECT_THEMES])
    async with app.run_test(size=(80, 24)) as pilot:
        deadline = time.monotonic() + 60
        while not {r["broker"] for r in shown(app, "#brokers")} >= {"broker-a", "broker-b"}:
            assert time.monotonic() < deadline, f"no brokers shown; status: {status(app)}"
            await pilot.press("r")
            await settle(pilot)
        line = status(app)
        assert f"name server {hung} did not answer" in line, line
        assert f"using {sandbox.namesrv_addr}" in line, line
        # The header names the cluster's name servers once, the hung one among them.
        top = "\n".join(screen_lines(app)[:2])
        assert top.count(hung) <= 1
