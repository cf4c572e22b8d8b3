"""One refresh of the group list, worked on as its reads come in.

The network process hands a refresh's reads over in parts while it is still reading
(`ClusterOperations.read_groups`'s `parts`), and they are taken here on the link's reader thread.
Each group's read is accounted, added to its refresh window and, on the list's first refresh,
judged and made into its row there and then: on two cores, this process does it while the other
one is still reading. Done after the last read, for 10,000 groups, it held the lags off the screen
for over a second (their samples ~0.5 s, the status rules ~0.3 s, the rows).

`take` is called with one part at a time (the parts of one call come in order on one thread, and
the answer, which holds whatever no part carried, after them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from console.domain import lag_trend, readings, triage
from console.domain.offsets import GroupOffsets
from console.domain.triage import GroupSummary
from console.services.read.cluster_session import ClusterSession
from console.ui.widgets.tablemodel import Row


class RefreshIntake:
    def __init__(
        self,
        session: ClusterSession,
        first_row: Callable[[GroupSummary], Row] | None = None,
    ) -> None:
        self._session = session
        #: On the list's first refresh: a group's row as shown before its time behind is asked.
        self._first_row = first_row
        #: Every group's read or the error reading it, as taken.
        self.read: dict[str, GroupOffsets | Exception] = {}
        #: Each group's refresh window, its last sample the read as accounted (see
        #: ClusterSession.account).
        self.windows: dict[str, tuple[readings.Sample, ...]] = {}
        #: With `first_row`: each group's summary (no time behind yet) and its row.
        self.first: dict[str, tuple[GroupSummary, Row]] = {}

    def take(self, part: Mapping[str, GroupOffsets | Exception]) -> None:
        session = self._session

        for name, answer in part.items():
            self.read[name] = answer
            if not isinstance(answer, GroupOffsets):
                continue
            window = self.windows[name] = session.refreshes.add(session.account(answer))
            if self._first_row is not None:
                summary = triage.summarize(window, {})
                self.first[name] = (summary, self._first_row(summary))

    def unread(self, names: Sequence[str]) -> dict[str, Exception]:
        """The groups whose read failed, in the list's order; a group listed whose read never
        came is one of them, not left out."""
        errors: dict[str, Exception] = {}
        for name in names:
            answer = self.read.get(name)
            if answer is None:
                errors[name] = LookupError("its read never came back")
            elif isinstance(answer, Exception):
                errors[name] = answer
        return errors

    def lagging(self) -> dict[str, dict[str, tuple[str, ...]]]:
        """The topics with lag of each lagging group, by broker (what its time behind is asked
        of)."""
        return {
            n: lag_trend.lagging_topics(w[-1]) for n, w in self.windows.items() if w[-1].total_lag
        }
