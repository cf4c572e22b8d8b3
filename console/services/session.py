"""One open cluster: its source, the refresh history of its groups, and what is known of brokers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from console.config import ClusterConfig
from console.domain.gaps import Why
from console.domain.offsets import GroupOffsets
from console.services.lag_history import LagHistory
from console.services.source import BrokerState, ClusterSource
from console.services.triage import NOT_REGISTERED, History, vanished


@dataclass
class ClusterSession:
    cluster: ClusterConfig
    source: ClusterSource
    history: History
    #: Every broker seen since the session opened, name -> address.
    known_brokers: dict[str, str] = field(default_factory=dict)
    #: When each broker last answered, epoch ms.
    last_seen_ms: dict[str, int] = field(default_factory=dict)
    brokers: tuple[BrokerState, ...] = ()
    #: Things about the cluster the operator should know that no view shows (a name server
    #: that does not answer, ...): each screen's status line names them.
    notices: tuple[str, ...] = ()
    #: Where every refresh's lag is kept (None: the workspace is not on this machine).
    lag: LagHistory | None = None
    #: Why the lag history could not be written, while it cannot.
    lag_problem: str | None = None

    def observe_brokers(self, listed: Sequence[BrokerState], now_ms: int) -> None:
        """Take a broker check in; brokers that dropped off the name server count as down."""
        gone = vanished(self.known_brokers, [b.name for b in listed])
        self.known_brokers.update({b.name: b.addr for b in listed})
        for b in listed:
            if b.up:
                self.last_seen_ms[b.name] = now_ms
        states = [
            *listed,
            *(BrokerState(n, a, up=False, error=NOT_REGISTERED) for n, a in gone.items()),
        ]
        self.brokers = tuple(sorted(states, key=lambda b: b.name))

    def observe_answers(self, answered: Iterable[str]) -> bool:
        """A data refresh reached these brokers, so they are up whatever the last broker check
        said (the group screen refreshes without re-checking brokers). True if that changed."""
        names = set(answered)
        back = [b for b in self.brokers if b.name in names and not b.up]
        if not back:
            return False
        self.brokers = tuple(
            replace(b, up=True, error=None) if b in back else b for b in self.brokers
        )
        return True

    @property
    def unanswered(self) -> tuple[str, ...]:
        """Brokers that did not answer the last check, whatever the reason."""
        return tuple(b.name for b in self.brokers if not b.up)

    @property
    def refused(self) -> tuple[str, ...]:
        """Brokers that answered, but refused our credentials or what they may do."""
        return tuple(b.name for b in self.brokers if not b.up and b.why in _REFUSALS)

    @property
    def down(self) -> tuple[str, ...]:
        """Brokers that did not answer for another reason (no connection, no answer in time,
        gone from the name server)."""
        return tuple(b.name for b in self.brokers if not b.up and b.why not in _REFUSALS)

    def account(self, offsets: GroupOffsets) -> GroupOffsets:
        """A group read with the brokers known not to answer named as missing from it.

        The reader names the brokers the name server lists and that did not answer; a broker
        that has dropped off the name server is not asked at all, and its queues would leave
        the read without a trace: the total would fall as if its lag had been consumed.
        """
        read = {q.broker for q in offsets.queues}
        lacking = set(self.unanswered) - read - set(offsets.unreachable_brokers)
        if not lacking:
            return offsets
        named = tuple(sorted({*offsets.unreachable_brokers, *lacking}))
        return replace(offsets, unreachable_brokers=named)

    def record_lag(self, reads: Iterable[GroupOffsets], at_ms: int) -> str | None:
        """Keep these reads (accounted, see `account`) in the lag history at `at_ms`. Returns
        the problem when writing fails for the first time since it last worked: the console
        says so once and goes on without (a full disk must not stop the refreshes)."""
        if self.lag is None:
            return None
        try:
            self.lag.record(self.cluster.name, reads, at_ms)
        except OSError as exc:
            first = self.lag_problem is None
            self.lag_problem = f"lag history not kept: {exc}"
            return self.lag_problem if first else None
        self.lag_problem = None
        return None

    def close(self) -> None:
        self.source.close()


_REFUSALS = (Why.AUTHENTICATION, Why.PERMISSION)
