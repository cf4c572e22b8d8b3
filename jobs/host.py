"""A warm SparkSession in a process of its own, serving the console's job requests.

The console (console.services.infra.spark_runner) starts `python -m jobs.host --fd N` with
stdout and stderr going to a log file (the JVM inherits them, so nothing it prints reaches the
terminal Textual draws on) and speaks the console's RPC (console.services.infra.rpc) over the
inherited socket N. The hello is the HostOptions (master, conf, warm-up); the calls are

    ready()                      -> HostInfo, once the session is up and warm
    run(job_id, job, request)    -> the job's JSON result; progress (step, stage, done, total,
                                    active, failed); JobInputError for a wrong request

Each job runs in its own thread under a Spark job group named after the job id, so progress is
read from the StatusTracker by that group and a cancel interrupts exactly that job's tasks. The
host stops when the console closes the socket (or exits).

`python -m jobs.host --listen` is the warm host of `spark up` (console.services.infra.warm_host):
its ListenOptions come pickled on stdin; it serves the same calls to every process that connects
to its Unix socket, one connection per command, and stops on SIGTERM, when its Connect server's
process is gone, or when its session no longer answers the keepalive.

One piece (over 400 lines): the child host and the warm one serve the same calls with the same
session, trackers and cancelling; what differs (who starts it, how it learns to stop) is a few
lines each, and split in two the serving would be written twice.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import re
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast

from pyspark.sql import SparkSession

from console.domain.job_requests import ImpactRequest, PlanRequest
from console.domain.plan import SnapshotInfo
from console.domain.spec import SpecError
from console.processes import pid_alive
from console.redact import redact_text
from console.services.infra.connect_server import public_url
from console.services.infra.rpc import (
    Handler,
    RemoteError,
    Reply,
    link_to_parent,
    portable_error,
    serve_listener,
    serve_threads,
)
from console.services.infra.spark_jobs import JobInputError
from console.services.infra.spark_runner import HostInfo, HostOptions
from console.services.infra.warm_host import LISTEN_FLAG, ListenOptions
from jobs.run import PlanExistsError, run_impact, run_plan
from jobs.schema import SNAPSHOT_SCHEMA
from jobs.spark_session import build_session, is_connect

POLL_S = 0.2
KEPT_JOBS = 64
#: The warm host: how often it looks for its server, and asks its session something.
WATCH_S = 1.0
KEEPALIVE_S = 300.0
#: How long a warm host whose session could not start stays to say why.
FAILED_LINGER_S = 30.0


class Cancelled(Exception):
    pass


class Tracker(Protocol):
    def begin(self, job_id: str) -> None: ...
    def cancel(self, job_id: str) -> None: ...
    def counts(self, job_id: str) -> tuple[str | None, int, int, int, int]: ...


class ClassicTracker:
    """Job group + StatusTracker (a session with a local SparkContext)."""

    def __init__(self, spark: SparkSession) -> None:
        self.sc = spark.sparkContext
        self.status = self.sc.statusTracker()

    def begin(self, job_id: str) -> None:
        # Job groups are per thread (pinned thread mode): this thread's jobs only.
        self.sc.setJobGroup(job_id, f"rmq-console {job_id}", interruptOnCancel=True)

    def cancel(self, job_id: str) -> None:
        self.sc.cancelJobGroup(job_id)

    def counts(self, job_id: str) -> tuple[str | None, int, int, int, int]:
        """(active stage name, done, total, active, failed) tasks over the group's jobs."""
        stage, done, total, active, failed = None, 0, 0, 0, 0
        for jid in self.status.getJobIdsForGroup(job_id):
            job = self.status.getJobInfo(jid)
            if job is None:
                continue
            for sid in job.stageIds:
                info = self.status.getStageInfo(sid)
                if info is None:
                    continue
                total += info.numTasks
                # A finished job's skipped stages never run their tasks: count them done.
                done += info.numTasks if job.status == "SUCCEEDED" else info.numCompletedTasks
                active += info.numActiveTasks
                failed += info.numFailedTasks
                if info.numActiveTasks:
                    stage = info.name
        return stage, done, total, active, failed


class ConnectTracker:
    """Operation tags + the progress handler (a Spark Connect session)."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self.local = threading.local()
        # job id -> operation id -> (done, total, in flight) tasks of that operation
        self.operations: dict[str, dict[str, tuple[int, int, int]]] = {}
        # The handler type lives in the Connect client package; any callable of that shape works.
        spark.registerProgressHandler(cast(Any, self._progress))

    def begin(self, job_id: str) -> None:
        self.local.job_id = job_id  # the handler runs in the thread executing the operation
        self.operations[job_id] = {}
        for old in list(self.operations)[:-KEPT_JOBS]:  # a long session forgets its oldest
            self.operations.pop(old, None)
        self.spark.addTag(job_id)  # tags are per thread: this job's operations only

    def cancel(self, job_id: str) -> None:
        self.spark.interruptTag(job_id)

    def counts(self, job_id: str) -> tuple[str | None, int, int, int, int]:
        """Tasks over the job's operations so far, like the classic count over its jobs."""
        ops = list(self.operations.get(job_id, {}).values())
        done = sum(o[0] for o in ops)
        total = sum(o[1] for o in ops)
        return None, done, total, sum(o[2] for o in ops), 0

    def _progress(
        self,
        stages: Any = None,
        inflight_tasks: int = 0,
        operation_id: str | None = None,
        done: bool = False,
        **_: Any,
    ) -> None:
        # pyspark calls handlers with keyword arguments (ProgressHandler.__call__'s names);
        # later fields arrive as further keywords.
        job_id = getattr(self.local, "job_id", None)
        if job_id is None:
            return
        stages = list(stages or [])
        total = sum(s.num_tasks for s in stages)
        finished = sum(s.num_completed_tasks for s in stages)
        # A finished operation's skipped stages never run their tasks: count them done.
        self.operations.setdefault(job_id, {})[operation_id or ""] = (
            total if done else finished,
            total,
            0 if done else inflight_tasks,
        )


Runner = Callable[[SparkSession, str, Callable[[str], None]], str]


def _plan(spark: SparkSession, text: str, step: Callable[[str], None]) -> str:
    return run_plan(spark, PlanRequest.from_json(text), step).to_json()


def _impact(spark: SparkSession, text: str, step: Callable[[str], None]) -> str:
    found = run_impact(spark, ImpactRequest.from_json(text), step)
    return json.dumps([i.to_dict() for i in found])


JOBS: dict[str, Runner] = {"plan": _plan, "impact": _impact}


class Host:
    """The jobs of one session: each `run` call on its own thread (the RPC's), its progress
    polled from the tracker and sent only when it changed."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.spark: SparkSession | None = None
        self.tracker: Tracker | None = None
        self.info: HostInfo | None = None
        self.fatal: RemoteError | None = None
        self.running: dict[str, Reply] = {}  # job id -> its call
        self.steps: dict[str, str] = {}
        self.sent: dict[str, tuple[Any, ...]] = {}
        self.stopping = threading.Event()

    def handlers(self) -> dict[str, Handler]:
        return {"ready": self.ready, "run": self.run}

    def up(self, spark: SparkSession, tracker: Tracker, info: HostInfo) -> None:
        self.spark, self.tracker, self.info = spark, tracker, info
        self.started.set()
        threading.Thread(target=self._poll, name="progress", daemon=True).start()

    def failed(self, exc: BaseException) -> None:
        self.fatal = RemoteError(type(exc).__name__, describe(exc))
        self.started.set()

    def ready(self, reply: Reply) -> HostInfo:
        """Answered once the session is up (and warm), or could not start."""
        self.started.wait()
        if self.fatal is not None:
            raise self.fatal.with_traceback(None)
        assert self.info is not None
        return self.info

    def run(self, reply: Reply, job_id: str, job: str, request: str) -> str:
        runner = JOBS.get(job)
        if runner is None:
            raise ValueError(f"no job {job}")
        self.ready(reply)
        spark, tracker = self.spark, self.tracker
        assert spark is not None
        assert tracker is not None

        def step(name: str) -> None:
            if reply.cancelled.is_set():
                raise Cancelled()
            self.steps[job_id] = name
            self._report(job_id)

        self.running[job_id] = reply
        reply.on_cancel(lambda: tracker.cancel(job_id))
        try:
            tracker.begin(job_id)
            result = runner(spark, request, step)
            self._report(job_id)
            return result
        except (SpecError, PlanExistsError) as exc:
            raise JobInputError(str(exc)) from None
        finally:
            self.running.pop(job_id, None)
            self.steps.pop(job_id, None)
            self.sent.pop(job_id, None)

    def _report(self, job_id: str) -> None:
        reply = self.running.get(job_id)
        if reply is None or self.tracker is None:
            return
        stage, done, total, active, failed = self.tracker.counts(job_id)
        progress = (self.steps.get(job_id, ""), stage, done, total, active, failed)
        if self.sent.get(job_id) != progress:  # only changes travel
            self.sent[job_id] = progress
            reply.progress(*progress)

    def _poll(self) -> None:
        while not self.stopping.wait(POLL_S):
            for job_id, reply in list(self.running.items()):
                try:
                    if reply.cancelled.is_set() and self.tracker is not None:
                        # A cancel stops the Spark jobs running then; one the job starts after
                        # it (between two of its actions) is stopped here, on the next poll.
                        self.tracker.cancel(job_id)
                    self._report(job_id)
                except Exception:  # a progress glitch must not stop the host
                    traceback.print_exc(file=sys.stderr)


def portable(exc: BaseException) -> BaseException:
    """What the console gets for a failed call: an input error as itself, anything else as its
    one-line reason (a py4j error does not pickle, and its text is a JVM stack trace)."""
    if isinstance(exc, (JobInputError, RemoteError)):
        return portable_error(exc)
    if not isinstance(exc, Cancelled):
        traceback.print_exception(exc, file=sys.stderr)
    return RemoteError(type(exc).__name__, describe(exc))


_PYTHON_ERROR = re.compile(r"^(?:[\w.]+\.)?(BrokerLookupError|SpecError|\w+Error): (.+)$", re.M)


def describe(exc: BaseException) -> str:
    """A one-line reason. Errors raised in executors arrive wrapped in a JVM stack trace; the
    Python exception's own last line is what the operator needs. Secrets known to this process
    are masked (console.redact)."""
    if isinstance(exc, Cancelled):
        return "cancelled"
    text = redact_text(str(exc))
    ours = [m for m in _PYTHON_ERROR.finditer(text) if m.group(1) == "BrokerLookupError"]
    if ours:
        return ours[-1].group(2).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # py4j: "An error occurred while calling o433.parquet." then ": <java class>: <message>"
    if lines and lines[0].startswith("An error occurred while calling") and len(lines) > 1:
        lines = lines[1:]
    first = lines[0].lstrip(": ") if lines else type(exc).__name__
    first = re.sub(r"^(?:[a-z]+\.)+[A-Z]\w*(?:Exception|Error): ", "", first)
    return first[:500]


def warm_up(spark: SparkSession) -> None:
    """Plan a four-queue snapshot once, so the console's first real plan runs on a JIT-warm
    JVM with its Parquet and shuffle code paths loaded (a cold first plan is several times
    slower)."""

    rows = [
        ("warm", "b", None, "t", q, "g", 0, 10, q, None, None, None, 0, None, 0.0, 0)
        for q in range(4)
    ]
    with tempfile.TemporaryDirectory(prefix="rmq-warm-") as tmp:
        snapshot_uri = f"file://{tmp}/snapshot.parquet"
        spark.createDataFrame(rows, SNAPSHOT_SCHEMA).write.parquet(snapshot_uri)
        request = PlanRequest(
            plan_id="warm-up",
            spec={"scope": {"cluster": "warm", "groups": ["g"]}, "strategy": {"shift-by": 1}},
            snapshot_uri=snapshot_uri,
            snapshot=SnapshotInfo("warm", "warm-up", 0),
            out_uri=f"file://{tmp}/plan",
            created_at_ms=0,
        )
        run_plan(spark, request)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == [LISTEN_FLAG]:
        # Started by `spark up`: its options come on stdin (a conf value may be a credential).
        options = pickle.load(sys.stdin.buffer)
        return serve_warm(options) if isinstance(options, ListenOptions) else 2
    link = link_to_parent(args)
    options = link.receive_hello()
    if not isinstance(options, HostOptions):
        return 2
    host = Host()
    # Calls are taken from the start: a job submitted while the session starts waits for it.
    server = threading.Thread(
        target=serve_threads,
        args=(link, host.handlers()),
        kwargs={"portable": portable},
        name="rpc",
        daemon=True,
    )
    server.start()
    # The log says where the jobs run: the master named in no argv (it comes in the hello).
    print(f"Spark host on {public_url(options.master)}", file=sys.stderr, flush=True)
    opened = _open_session(host, options, wanted=server.is_alive)
    if opened is None:
        server.join()
        return 1
    try:
        server.join()  # until the console closes the link (or exits)
        host.stopping.set()
    finally:
        opened.stop()
    return 0


def serve_warm(options: ListenOptions) -> int:
    """The warm host of `spark up`: a session on its Connect server, serving every command that
    connects to the socket, until SIGTERM (`spark down`), the server's end, or a session that
    no longer answers."""
    host = Host()
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    umask = os.umask(0o177)  # the socket is ours alone (its folder is too)
    try:
        listener.bind(options.socket)
    finally:
        os.umask(umask)
    listener.listen(16)
    threading.Thread(
        target=serve_listener,
        args=(listener, host.handlers()),
        kwargs={"portable": portable},
        name="rpc listener",
        daemon=True,
    ).start()
    master = options.host.master
    print(f"warm Spark host on {public_url(master)}", file=sys.stderr, flush=True)
    try:
        spark = _open_session(host, options.host, wanted=lambda: not stopping.is_set())
        if spark is None:
            stopping.wait(FAILED_LINGER_S)  # `spark up` asks `ready` and hears why
            return 1
        try:
            _watch(spark, options.server_pid, stopping)
        finally:
            host.stopping.set()
            spark.stop()
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            os.unlink(options.socket)
    return 0


def _watch(spark: SparkSession, server_pid: int, stopping: threading.Event) -> None:
    """Until asked to stop: end with the server's process, and keep the session alive on the
    server (it drops a session that sent nothing for an hour) with a small request now and
    then; a session that does not answer it ends the host, so commands start their own."""
    last = time.monotonic()
    while not stopping.wait(WATCH_S):
        if not pid_alive(server_pid):
            print("the Spark Connect server is gone: stopping", file=sys.stderr, flush=True)
            return
        if time.monotonic() - last >= KEEPALIVE_S:
            try:
                spark.conf.get("spark.sql.session.timeZone")
            except Exception as exc:
                print(f"the session does not answer ({describe(exc)}): stopping", file=sys.stderr)
                return
            last = time.monotonic()


def _open_session(
    host: Host, options: HostOptions, *, wanted: Callable[[], bool]
) -> SparkSession | None:
    """Build the session, warm it up (when asked and still `wanted`) and open the host's doors;
    None when it could not start (the host's `ready` then says why)."""
    try:
        spark = build_session(options.master, conf=options.conf)
        tracker: Tracker = (
            ConnectTracker(spark) if is_connect(options.master) else ClassicTracker(spark)
        )
    except BaseException as exc:  # reported to the console, which then closes the link
        traceback.print_exc(file=sys.stderr)
        host.failed(exc)
        return None
    try:
        if not is_connect(options.master):
            spark.sparkContext.setLogLevel("WARN")
        if options.warm_up and wanted():
            try:
                warm_up(spark)
            except Exception:  # a failed warm-up only costs speed; the real job will report
                traceback.print_exc(file=sys.stderr)
        host.up(spark, tracker, HostInfo(options.master, spark.version))
    except BaseException:
        spark.stop()
        raise
    return spark


if __name__ == "__main__":
    raise SystemExit(main())
