"""One open cluster: its source, the refresh history of its groups, and what is known of brokers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from console.config import ClusterConfig
from console.domain.gaps import Why
from console.domain.offsets import GroupOffsets
from console.domain.readings import Refreshes
from console.domain.triage import NOT_REGISTERED, vanished
from console.rocketmq.models import MASTER_ID
from console.services.read.lag_history import LagHistory
from console.services.read.routes import BrokerHealth
from console.services.read.source import ClusterSource


@dataclass
class ClusterSession:
    cluster: ClusterConfig
    source: ClusterSource
    refreshes: Refreshes
    #: Every broker seen since the session opened, name -> its master's address (where
    #: offsets are written: never a slave's).
    known_brokers: dict[str, str] = field(default_factory=dict)
    #: When each address last answered, epoch ms, by broker name and id.
    last_seen_ms: dict[tuple[str, int], int] = field(default_factory=dict)
    #: Every address of the last check, masters and slaves, by broker name then id.
    brokers: tuple[BrokerHealth, ...] = ()
    #: Things about the cluster the operator should know that no view shows (a name server
    #: that does not answer, ...): each screen's status line names them.
    notices: tuple[str, ...] = ()
    #: Where every refresh's lag is kept (None: the workspace is not on this machine).
    lag: LagHistory | None = None
    #: Why the lag history could not be written, while it cannot.
    lag_problem: str | None = None

    def observe_brokers(self, listed: Sequence[BrokerHealth], now_ms: int) -> None:
        """Take a broker check in; brokers that dropped off the name server count as down. A
        master no longer listed while its slave is (listed without an address) keeps the
        address it had."""
        gone = vanished(self.known_brokers, [b.name for b in listed])
        self.known_brokers.update(
            {b.name: b.addr for b in listed if b.broker_id == MASTER_ID and b.addr}
        )
        for b in listed:
            if b.up:
                self.last_seen_ms[(b.name, b.broker_id)] = now_ms
        states = [
            *(b if b.addr else replace(b, addr=self.known_brokers.get(b.name, "")) for b in listed),
            *(BrokerHealth(n, a, up=False, error=NOT_REGISTERED) for n, a in gone.items()),
        ]
        self.brokers = tuple(sorted(states, key=lambda b: (b.name, b.broker_id)))

    def observe_answers(self, answered: Iterable[str]) -> bool:
        """A data refresh reached these brokers' masters, so they are up whatever the last
        broker check said (the group screen refreshes without re-checking brokers). True if
        that changed. A broker read from its slave is not among `answered`."""
        names = set(answered)
        back = [
            b for b in self.brokers if b.name in names and not b.up and b.broker_id == MASTER_ID
        ]
        if not back:
            return False
        self.brokers = tuple(
            replace(b, up=True, error=None) if b in back else b for b in self.brokers
        )
        return True

    @property
    def unanswered(self) -> tuple[str, ...]:
        """Brokers of which no address answered the last check, whatever the reason (one whose
        master is down while a slave answers is read there: it is not here)."""
        up = {b.name for b in self.brokers if b.up}
        return tuple(sorted({b.name for b in self.brokers if not b.up} - up))

    @property
    def from_slave(self) -> dict[str, BrokerHealth]:
        """Brokers whose master is down while a slave answers: reads go to that slave (the
        lowest id), writes nowhere. Broker name -> that slave."""
        masters_down = {b.name for b in self.brokers if b.broker_id == MASTER_ID and not b.up}
        slaves: dict[str, BrokerHealth] = {}
        for b in self.brokers:
            if b.name in masters_down and b.broker_id != MASTER_ID and b.up:
                slaves.setdefault(b.name, b)
        return slaves

    @property
    def refused(self) -> tuple[str, ...]:
        """Addresses that answered, but refused our credentials or what they may do (see
        `label`)."""
        return tuple(label(b) for b in self.brokers if not b.up and b.why in _REFUSALS)

    @property
    def tls_refused(self) -> tuple[str, ...]:
        """Addresses that refused our TLS, or its absence: the cluster's `tls:` does not fit
        them (a configuration problem, not a broker down), by `label`."""
        return tuple(label(b) for b in self.brokers if not b.up and b.why is Why.TLS)

    @property
    def down(self) -> tuple[str, ...]:
        """Addresses that did not answer for another reason (no connection, no answer in time,
        gone from the name server), by `label`."""
        return tuple(
            label(b)
            for b in self.brokers
            if not b.up and b.why not in _REFUSALS and b.why is not Why.TLS
        )

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


def label(b: BrokerHealth) -> str:
    """A broker address as the status line names it: a master by its broker name, a slave as
    `broker-a slave 1`, a replica the name server does not list (controller mode) by its
    address."""
    if b.broker_id < MASTER_ID:
        return f"{b.name} replica {b.addr}"
    return b.name if b.broker_id == MASTER_ID else f"{b.name} slave {b.broker_id}"


_REFUSALS = (Why.AUTHENTICATION, Why.PERMISSION)
