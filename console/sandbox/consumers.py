"""The sandbox's real consumers, run as child JVMs: SandboxConsumer.java (the remoting client's
push consumer, in POP mode too), GrpcConsumer.java (the gRPC client's SimpleConsumer, through
the proxy) and LiteClient.java (a lite producer and a LitePushConsumer, through the proxy, told
what to do on its stdin)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import RocketMQError
from console.rocketmq.models import MessageModel
from console.rocketmq.topics import retry_topic
from console.sandbox.errors import StartupError
from console.sandbox.jvm import JvmOptions, java_argv, jvm_env
from console.sandbox.pidfile import PidFile
from console.sandbox.proc import LaunchSpec, ManagedProcess, log_tail
from console.sandbox.scenario import GroupPlan

READY_LINE = "READY"


class ProgramSpec(Protocol):
    """What a consumer JVM runs: its main class and arguments, and a unique process name."""

    main_class: ClassVar[str]

    @property
    def name(self) -> str: ...

    def program_args(self, namesrv: str, offset_dir: Path) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class ConsumerSpec:
    """What one SandboxConsumer process does; see SandboxConsumer.java for the behaviour."""

    main_class: ClassVar[str] = "SandboxConsumer"

    name: str  # process name in the pidfile and log file name; unique in a sandbox
    group: str
    topics: tuple[str, ...]
    model: MessageModel = MessageModel.CLUSTERING
    sleep_ms: int = 0  # per message: a slow consumer keeps its lag above zero
    fail_every: int = 0  # RECONSUME_LATER for every Nth delivery: fills %RETRY%<group>
    max_reconsume: int | None = None  # small values send failing messages to %DLQ%<group>
    threads: int = 1
    orderly: bool = False  # MessageListenerOrderly: a failed message holds up its queue
    poison_key: str | None = None  # every delivery of a message with this key fails
    pull_batch: int | None = None  # pullBatchSize; None: SandboxConsumer's default (4)
    pull_threshold: int | None = None  # pullThresholdForQueue; None: its default (12)
    pop: bool = False  # POP mode, as the brokers assign it (the group set to POP on them)
    hold: bool = False  # never ack: whatever the client is handed stays unacknowledged

    def program_args(self, namesrv: str, offset_dir: Path) -> list[str]:
        args = [
            "--namesrv", namesrv,
            "--group", self.group,
            "--topic", ",".join(self.topics),
            "--model", self.model.value,
            "--sleep-ms", str(self.sleep_ms),
            "--fail-every", str(self.fail_every),
            "--threads", str(self.threads),
            "--instance", self.name,
            "--offset-dir", str(offset_dir),
        ]  # fmt: skip
        if self.max_reconsume is not None:
            args += ["--max-reconsume", str(self.max_reconsume)]
        if self.orderly:
            args += ["--orderly", "true"]
        if self.poison_key is not None:
            args += ["--poison-key", self.poison_key]
        if self.pull_batch is not None:
            args += ["--pull-batch", str(self.pull_batch)]
        if self.pull_threshold is not None:
            args += ["--pull-threshold", str(self.pull_threshold)]
        if self.pop:
            args += ["--pop", "true"]
        if self.hold:
            args += ["--hold", "true"]
        return args


@dataclass(frozen=True, slots=True)
class GrpcConsumerSpec:
    """What one GrpcConsumer process does (a SimpleConsumer through the proxy at `proxy`, its
    gRPC address); see GrpcConsumer.java."""

    main_class: ClassVar[str] = "GrpcConsumer"

    name: str
    group: str
    topic: str
    proxy: str
    hold: int = 0  # the first `hold` messages received are never acked
    ssl: bool = False  # TLS to the proxy (which takes no client certificate on gRPC)

    def program_args(self, namesrv: str, offset_dir: Path) -> list[str]:
        return [
            "--proxy", self.proxy,
            "--group", self.group,
            "--topic", self.topic,
            "--hold", str(self.hold),
            "--ssl", "true" if self.ssl else "false",
        ]  # fmt: skip


@dataclass(frozen=True, slots=True)
class LiteClientSpec:
    """One LiteClient process: a producer of the parent topic `topic`'s lite topics, and the
    LitePushConsumer of `group` bound to it, through the proxy at `proxy` (its gRPC address);
    see LiteClient.java for the commands it takes (JavaConsumer.command)."""

    main_class: ClassVar[str] = "LiteClient"

    name: str
    group: str
    topic: str
    proxy: str
    ssl: bool = False

    def program_args(self, namesrv: str, offset_dir: Path) -> list[str]:
        return [
            "--proxy", self.proxy,
            "--group", self.group,
            "--topic", self.topic,
            "--ssl", "true" if self.ssl else "false",
        ]  # fmt: skip


class JavaConsumer:
    """One running SandboxConsumer; it stops on stdin EOF, so it dies with its parent."""

    def __init__(
        self,
        spec: ProgramSpec,
        *,
        java: Path,
        classpath: str,
        namesrv: str,
        run_dir: Path,
        pidfile: PidFile | None = None,
        jvm: JvmOptions | None = None,
    ) -> None:
        self.spec = spec
        self.workdir = run_dir / "consumers" / spec.name
        # Broadcasting consumers keep their offsets here, not in ~/.rocketmq_offsets.
        self.offset_dir = self.workdir / "offsets"
        self.log = self.workdir / f"{spec.name}.out"
        argv = java_argv(
            java,
            classpath,
            spec.main_class,
            spec.program_args(namesrv, self.offset_dir),
            options=jvm or JvmOptions(heap_mb=96),
            home=self.workdir / "home",
        )
        launch = LaunchSpec(
            name=f"consumer-{spec.name}",
            argv=argv,
            log=self.log,
            cwd=self.workdir,
            env=jvm_env(run_dir / "rocketmq-home"),
            stdin_pipe=True,
        )
        self.process = ManagedProcess(launch, pidfile)
        self._log_start = 0

    @property
    def pid(self) -> int | None:
        return self.process.pid

    @property
    def running(self) -> bool:
        return self.process.running

    async def start(self, timeout: float = 120.0, attempts: int = 3) -> None:
        """Start the JVM and wait until it printed READY (its output goes to a log file); a
        JVM started with several others on a loaded machine has taken over a minute.

        The Java client gives up for good when its very first name-server request fails (seen
        on a heavily loaded machine), so a consumer that exits before READY is started again.
        """
        self.workdir.mkdir(parents=True, exist_ok=True)
        for attempt in range(1, attempts + 1):
            if await self._start_once(timeout):
                return
            if attempt == attempts:
                raise StartupError(
                    f"consumer {self.spec.name} exited with code {self.process.returncode} "
                    f"({attempts} attempts)\n" + log_tail(self.log)
                )
            self.process.stop_now(0.0)  # reap it and take it off the pidfile

    async def _start_once(self, timeout: float) -> bool:
        """True once READY; False if the JVM exited first; StartupError on timeout."""
        # The log is appended to across restarts: only a READY printed after this start counts.
        self._log_start = self.log.stat().st_size if self.log.exists() else 0
        self.process.start()
        deadline = time.monotonic() + timeout
        while not self._ready():
            if not self.process.running:
                return False
            if time.monotonic() >= deadline:
                await self.process.stop(5.0)
                raise StartupError(
                    f"consumer {self.spec.name} not READY after {timeout:.0f}s\n"
                    + log_tail(self.log)
                )
            await asyncio.sleep(0.1)
        return True

    async def stop(self, grace: float = 20.0) -> None:
        await self.process.stop(grace)

    async def command(self, line: str, timeout: float = 60.0) -> None:
        """Tell a program that takes commands on its stdin (LiteClient.java) to do `line`, and
        wait until it printed "OK <line>"; StartupError when it printed "FAILED <line>: why",
        exited, or said nothing in `timeout` seconds."""
        start = self.log.stat().st_size if self.log.exists() else 0
        self.process.write_line(line)
        deadline = time.monotonic() + timeout
        while True:
            said = self._answer(start, line)
            if said is not None:
                if said.startswith("OK "):
                    return
                raise StartupError(f"{self.spec.name}: {said}\n" + log_tail(self.log))
            if not self.process.running or time.monotonic() >= deadline:
                raise StartupError(
                    f"{self.spec.name} did not do {line!r} in {timeout:.0f}s\n" + log_tail(self.log)
                )
            await asyncio.sleep(0.1)

    def _answer(self, start: int, line: str) -> str | None:
        try:
            with self.log.open("rb") as log:
                log.seek(start)
                text = log.read().decode(errors="replace")
        except OSError:
            return None
        for said in text.splitlines():
            if said.strip() == f"OK {line}" or said.startswith(f"FAILED {line}:"):
                return said.strip()
        return None

    def _ready(self) -> bool:
        try:
            with self.log.open("rb") as log:
                log.seek(self._log_start)
                text = log.read().decode(errors="replace")
        except OSError:
            return False
        return any(line.strip() == READY_LINE for line in text.splitlines())


async def wait_online(
    admin: AdminClient, brokers: Mapping[str, str], groups: list[str], timeout: float = 45.0
) -> None:
    """Wait until every group has a connection on every broker.

    READY means the Java consumer started, not that each broker has seen its first heartbeat;
    callers of the sandbox expect "online" to be true everywhere once it is up.
    """
    deadline = time.monotonic() + timeout
    while True:
        missing = []
        for group in groups:
            for name, addr in brokers.items():
                try:
                    online = bool((await admin.consumer_connections(addr, group)).clients)
                except RocketMQError:
                    online = False
                if not online:
                    missing.append(f"{group}@{name}")
        if not missing:
            return
        if time.monotonic() >= deadline:
            raise StartupError(f"consumers not online after {timeout:.0f}s: {', '.join(missing)}")
        await asyncio.sleep(0.25)


RETRY_QUEUES = 1  # retryQueueNums of every seeded group (the broker's default)


async def wait_committed(
    admin: AdminClient,
    brokers: Mapping[str, str],
    plans: Sequence[GroupPlan],
    queues_per_broker: Mapping[str, int],
    timeout: float = 60.0,
) -> None:
    """Wait until every live CLUSTERING group has committed an offset on every queue of its
    topic and of its retry topic.

    A push consumer commits every few seconds after it starts; until then the broker has no
    offset for it, the "online with lag" group reads as unknown, and two readings a moment apart
    (the console's and mqadmin's) disagree about which queues the group has.
    """
    wanted = [
        (p.name, topic, addr, q)
        for p in plans
        if p.model is MessageModel.CLUSTERING
        for addr in brokers.values()
        for topic, count in (
            (p.topic, queues_per_broker[p.topic]),
            (retry_topic(p.name), RETRY_QUEUES),
        )
        for q in range(count)
    ]
    deadline = time.monotonic() + timeout
    while True:
        answers = await asyncio.gather(
            *(admin.query_consumer_offset(a, g, t, q) for g, t, a, q in wanted),
            return_exceptions=True,
        )
        missing = [w for w, a in zip(wanted, answers, strict=True) if not isinstance(a, int)]
        if not missing:
            return
        if time.monotonic() >= deadline:
            shown = ", ".join(f"{g} {t}@{a}:{q}" for g, t, a, q in missing[:6])
            raise StartupError(f"live consumers committed nothing after {timeout:.0f}s: {shown}")
        await asyncio.sleep(0.25)
