"""A warm SparkSession in a process of its own, serving the console's job requests.

The console starts `python -m jobs.host --fd N --master M` with stdout and stderr going to a
log file (the JVM inherits them, so nothing it prints reaches the terminal Textual draws on)
and talks to it over the inherited socket N: JSON messages, one per frame.

    console → host   {"op": "run", "id", "job": "plan" | "impact", "request": <json text>}
                     {"op": "cancel", "id"}        {"op": "stop"}
    host → console   {"event": "ready", "master", "spark_version"}
                     {"event": "progress", "id", "step", "stage", "done", "total", "active",
                      "failed"}
                     {"event": "done", "id", "result": <json text>}
                     {"event": "failed", "id", "kind": "input" | "cancelled" | "error",
                      "message"}
                     {"event": "fatal", "message"}   (the session could not start)

Each job runs in its own thread under a Spark job group named after the job id, so progress is
read from the StatusTracker by that group and a cancel interrupts exactly that job's tasks.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any, Protocol, cast

from pyspark.sql import SparkSession

from console.domain.job_requests import ImpactRequest, PlanRequest
from console.domain.spec import SpecError
from jobs.run import PlanExistsError, run_impact, run_plan
from jobs.session import build_session, is_connect

POLL_S = 0.2
KEPT_JOBS = 64


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
    def __init__(self, conn: Connection, spark: SparkSession, tracker: Tracker) -> None:
        self.conn = conn
        self.spark = spark
        self.tracker = tracker
        self.lock = threading.Lock()
        self.running: dict[str, threading.Event] = {}  # job id -> cancel flag
        self.steps: dict[str, str] = {}
        self.sent: dict[str, dict[str, Any]] = {}
        self.stopping = threading.Event()

    def send(self, message: dict[str, Any]) -> None:
        with self.lock:
            self.conn.send_bytes(json.dumps(message).encode())

    def serve(self) -> None:
        poller = threading.Thread(target=self._poll, name="progress", daemon=True)
        poller.start()
        while True:
            try:
                message = json.loads(self.conn.recv_bytes())
            except (EOFError, OSError):
                break  # the console went away: nothing left to serve
            op = message.get("op")
            if op == "run":
                self._start(str(message["id"]), str(message["job"]), str(message["request"]))
            elif op == "cancel":
                self._cancel(str(message["id"]))
            elif op == "stop":
                break
        self.stopping.set()
        for job_id in list(self.running):
            self._cancel(job_id)

    def _start(self, job_id: str, job: str, request: str) -> None:
        runner = JOBS.get(job)
        if runner is None:
            self.send(
                {"event": "failed", "id": job_id, "kind": "error", "message": f"no job {job}"}
            )
            return
        self.running[job_id] = threading.Event()
        threading.Thread(
            target=self._run, args=(job_id, runner, request), name=f"job-{job_id}", daemon=True
        ).start()

    def _cancel(self, job_id: str) -> None:
        flag = self.running.get(job_id)
        if flag is not None:
            flag.set()
            self.tracker.cancel(job_id)

    def _run(self, job_id: str, runner: Runner, request: str) -> None:
        flag = self.running[job_id]

        def step(name: str) -> None:
            if flag.is_set():
                raise Cancelled()
            self.steps[job_id] = name
            self._report(job_id)

        try:
            self.tracker.begin(job_id)
            result = runner(self.spark, request, step)
            self._report(job_id)
            self.send({"event": "done", "id": job_id, "result": result})
        except (SpecError, PlanExistsError) as exc:
            self.send({"event": "failed", "id": job_id, "kind": "input", "message": str(exc)})
        except BaseException as exc:  # every failure goes back to the console
            kind = "cancelled" if flag.is_set() else "error"
            if kind == "error":
                traceback.print_exc(file=sys.stderr)
            self.send({"event": "failed", "id": job_id, "kind": kind, "message": describe(exc)})
        finally:
            self.running.pop(job_id, None)
            self.steps.pop(job_id, None)
            self.sent.pop(job_id, None)

    def _report(self, job_id: str) -> None:
        stage, done, total, active, failed = self.tracker.counts(job_id)
        message = {
            "event": "progress",
            "id": job_id,
            "step": self.steps.get(job_id, ""),
            "stage": stage,
            "done": done,
            "total": total,
            "active": active,
            "failed": failed,
        }
        if self.sent.get(job_id) != message:  # only changes travel
            self.sent[job_id] = message
            self.send(message)

    def _poll(self) -> None:
        while not self.stopping.wait(POLL_S):
            for job_id in list(self.running):
                try:
                    self._report(job_id)
                except Exception:  # a progress glitch must not stop the host
                    traceback.print_exc(file=sys.stderr)


_PYTHON_ERROR = re.compile(r"^(?:[\w.]+\.)?(BrokerLookupError|SpecError|\w+Error): (.+)$", re.M)


def describe(exc: BaseException) -> str:
    """A one-line reason. Errors raised in executors arrive wrapped in a JVM stack trace; the
    Python exception's own last line is what the operator needs."""
    if isinstance(exc, Cancelled):
        return "cancelled"
    text = str(exc)
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
    from console.domain.plan import SnapshotInfo
    from jobs.schema import SNAPSHOT_SCHEMA

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
    parser = argparse.ArgumentParser(prog="python -m jobs.host")
    parser.add_argument("--fd", type=int, required=True, help="socket inherited from the console")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--no-warm-up", action="store_true", help="report ready when started")
    args = parser.parse_args(argv)
    conn = Connection(args.fd)
    conf = dict(item.split("=", 1) for item in args.conf)
    try:
        spark = build_session(args.master, conf=conf)
        tracker: Tracker = (
            ConnectTracker(spark) if is_connect(args.master) else ClassicTracker(spark)
        )
    except BaseException as exc:  # reported to the console, then exit
        traceback.print_exc(file=sys.stderr)
        conn.send_bytes(json.dumps({"event": "fatal", "message": describe(exc)}).encode())
        return 1
    if not is_connect(args.master):
        spark.sparkContext.setLogLevel("WARN")
    if not args.no_warm_up:
        try:
            warm_up(spark)
        except Exception:  # a failed warm-up only costs speed; the real job will report
            traceback.print_exc(file=sys.stderr)
    conn.send_bytes(
        json.dumps(
            {"event": "ready", "master": args.master, "spark_version": spark.version}
        ).encode()
    )
    try:
        Host(conn, spark, tracker).serve()
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
