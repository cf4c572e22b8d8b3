"""An in-memory cluster behind the `ClusterSource` interface, and a fixed clock.

Tests change the cluster between refreshes (`advance`, `take_down`, `fail`) and read what the
console asked for in `calls`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from console.config import ClusterConfig, Config
from console.domain.boundary_messages import Absence, Boundary, BoundaryRequest
from console.domain.gaps import Why
from console.domain.offsets import Client, GroupOffsets, QueueOffsets
from console.domain.triage import QueueKey
from console.rocketmq.errors import AccessDenied, ConnectError
from console.rocketmq.models import MessageQueue, QueueStats
from console.services.infra.fanout import gather_bounded, gather_handing_over
from console.services.read.routes import BrokerHealth
from console.services.read.source import ClusterSource, Parts, Progress
from console.ui.app import ConsoleApp, make_app
from console.ui.services import ConsoleServices
from console.ui.themes import PROJECT_THEMES

NOW_S = 1_700_000_000.0
NOW_MS = int(NOW_S * 1000)
STEP_MS = 5_000


def fixed_clock() -> float:
    return NOW_S


def q(
    topic: str,
    broker: str,
    qid: int,
    max_offset: int,
    committed: int | None,
    *,
    min_offset: int = 0,
    pulled: int | None = None,
    last_ms_ago: int | None = 30_000,
) -> QueueOffsets:
    return QueueOffsets(
        topic=topic,
        broker=broker,
        queue_id=qid,
        min_offset=min_offset,
        max_offset=max_offset,
        committed=committed,
        pull_offset=pulled if pulled is not None else committed,
        last_timestamp=NOW_MS - last_ms_ago if last_ms_ago is not None else 0,
    )


CLIENT_A = Client("10.0.0.5@4242#1", "10.0.0.5:51000", "JAVA", 479)
CLIENT_B = Client("10.0.0.6@4343#2", "10.0.0.6:51001", "JAVA", 477)


def sample_groups(taken_at_ms: int = NOW_MS) -> dict[str, GroupOffsets]:
    def g(name: str, queues: Sequence[QueueOffsets], **kw: object) -> GroupOffsets:
        return GroupOffsets(group=name, taken_at_ms=taken_at_ms, queues=tuple(queues), **kw)  # type: ignore[arg-type]

    return {
        "billing": g(
            "billing",
            [
                q("orders", "broker-a", 0, 1200, 1100, pulled=1130),
                q("orders", "broker-a", 1, 1180, 1180),
                q("orders", "broker-b", 0, 990, 970),
                q("orders", "broker-b", 1, 1010, None, last_ms_ago=None),
                q("%RETRY%billing", "broker-a", 0, 14, 11),
            ],
            clients=(CLIENT_A, CLIENT_B),
            message_model="CLUSTERING",
            consume_type="CONSUME_PASSIVELY",
            dlq_messages=2,
        ),
        "audit": g(
            "audit",
            [q("orders", "broker-a", 0, 1200, 200), q("orders", "broker-b", 0, 990, 500)],
            message_model="CLUSTERING",
            consume_type="CONSUME_PASSIVELY",
        ),
        "search": g(
            "search",
            [q("payments", "broker-a", 0, 50, 50), q("payments", "broker-b", 0, 40, 40)],
            clients=(CLIENT_A,),
            message_model="CLUSTERING",
            consume_type="CONSUME_ACTIVELY",
        ),
        "shadow": g(
            "shadow",
            [
                q("orders", "broker-a", 0, 1200, None, last_ms_ago=None),
                q("orders", "broker-b", 0, 990, None, last_ms_ago=None),
            ],
            clients=(CLIENT_B,),
            message_model="CLUSTERING",
            consume_type="CONSUME_PASSIVELY",
        ),
    }


def stats(topic: str, broker: str, qid: int, lo: int, hi: int) -> QueueStats:
    return QueueStats(MessageQueue(topic, broker, qid), lo, hi, NOW_MS - 2_000)


@dataclass
class FakeCluster:
    brokers: list[BrokerHealth] = field(
        default_factory=lambda: [
            BrokerHealth("broker-a", "10.0.0.1:10911", True, "V5_3_3", 5400, 5100),
            BrokerHealth("broker-b", "10.0.0.2:10911", True, "V5_3_3", 4100, 3900),
        ]
    )
    groups: dict[str, GroupOffsets] = field(default_factory=sample_groups)
    #: What the name-server notices say (a name server that does not answer).
    notices: list[str] = field(default_factory=list)
    topics: dict[str, list[QueueStats]] = field(
        default_factory=lambda: {
            "orders": [
                stats("orders", "broker-a", 0, 0, 1200),
                stats("orders", "broker-b", 0, 0, 990),
            ],
            "payments": [stats("payments", "broker-a", 0, 0, 50)],
        }
    )
    delays: dict[str, dict[QueueKey, int]] = field(
        default_factory=lambda: {
            "billing": {("orders", "broker-a", 0): 95_000, ("orders", "broker-b", 0): 12_000},
            "audit": {("orders", "broker-a", 0): 7_200_000},
        }
    )
    dlq: dict[str, list[QueueStats]] = field(
        default_factory=lambda: {"billing": [stats("%DLQ%billing", "broker-a", 0, 0, 2)]}
    )
    assignments: dict[str, dict[QueueKey, tuple[str, ...]]] = field(
        default_factory=lambda: {
            "billing": {
                ("orders", "broker-a", 0): (CLIENT_A.client_id,),
                ("orders", "broker-a", 1): (CLIENT_A.client_id,),
                ("orders", "broker-b", 0): (CLIENT_B.client_id,),
            }
        }
    )
    #: What boundary_messages answers, by queue (see FakeSource.boundary_messages).
    boundaries: dict[QueueKey, Boundary] = field(default_factory=dict)
    #: The requests of each boundary_messages call.
    boundary_asks: list[tuple[BoundaryRequest, ...]] = field(default_factory=list)
    #: method name -> exception the next calls raise
    failures: dict[str, Exception] = field(default_factory=dict)
    #: method name -> event a call waits for (a slow cluster)
    gates: dict[str, asyncio.Event] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    closed: bool = False
    taken_at_ms: int = NOW_MS

    def advance(self, **groups: GroupOffsets) -> None:
        """The next refresh happens STEP_MS later; `groups` replace those groups' offsets."""
        self.taken_at_ms += STEP_MS
        self.groups.update(groups)

    def commit(self, group: str, topic: str, broker: str, qid: int, **changes: int | None) -> None:
        o = self.groups[group]
        queues = tuple(
            x._replace(**changes) if x.key == (topic, broker, qid) else x  # type: ignore[arg-type]
            for x in o.queues
        )
        self.groups[group] = replace(o, queues=queues)

    def take_down(self, broker: str, *, vanish: bool = False) -> None:
        if vanish:
            self.brokers = [b for b in self.brokers if b.name != broker]
        else:
            self.brokers = [
                replace(b, up=False, error=f"cannot connect to {b.addr}: refused")
                if b.name == broker
                else b
                for b in self.brokers
            ]

    def refuse(self, broker: str, access_key: str = "rmq-viewer") -> AccessDenied:
        """The broker refuses our signature (a wrong secret): it answers, but with code 16."""
        state = next(b for b in self.brokers if b.name == broker)
        denied = AccessDenied(
            state.addr,
            28,
            16,
            "check signature failed",
            access_key=access_key,
            authentication=True,
        )
        self.brokers = [
            replace(b, up=False, error=str(denied), why=Why.AUTHENTICATION)
            if b.name == broker
            else b
            for b in self.brokers
        ]
        return denied

    def bring_up(self, broker: str, addr: str = "10.0.0.2:10911") -> None:
        others = [b for b in self.brokers if b.name != broker]
        self.brokers = sorted(
            [*others, BrokerHealth(broker, addr, True, "V5_3_3", 1, 1)], key=lambda b: b.name
        )


class FakeSource:
    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster

    async def _enter(self, name: str) -> None:
        self.cluster.calls.append(name)
        gate = self.cluster.gates.get(name)
        if gate is not None:
            await gate.wait()
        failure = self.cluster.failures.get(name)
        if failure is not None:
            raise failure

    async def brokers(self) -> tuple[BrokerHealth, ...]:
        await self._enter("brokers")
        return tuple(self.cluster.brokers)

    async def name_server_notices(self) -> tuple[str, ...]:
        await self._enter("name_server_notices")
        return tuple(self.cluster.notices)

    async def topics(self) -> list[str]:
        await self._enter("topics")
        return sorted(self.cluster.topics)

    async def topic_queues(self, topic: str) -> list[QueueStats]:
        await self._enter("topic_queues")
        return list(self.cluster.topics.get(topic, []))

    async def groups(self) -> list[str]:
        await self._enter("groups")
        return sorted(self.cluster.groups)

    async def group_offsets(self, group: str) -> GroupOffsets:
        """As the real reader answers: no queues from a broker that is down or has left the
        name server, and a broker that is listed but does not answer is named unreachable."""
        await self._enter("group_offsets")
        offsets = self.cluster.groups[group]
        up = {b.name for b in self.cluster.brokers if b.up}
        listed_down = tuple(b.name for b in self.cluster.brokers if not b.up)
        return replace(
            offsets,
            taken_at_ms=self.cluster.taken_at_ms,
            queues=tuple(q for q in offsets.queues if q.broker in up),
            unreachable_brokers=tuple(sorted({*offsets.unreachable_brokers, *listed_down})),
        )

    async def read_groups(
        self, groups: Sequence[str], progress: Progress | None = None, parts: Parts | None = None
    ) -> dict[str, GroupOffsets | Exception]:
        return await gather_handing_over(self.group_offsets, groups, on_done=progress, parts=parts)

    async def read_delays(
        self, wanted: Mapping[str, Mapping[str, Sequence[str]]], progress: Progress | None = None
    ) -> dict[str, dict[QueueKey, int] | Exception]:
        return await gather_bounded(
            lambda g: self.consume_delays(g, wanted[g]), list(wanted), on_done=progress
        )

    async def consume_delays(
        self, group: str, topics_by_broker: Mapping[str, Sequence[str]]
    ) -> dict[QueueKey, int]:
        await self._enter("consume_delays")
        return dict(self.cluster.delays.get(group, {}))

    async def dlq_queues(self, group: str) -> list[QueueStats]:
        await self._enter("dlq_queues")
        return list(self.cluster.dlq.get(group, []))

    async def assignments(
        self, group: str, client_ids: Sequence[str]
    ) -> dict[QueueKey, tuple[str, ...]]:
        await self._enter("assignments")
        return dict(self.cluster.assignments.get(group, {}))

    async def boundary_messages(self, wanted: Sequence[BoundaryRequest]) -> list[Boundary]:
        """From `cluster.boundaries` by queue; a queue not there reads as its broker not
        answering, as the real service says it."""
        await self._enter("boundary_messages")
        self.cluster.boundary_asks.append(tuple(wanted))
        out = []
        for r in wanted:
            known = self.cluster.boundaries.get(r.key)
            if known is not None:
                out.append(replace(known, request=r))
                continue
            note = f"{r.broker} did not answer: timed out"
            out.append(
                Boundary(
                    r,
                    None,
                    note,
                    None,
                    note if r.skips else None,
                    first_absence=Absence.UNANSWERED,
                    last_absence=Absence.UNANSWERED if r.skips else None,
                )
            )
        return out

    def close(self) -> None:
        self.cluster.closed = True


def unreachable(addr: str = "10.0.0.9:9876") -> ConnectError:
    return ConnectError(addr, "connection refused")


PROD = ClusterConfig("prod", ("10.0.0.9:9876",), colour="red", read_only=True)
STAGING = ClusterConfig("staging", ("10.1.0.9:9876",), colour="green")


class IdlePlanners:
    """A planner source that is never asked to plan: what a test that plans nothing gets."""

    def __init__(self) -> None:
        self.warmed = 0

    def warm(self, config: Config) -> None:
        self.warmed += 1  # no Spark in these tests

    def open(self, session: object, config: Config) -> Any:
        raise AssertionError("no plan is run in this test")


class NoWrites:
    """Write sessions for a test that writes nothing: asking for one fails the test."""

    def apply_plan(self, plan_uri: str) -> Any:
        raise AssertionError("no apply in this test")

    def undo(self, apply_id: str) -> Any:
        raise AssertionError("no undo in this test")

    def resume(self, apply_id: str) -> Any:
        raise AssertionError("no resume in this test")

    async def run(self, *args: object) -> Any:
        raise AssertionError("no write in this test")


class NoWalkthroughs:
    def open(self, session: object, config: Config) -> Any:
        raise AssertionError("no walkthrough reads in this test")


def fake_services(
    *, planners: Any = None, writes: Any = None, walkthroughs: Any = None
) -> ConsoleServices:
    """What `make_app` hands the screens in a test: fakes, each failing the test when asked for
    what the test did not give."""
    return ConsoleServices(
        planners if planners is not None else IdlePlanners(),
        writes if writes is not None else NoWrites(),
        walkthroughs if walkthroughs is not None else NoWalkthroughs(),
    )


def fake_app(
    cluster: FakeCluster | None = None,
    *,
    open_cluster: ClusterConfig | None = PROD,
    config: Config | None = None,
    **kw: object,
) -> tuple[ConsoleApp, FakeCluster]:
    """The console on a fake cluster, opened at `open_cluster` (None: the Clusters screen)."""
    fake = cluster or FakeCluster()
    cfg = config or Config(clusters=(PROD, STAGING), refresh_interval=3600, theme="rmq-dark")

    def connect(_: ClusterConfig) -> ClusterSource:
        return FakeSource(fake)

    kw.setdefault("theme_paths", [PROJECT_THEMES])
    kw.setdefault("clock", fixed_clock)
    kw.setdefault("services", fake_services())
    app = make_app(cfg, connect, cluster=open_cluster, **kw)  # type: ignore[arg-type]
    return app, fake
