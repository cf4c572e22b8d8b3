"""The Spark Connect server that ships inside pyspark, run by the console as a warm engine.

`start` launches `SparkConnectServer` through pyspark's own `bin/spark-submit` (the JVM is the
process we start, so its pid is the server's), bound to loopback, on `local[*]` or a `spark://`
master. It keeps running after the command that started it exits; a record of it (pid, port,
master, log, auth token) lives in a private folder under the cache, so later commands find it
and `stop` ends it.

The server demands a random bearer token, so another user on the same machine cannot run code
through it as us. The token travels only in files readable by us (mode 0600) and in the
environment (`SPARK_CONNECT_AUTHENTICATE_TOKEN`, which both the server and the pyspark client
read), never in a process's argv.

The console never imports pyspark: the package is located with `importlib.util.find_spec`,
and whether the server answers Spark requests is asked by a child process (`jobs.probe`).

One piece (over 400 lines): one server's life (its record, start, check, stop) around one record
file; every command that touches the server reads it through here.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

from console import json_text
from console.errors import BadInput
from console.locations import cache_root
from console.processes import pid_alive
from console.services.infra.record_files import read_record, write_record

DEFAULT_PORT = 15002
LOOPBACK = "127.0.0.1"
# The client connects by name: pyspark sends a token to "localhost" over local credentials
# without TLS, and to any other host only over TLS.
CLIENT_HOST = "localhost"
TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
STARTED = "Spark Connect server started at"
START_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 30.0
PROBE_TIMEOUT_S = 60.0
LOG_TAIL_LINES = 25
_STACK_FRAME = re.compile(r"^\s+(at |\.\.\. \d+ more)")

# Cluster-level settings (a session cannot change them); the plan job sets its spark.sql.*
# options per session. Plans are small next to what Spark is sized for.
SERVER_CONF: Mapping[str, str] = {
    "spark.default.parallelism": "4",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}


#: The server's log: warnings and errors, the line that says it started, and the executors a
#: standalone master granted it. Spark's own default
#: logs every execution's whole plan at INFO when one is abandoned, and a plan carries its
#: Python functions pickled with what they were given (where a cluster's TLS files are, say):
#: nothing of a job's request is for a log file.
SERVER_LOGGING = """\
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.server.name = org.apache.spark.sql.connect.service.SparkConnectServer
logger.server.level = info
logger.executors.name = org.apache.spark.scheduler.cluster.StandaloneSchedulerBackend
logger.executors.level = info
logger.jetty.name = org.sparkproject.jetty
logger.jetty.level = error
"""


class ConnectServerError(Exception):
    """The server could not be started, stopped or reached; the message says why and what to
    do, worded for the operator."""


class PortBusy(ConnectServerError):
    pass


class JavaMissing(ConnectServerError):
    pass


class ServerDied(ConnectServerError):
    """The server exited while starting; the message ends with the tail of its log."""


@dataclass(frozen=True, slots=True)
class ServerRecord:
    """A server started by `start`, as written to its record file."""

    pid: int
    port: int
    master: str
    log: str
    started_at_ms: int
    token: str

    @property
    def url(self) -> str:
        return f"sc://{CLIENT_HOST}:{self.port}"

    @property
    def client_env(self) -> dict[str, str]:
        """What a pyspark client process needs in its environment to be let in."""
        return {TOKEN_ENV: self.token}

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> ServerRecord:
        d = json_text.loads(text)
        return cls(
            pid=int(d["pid"]),
            port=int(d["port"]),
            master=str(d["master"]),
            log=str(d["log"]),
            started_at_ms=int(d["started_at_ms"]),
            token=str(d["token"]),
        )


@dataclass(frozen=True, slots=True)
class ServerHome:
    """The folder of the console's Connect server: its record and its log."""

    root: Path

    @classmethod
    def default(cls) -> ServerHome:
        return cls(cache_root() / "spark-connect")

    @property
    def record_path(self) -> Path:
        return self.root / "server.json"

    @property
    def log_path(self) -> Path:
        return self.root / "server.log"

    def prepare(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o700)  # the record holds the token

    def read(self) -> ServerRecord | None:
        return read_record(self.record_path, ServerRecord.from_json)

    def write(self, record: ServerRecord) -> None:
        write_record(self.record_path, record.to_json())

    def forget(self) -> None:
        self.record_path.unlink(missing_ok=True)


@dataclass(frozen=True, slots=True)
class Probe:
    """What a Spark request to the server said: the master it runs on and its Spark version,
    or why it did not answer."""

    url: str
    master: str | None = None
    spark_version: str | None = None
    error: str | None = None

    @property
    def answers(self) -> bool:
        return self.error is None


# ---- where things are -----------------------------------------------------------------------


def spark_home() -> Path:
    """The pyspark package folder: it holds bin/spark-submit and the jars, Connect's included."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise ConnectServerError("pyspark is not installed in this environment")
    return Path(next(iter(spec.submodule_search_locations)))


def find_java(env: Mapping[str, str] | None = None) -> str | None:
    """`$JAVA_HOME/bin/java`, else `java` on the PATH, as spark-class looks for it."""
    env = os.environ if env is None else env
    home = env.get("JAVA_HOME")
    if home:
        java = Path(home) / "bin" / "java"
        return str(java) if os.access(java, os.X_OK) else None
    return shutil.which("java", path=env.get("PATH", os.defpath))


def port_in_use(port: int, host: str = LOOPBACK) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def free_port(host: str = LOOPBACK) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def accepts(host: str, port: int, timeout: float = 2.0) -> bool:
    """Whether something listens there: the cheap check before a Spark request."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def connect_address(url: str) -> tuple[str, int]:
    """Host and port of an `sc://host[:port][/;params]` URL (15002 when none is given)."""
    if not url.startswith("sc://"):
        raise BadInput(f"not a Spark Connect URL: {public_url(url)!r}")
    parts = urlsplit("//" + url[len("sc://") :].split(";", 1)[0])
    try:
        port = parts.port
    except ValueError:
        raise BadInput(f"bad port in the Spark Connect URL {public_url(url)!r}") from None
    if not parts.hostname:
        raise BadInput(f"no host in the Spark Connect URL {public_url(url)!r}")
    return parts.hostname, port or DEFAULT_PORT


def public_url(url: str) -> str:
    """The URL without its `;key=value` parameters: one may be a token, never shown."""
    return url.split(";", 1)[0].rstrip("/")


def is_our_server(pid: int) -> bool:
    """The pid runs the Connect server (a recycled pid is not); where /proc cannot be read,
    a live pid is taken at its word."""
    try:
        return SERVER_CLASS.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return not Path("/proc/self").exists() and pid_alive(pid)
    except OSError:
        return pid_alive(pid)


# ---- start, stop, look ----------------------------------------------------------------------


def running(home: ServerHome) -> ServerRecord | None:
    """The recorded server if its process is still alive (a stale record is removed)."""
    record = home.read()
    if record is None:
        return None
    if pid_alive(record.pid) and is_our_server(record.pid):
        return record
    home.forget()
    return None


def start(
    home: ServerHome,
    *,
    master: str = "local[*]",
    port: int = DEFAULT_PORT,
    conf: Mapping[str, str] | None = None,
    python: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = START_TIMEOUT_S,
) -> ServerRecord:
    """Start the server and wait until it listens; `port` 0 takes any free port.

    `python` is the interpreter of the server's Python workers (the one that runs the plan
    job's UDFs): this one by default, where `console` and `jobs` import. Raises PortBusy,
    JavaMissing, ServerDied or ConnectServerError."""
    if master.startswith("sc://"):
        raise ConnectServerError(
            f"the server runs Spark itself: give it local[*] or a spark:// master, not {master}"
        )
    already = running(home)
    if already is not None:
        raise ConnectServerError(
            f"a Spark Connect server is already running at {already.url} "
            f"(pid {already.pid}, master {already.master}); stop it first: rmq-console spark down"
        )
    base_env = dict(os.environ if env is None else env)
    java = find_java(base_env)
    if java is None:
        raise JavaMissing(
            "Java was not found (no $JAVA_HOME/bin/java, no java on the PATH): Spark needs a "
            "Java 17 or newer runtime; install one or set JAVA_HOME"
        )
    if port == 0:
        port = free_port()
    elif port_in_use(port):
        raise PortBusy(
            f"port {port} on {LOOPBACK} is in use by another program: choose another with "
            "--port PORT (or --port 0 for any free port)"
        )
    home.prepare()
    token = secrets.token_urlsafe(32)
    interpreter = python or sys.executable
    run_env = {
        **base_env,
        "SPARK_HOME": str(spark_home()),
        "SPARK_CONNECT_MODE": "0",
        # Executors' Python workers must be this interpreter, where console and jobs import.
        "PYSPARK_PYTHON": interpreter,
        "PYSPARK_DRIVER_PYTHON": interpreter,
        TOKEN_ENV: token,
    }
    for var in ("SPARK_REMOTE", "SPARK_LOCAL_REMOTE", "SPARK_CONNECT_MODE_ENABLED"):
        run_env.pop(var, None)
    if "spark.driver.memory" in (conf or {}):
        # spark-submit sizes a Connect server by SPARK_DAEMON_MEMORY first: the setting given
        # for this server wins.
        run_env.pop("SPARK_DAEMON_MEMORY", None)
    logging = home.root / "log4j2.properties"
    logging.write_text(SERVER_LOGGING)
    settings = {
        **SERVER_CONF,
        **(conf or {}),
        "spark.connect.grpc.binding.address": LOOPBACK,
        "spark.connect.grpc.binding.port": str(port),
    }
    java_options = settings.get("spark.driver.extraJavaOptions", "")
    settings["spark.driver.extraJavaOptions"] = (
        f"-Dlog4j2.configurationFile=file:{logging} {java_options}".strip()
    )
    argv = [
        str(spark_home() / "bin" / "spark-submit"),
        "--class",
        SERVER_CLASS,
        "--name",
        "rmq-console Spark Connect server",
        "--master",
        master,
    ]
    for key, value in sorted(settings.items()):
        argv += ["--conf", f"{key}={value}"]
    with home.log_path.open("ab") as log:
        log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(argv)}\n".encode())
        log.flush()
        offset = log.tell()
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives this command; a ctrl-c here does not reach it
            cwd=home.root,  # Spark's own scratch files (spark-warehouse) land here
            env=run_env,
        )
    record = ServerRecord(
        pid=proc.pid,
        port=port,
        master=master,
        log=str(home.log_path),
        started_at_ms=int(time.time() * 1000),
        token=token,
    )
    home.write(record)  # written first, so `spark down` can stop a server that is starting
    try:
        _wait_started(proc, home.log_path, offset, port, timeout)
    except BaseException:
        terminate(proc.pid, STOP_TIMEOUT_S)
        proc.wait()
        home.forget()
        raise
    return record


def _wait_started(
    proc: subprocess.Popen[bytes], log: Path, offset: int, port: int, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            code = proc.wait(0.25)  # returns at once if the server dies
        except subprocess.TimeoutExpired:
            pass
        else:
            raise ServerDied(
                f"the Spark Connect server exited during start (exit code {code}); "
                f"the end of its log ({log}):\n{log_tail(log, offset)}"
            )
        if STARTED in _read_from(log, offset) and accepts(LOOPBACK, port):
            return
        if time.monotonic() > deadline:
            raise ConnectServerError(
                f"the Spark Connect server did not start within {timeout:.0f}s; it was stopped. "
                f"The end of its log ({log}):\n{log_tail(log, offset)}"
            )


def stop(home: ServerHome, timeout: float = STOP_TIMEOUT_S) -> ServerRecord | None:
    """Stop the recorded server (and the Python workers it started); None if none runs."""
    record = running(home)
    if record is None:
        return None
    terminate(record.pid, timeout)
    home.forget()
    return record


def terminate(pid: int, timeout: float) -> None:
    """SIGTERM to the server's process group (the JVM leads it: we started it in a session of
    its own, its Python workers are in it), SIGKILL if it outlasts `timeout`."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        if _reap(pid):
            return
        time.sleep(0.1)
    if pid_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        _reap(pid)


def _reap(pid: int) -> bool:
    """Collect the exit of a child of ours (a server started by this process), so it does not
    linger as a zombie that still counts as alive; other processes are not ours to wait on."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return done == pid


def probe(
    url: str,
    *,
    env: Mapping[str, str] | None = None,
    python: str | None = None,
    timeout: float = PROBE_TIMEOUT_S,
) -> Probe:
    """Ask the server a Spark question (its master and version) from a child process: the
    console does not import pyspark. `env` adds to this process's environment (the token)."""
    shown = public_url(url)
    try:
        host, port = connect_address(url)
    except ValueError as exc:
        return Probe(shown, error=str(exc).replace(url, shown))
    if not accepts(host, port):
        return Probe(shown, error=f"nothing listens on {host}:{port}")
    child_env = {**os.environ, **(env or {})}
    try:
        done = subprocess.run(
            [python or sys.executable, "-m", "jobs.probe"],
            input=url,  # the URL may carry a token: not in argv
            capture_output=True,
            text=True,
            timeout=timeout,
            env=child_env,
        )
    except subprocess.TimeoutExpired:
        return Probe(shown, error=f"no answer to a Spark request within {timeout:.0f}s")
    try:
        answer = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        reason = (done.stderr.strip().splitlines() or ["the probe printed nothing"])[-1]
        return Probe(shown, error=reason[:300])
    if "error" in answer:
        return Probe(shown, error=str(answer["error"]))
    return Probe(shown, master=str(answer["master"]), spark_version=str(answer["spark_version"]))


# ---- logs -----------------------------------------------------------------------------------


def _read_from(path: Path, offset: int) -> str:
    try:
        with path.open("rb") as f:
            f.seek(offset)
            return f.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""


def log_tail(path: Path, offset: int = 0, lines: int = LOG_TAIL_LINES) -> str:
    """The last lines written since `offset`, indented, without Java stack frames: the
    exception's own line is what says why."""
    text = _read_from(path, offset).rstrip().splitlines()
    kept = [line for line in text if not _STACK_FRAME.match(line)]
    return "\n".join(f"  {line}" for line in kept[-lines:]) or "  (nothing was logged)"
