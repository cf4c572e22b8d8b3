"""A JobRunner that runs jobs on the test session, in a thread, the way the host does."""

from __future__ import annotations

import itertools
import threading

from pyspark.sql import SparkSession

from console.domain.spec import SpecError
from console.services.infra.spark_jobs import (
    JobFailed,
    JobInputError,
    JobProgress,
    JobState,
    ProgressCallback,
)
from console.services.infra.spark_runner import JobHandle
from jobs.host import JOBS
from jobs.run import PlanExistsError


class InlineRunner:
    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self.ids = itertools.count(1)
        self.submitted: list[str] = []

    def submit(
        self, job: str, request: str, on_progress: ProgressCallback | None = None
    ) -> JobHandle:
        handle = JobHandle(f"inline-{next(self.ids)}", on_progress)
        self.submitted.append(job)

        def step(name: str) -> None:
            handle.report(JobProgress(handle.job_id, JobState.RUNNING, step=name))

        def run() -> None:
            try:
                result = JOBS[job](self.spark, request, step)
            except (SpecError, PlanExistsError) as exc:
                handle.settle(None, JobInputError(str(exc)))
            except Exception as exc:  # the host reports every failure the same way
                handle.settle(None, JobFailed(str(exc)))
            else:
                handle.settle(result, None)

        threading.Thread(target=run, daemon=True).start()
        return handle
