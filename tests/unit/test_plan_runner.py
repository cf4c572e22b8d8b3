"""The console's side of the Spark host, without Spark: job handles, a host that dies, and the
one-line reasons the host sends back."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from console.services.infra.spark_jobs import JobFailed, JobInputError, JobProgress, JobState
from console.services.infra.spark_runner import JobHandle, SparkRunner


def test_a_handle_settles_once_and_reports_progress() -> None:
    seen: list[JobProgress] = []
    cancelled = threading.Event()
    handle = JobHandle("j", seen.append, cancel=cancelled.set)
    handle.report(JobProgress("j", JobState.RUNNING, "computing", None, 1, 4))
    assert seen[0].fraction == 0.25
    assert JobProgress("j", JobState.QUEUED).fraction is None
    with pytest.raises(TimeoutError):
        handle.result(0)
    handle.cancel()
    assert cancelled.is_set()
    handle.settle("{}", None)
    handle.settle(None, JobInputError("late"))  # ignored: a handle settles once
    assert handle.done()
    assert handle.result(0) == "{}"


def test_a_failed_handle_raises_its_error_to_asyncio_waiters() -> None:
    handle = JobHandle("j")

    async def wait() -> str:
        task = asyncio.ensure_future(handle.wait())
        await asyncio.sleep(0)  # let the waiter register before the job settles
        threading.Thread(target=handle.settle, args=(None, JobInputError("scope: no"))).start()
        return await task

    with pytest.raises(JobInputError, match="scope: no"):
        asyncio.run(wait())


def test_cancelling_the_waiting_task_cancels_the_job() -> None:
    cancelled = threading.Event()
    handle = JobHandle("j", cancel=cancelled.set)

    async def wait_then_cancel() -> None:
        task = asyncio.ensure_future(handle.wait())
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(wait_then_cancel())
    assert cancelled.is_set()


def test_a_host_that_cannot_start_fails_readiness_and_jobs(tmp_path: Path) -> None:
    # json.tool rejects the host's arguments and exits at once: a host that died on start-up.
    runner = SparkRunner(log_path=tmp_path / "host.log", host_module="json.tool")
    with runner:
        with pytest.raises(JobFailed, match="Spark could not start: the Spark host exited"):
            runner.wait_ready(60)
        with pytest.raises(JobFailed, match="cannot run plan: the Spark host exited"):
            runner.submit("plan", "{}")
    log = (tmp_path / "host.log").read_text()
    assert "-m json.tool --fd" in log  # the launch line, then the child's own complaint
    assert "usage:" in log


def test_reasons_from_the_host_are_one_line() -> None:
    from jobs.host import Cancelled, describe

    java = (
        "An error occurred while calling o433.parquet.\n"
        ": org.apache.spark.SparkException: [FAILED_READ_FILE] Cannot read file x.\n"
        "\tat org.apache.spark.sql.Dataset.collect(Dataset.scala:1)\n"
    )
    assert describe(RuntimeError(java)) == "[FAILED_READ_FILE] Cannot read file x."
    executor = (
        "An exception was thrown from the Python worker. Please see the stack trace below.\n"
        "Traceback (most recent call last):\n"
        '  File "/work/main/jobs/timestamps.py", line 70, in one\n'
        "jobs.timestamps.BrokerLookupError: broker-a (10.0.0.1:10911) could not find the "
        "offset at 5 on orders:3: timeout\n"
        "\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException\n"
    )
    assert describe(RuntimeError(executor)) == (
        "broker-a (10.0.0.1:10911) could not find the offset at 5 on orders:3: timeout"
    )
    assert describe(Cancelled()) == "cancelled"
    assert describe(RuntimeError("")) == "RuntimeError"


def test_a_cancel_also_stops_the_jobs_a_cancelled_job_starts_after_it() -> None:
    """A job cancelled between two of its Spark actions starts the second after the cancel
    reached Spark: the host cancels a cancelled job's group again until the job returns."""
    from jobs import host

    class Recording:
        def __init__(self) -> None:
            self.cancels: list[str] = []

        def begin(self, job_id: str) -> None: ...

        def cancel(self, job_id: str) -> None:
            self.cancels.append(job_id)

        def counts(self, job_id: str) -> tuple[str | None, int, int, int, int]:
            return None, 0, 0, 0, 0

    class Call:
        def __init__(self, cancelled: bool) -> None:
            self.cancelled = threading.Event()
            if cancelled:
                self.cancelled.set()

        def progress(self, *values: object) -> None: ...

    served = host.Host()
    tracker = Recording()
    served.tracker = tracker
    served.running = {"gone": Call(True), "going": Call(False)}  # type: ignore[dict-item]
    poll = threading.Thread(target=served._poll)
    poll.start()
    try:
        deadline = time.monotonic() + 10
        while tracker.cancels.count("gone") < 3 and time.monotonic() < deadline:
            time.sleep(host.POLL_S)
    finally:
        served.stopping.set()
        poll.join()
    assert tracker.cancels.count("gone") >= 3
    assert "going" not in tracker.cancels
