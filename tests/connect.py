"""The Spark Connect server of the test session, started and stopped by `rmq-console spark`
itself (in a cache folder of its own), and job hosts that talk to it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from console.services.infra.connect_server import ServerHome, ServerRecord
from console.services.infra.spark_runner import SparkRunner

ROOT = Path(__file__).resolve().parents[1]
CLI_TIMEOUT_S = 300


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


@contextmanager
def connect_server(tmp: Path) -> Iterator[ConnectServer]:
    """`rmq-console spark up` on a free port with two cores, `spark down` afterwards."""
    cache = tmp / "cache"
    config = tmp / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"workspace: {tmp / 'ws'}\n")
    env = console_env(cache, config)
    up = subprocess.run(
        [
            sys.executable,
            "-m",
            "console",
            "spark",
            "up",
            "--port",
            "0",
            "--master",
            "local[2]",
            "--conf",
            "spark.default.parallelism=2",
            "--conf",
            "spark.sql.shuffle.partitions=2",
        ],
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
