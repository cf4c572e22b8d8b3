"""What a Spark job is to the doors that run it: its state and progress, and how it fails (the
wrong request, a cancel, a failure). Light, so that a door can name them without starting or
importing the Spark host's client (console/services/infra/spark_runner.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from console.errors import UserError


class JobState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class JobProgress:
    """Where a job is: the job's own step, the Spark stage running, and task counts."""

    job_id: str
    state: JobState
    step: str = ""
    stage: str | None = None
    done: int = 0
    total: int = 0
    active: int = 0
    failed: int = 0

    @property
    def fraction(self) -> float | None:
        """Tasks done over tasks known; None before Spark has planned any."""
        return self.done / self.total if self.total else None


ProgressCallback = Callable[[JobProgress], object]


class JobError(Exception):
    """A job did not produce its result."""


class JobInputError(JobError, UserError):
    """The request was wrong (a spec naming an unknown group, a bad line in a file, …);
    the message names the field or line. Nothing was written."""


class JobCancelled(JobError):
    pass


class JobFailed(JobError):
    def __init__(self, message: str, log: Path | None = None) -> None:
        super().__init__(f"{message} (Spark log: {log})" if log else message)
        self.log = log
