"""A Spark standalone cluster for one test: a master and one worker from the pyspark install,
on 127.0.0.1 with free ports and little memory, torn down afterwards."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).parent
START_TIMEOUT_S = 180


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spark_env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(tmp / "logs"),
        SPARK_WORKER_DIR=str(tmp / "work"),
        SPARK_DAEMON_MEMORY="256m",
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    return env


class Daemon:
    """A process whose output is read line by line; waiting for a line is waiting on I/O."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self.proc = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self.ended = False
        self.changed = threading.Condition()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        try:
            with self.log.open("w") as out:
                for line in self.proc.stdout:
                    out.write(line)
                    with self.changed:
                        self.lines.append(line)
                        self.changed.notify_all()
        finally:
            self.proc.stdout.close()
            with self.changed:
                self.ended = True
                self.changed.notify_all()

    def wait_for(self, marker: str, timeout: float = START_TIMEOUT_S) -> None:
        def seen() -> bool:
            return self.ended or any(marker in line for line in self.lines)

        with self.changed:
            self.changed.wait_for(seen, timeout)
        if not any(marker in line for line in self.lines):
            tail = "".join(self.lines[-30:])
            raise RuntimeError(f"no {marker!r} from {self.proc.args!r}:\n{tail}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@dataclass(frozen=True)
class Standalone:
    master_url: str
    env: dict[str, str]


@contextmanager
def standalone_cluster(tmp: Path) -> Iterator[Standalone]:
    tmp.mkdir(parents=True, exist_ok=True)
    env = spark_env(tmp)
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    with ExitStack() as stack:
        master = Daemon(
            [
                spark_class,
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(free_port()),
            ],
            env,
            tmp / "master.log",
        )
        stack.callback(master.stop)
        master.wait_for("I have been elected leader")
        worker = Daemon(
            [
                spark_class,
                "org.apache.spark.deploy.worker.Worker",
                url,
                "--host",
                "127.0.0.1",
                "--port",
                str(free_port()),
                "--webui-port",
                str(free_port()),
                "--cores",
                "2",
                "--memory",
                "1g",
                "--work-dir",
                str(tmp / "work"),
            ],
            env,
            tmp / "worker.log",
        )
        stack.callback(worker.stop)
        worker.wait_for("Successfully registered with master")
        yield Standalone(url, env)
