"""The Spark Connect server of the test session, started and stopped by `rmq-console spark`
itself (in a cache folder of its own), and job hosts that talk to it.

`make test`'s streams (tests/streams.py) share one server: each stream starting its own was
four Spark JVMs starting at once on two cores (60-280 s each, the first test that used one
waiting for it). tests/streams.py starts it beside the streams (`start_shared`) and names its
folder in SHARED_ENV; a stream's session then joins it (`joined_server`) with a cache folder of
its own, where `spark up` finds the server running and starts the stream's own warm job host
(a test kills one: no other stream's). A session run by itself starts a server of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from console.services.infra import connect_server as server
from console.services.infra import warm_host
from console.services.infra.connect_server import ConnectServerError, ServerHome, ServerRecord
from console.services.infra.spark_runner import SparkRunner

ROOT = Path(__file__).resolve().parents[1]
CLI_TIMEOUT_S = 300
#: The session's Spark: two cores, two partitions.
MASTER = "local[2]"
CONF = {"spark.default.parallelism": "2", "spark.sql.shuffle.partitions": "2"}
#: The test session's Spark JVMs (local drivers, the Connect server, a standalone master and
#: worker) run the client compiler alone: its jobs are a few rows each, and C2 compiling Spark
#: itself was a third of a driver's CPU (a small local job: 16 CPU-s with both compilers, 10
#: with C1), on two cores the streams share. The benchmarks do not import this: they keep both.
QUICK_JIT = "-XX:TieredStopAtLevel=1"
QUICK_SPARK_JVMS = {"SPARK_SUBMIT_OPTS": QUICK_JIT, "SPARK_DAEMON_JAVA_OPTS": QUICK_JIT}
#: The same for the executors a standalone worker starts (an application's own setting).
QUICK_EXECUTORS = {"spark.executor.extraJavaOptions": QUICK_JIT}
#: The folder of the server the streams share (tests/streams.py sets it for each stream).
SHARED_ENV = "RMQ_TEST_SHARED_CONNECT"
#: In the shared folder once its start has ended: whether it is up, and what was said.
SHARED_UP = "up.json"


def use_quick_spark_jvms() -> None:
    """Give this process's environment QUICK_SPARK_JVMS (where not set already): every Spark
    JVM started from here on, in-process or by a child, inherits them."""
    for name, value in QUICK_SPARK_JVMS.items():
        os.environ.setdefault(name, value)


@dataclass(frozen=True)
class ConnectServer:
    record: ServerRecord
    #: The environment of a console process that finds this server (its cache folder).
    env: Mapping[str, str]
    cache: Path

    @property
    def url(self) -> str:
        return self.record.url

    def runner(self, log: Path) -> SparkRunner:
        """A job host on this server, as the CLI starts one (the token in its environment)."""
        env = {**self.env, **self.record.client_env}
        return SparkRunner(self.url, log_path=log, warm_up=False, env=env)

    def cli(self, *args: str, config: Path | None = None) -> subprocess.CompletedProcess[str]:
        """`rmq-console ARGS` in a process of its own that finds this server (and reads
        `config` when given)."""
        env = dict(self.env)
        if config is not None:
            env["RMQ_CONSOLE_CONFIG"] = str(config)
        return subprocess.run(
            [sys.executable, "-m", "console", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_S,
        )


def console_env(cache: Path, config: Path) -> dict[str, str]:
    env = dict(os.environ)
    # Python workers of the server import the test helpers that tasks unpickle.
    paths = (str(ROOT), env.get("PYTHONPATH", ""))
    env.update(
        RMQ_CONSOLE_CACHE=str(cache),
        RMQ_CONSOLE_CONFIG=str(config),
        PYTHONPATH=os.pathsep.join(p for p in paths if p),
    )
    return env


def _session_env(tmp: Path) -> tuple[Path, dict[str, str]]:
    """A cache folder and a config of their own under `tmp`, and a console's environment for
    them."""
    cache = tmp / "cache"
    config = tmp / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"workspace: {tmp / 'ws'}\n")
    return cache, console_env(cache, config)


@contextmanager
def connect_server(tmp: Path) -> Iterator[ConnectServer]:
    """`rmq-console spark up` on a free port with two cores, `spark down` afterwards."""
    cache, env = _session_env(tmp)
    conf = [arg for key, value in CONF.items() for arg in ("--conf", f"{key}={value}")]
    up = subprocess.run(
        [sys.executable, "-m", "console", "spark", "up", "--port", "0", "--master", MASTER, *conf],
        env=env,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
    )
    home = ServerHome(cache / "spark-connect")
    record = home.read()
    if up.returncode != 0 or record is None:
        raise RuntimeError(f"spark up failed ({up.returncode}):\n{up.stdout}\n{up.stderr}")
    try:
        yield ConnectServer(record, env, cache)
    finally:
        subprocess.run(
            [sys.executable, "-m", "console", "spark", "down"],
            env=env,
            capture_output=True,
            timeout=CLI_TIMEOUT_S,
        )


def start_shared(folder: Path) -> None:
    """Start the streams' server in `folder` (blocking: tests/streams.py runs it in a thread);
    SHARED_UP says how it went, for the streams waiting on it. The server only: each stream
    starts a warm job host of its own (one here would be a Python process importing pyspark
    for nobody, on a machine busy starting the streams' clusters)."""
    _, env = _session_env(folder)
    home = ServerHome(folder / "cache" / "spark-connect")
    try:
        record = server.start(
            home, master=MASTER, port=0, conf=CONF, env=env, timeout=CLI_TIMEOUT_S
        )
        said = {"code": 0, "output": f"up: {record.url} (pid {record.pid})"}
    except (ConnectServerError, OSError) as exc:
        said = {"code": 1, "output": f"the Spark Connect server did not start: {exc}"}
    (folder / SHARED_UP).write_text(json.dumps(said), encoding="utf-8")


def stop_shared(folder: Path) -> None:
    """Stop the streams' server, once every stream has ended."""
    server.stop(ServerHome(folder / "cache" / "spark-connect"))


@contextmanager
def joined_server(shared: Path, tmp: Path) -> Iterator[ConnectServer]:
    """The streams' server, once started, seen from a cache folder of this session's own:
    its record copied there, and a warm job host of this session's (stopped afterwards)."""
    said_path = shared / SHARED_UP
    deadline = time.monotonic() + CLI_TIMEOUT_S
    while not said_path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the streams' Spark Connect server: no word in {said_path}")
        time.sleep(0.5)
    said = json.loads(said_path.read_text(encoding="utf-8"))
    record = ServerHome(shared / "cache" / "spark-connect").read()
    if said["code"] != 0 or record is None:
        raise RuntimeError(f"the streams' Spark Connect server is not up: {said['output']}")
    cache, env = _session_env(tmp)
    home = ServerHome(cache / "spark-connect")
    home.prepare()
    home.write(record)
    # Finds the server running ("already running") and starts this session's warm host.
    up = subprocess.run(
        [sys.executable, "-m", "console", "spark", "up"],
        env=env,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
    )
    if up.returncode != 0:
        raise RuntimeError(f"spark up on the streams' server failed:\n{up.stdout}\n{up.stderr}")
    try:
        yield ConnectServer(record, env, cache)
    finally:
        warm_host.stop(home)
        home.forget()
