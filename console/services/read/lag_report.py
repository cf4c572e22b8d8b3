"""A group's lag over a window, as the chart and `rmq-console history --lag` show it: the stored
points, the applies and undos of the group in that window (from the journals), and the Burrow
evaluation of the window (the rules of triage.py, over the stored points)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from console.domain.journal import ApplyStatus, Journal, JournalError, QueueState
from console.domain.lag import LagSeries, Mark
from console.domain.plan import parse_stamp
from console.domain.triage import Verdict, evaluate_points
from console.services.infra.journal_store import JournalStore
from console.services.read.lag_history import DAY_MS, HOUR_MS, LagHistory

#: The chart's windows, in the order its key steps through them.
WINDOWS_MS: tuple[int, ...] = (HOUR_MS, DAY_MS)
_STAMP_LEN = len("20261122T030101123Z")


@dataclass(frozen=True, slots=True)
class LagReport:
    cluster: str
    group: str
    since_ms: int
    until_ms: int
    series: LagSeries
    marks: tuple[Mark, ...]
    verdict: Verdict

    @property
    def partial(self) -> bool:
        """The newest point lacks parts, or nothing could be read at it: what the window ends
        on is a lower bound or unknown."""
        newest = self.series.newest
        return newest is not None and (newest.partial or newest.total_lag is None)


def lag_report(
    history: LagHistory,
    cluster: str,
    group: str,
    *,
    since_ms: int,
    until_ms: int,
    journals: Path | None = None,
) -> LagReport:
    """The report of one window; `journals` is the workspace root whose journals mark it."""
    series = history.series(cluster, group, since_ms, until_ms)
    marks = journal_marks(journals, cluster, group, since_ms, until_ms) if journals else ()
    return LagReport(
        cluster, group, since_ms, until_ms, series, marks, evaluate_points(series.points)
    )


def journal_marks(
    root: Path, cluster: str, group: str, since_ms: int, until_ms: int
) -> tuple[Mark, ...]:
    """The applies and undos of `group` on `cluster` that started in the window, oldest first.
    Journal ids start with their start time, so only the window's journals are opened."""
    store = JournalStore(root)
    if not store.dir.is_dir():
        return ()
    marks = []
    for path in sorted(store.dir.glob("*.json")):
        started = parse_stamp(path.name[:_STAMP_LEN])
        if started is None or not since_ms <= started <= until_ms:
            continue
        try:
            journal = store.load(path.name.removesuffix(".json"))
        except (JournalError, OSError):
            continue  # `history` lists an unreadable journal; the chart marks what it can read
        if journal.cluster == cluster and group in journal.groups:
            marks.append(_mark(store, journal, group))
    return tuple(sorted(marks, key=lambda m: m.at_ms))


def _mark(store: JournalStore, j: Journal, group: str) -> Mark:
    status = str(j.status)
    if j.status is ApplyStatus.RUNNING and not store.running(j.apply_id):
        status = "interrupted"
    mine = [q for q in j.queues if q.group == group]
    verified = sum(1 for q in mine if q.state is QueueState.VERIFIED)
    return Mark(j.started_at_ms, j.kind, j.apply_id, status, len(mine), verified)
