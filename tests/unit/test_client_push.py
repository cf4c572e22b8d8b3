"""The client push against a fake broker whose Java client behaves as the real one does when a
push is lost (the sandbox shows the same in tests/integration/test_apply_client_push.py after a
broker's pause): it resets only the queues it holds when the push comes, and a push can go
unheard behind the broker's SUCCESS, or taken and then undone by the client's next commit of
its old position. The push waits for the clients to hold every queue, is watched on the broker
until each queue holds the reset across two commit intervals, and is sent again for the queues
that did not."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace

from console.domain.journal import ApplyStatus, QueueState
from console.domain.plan import PlanHeader, PlanRow, SnapshotInfo
from console.domain.reset_paths import ResetPath, ResetPathKind
from console.domain.spec import ResetSpec, Scope, ToTimestamp
from console.rocketmq.codes import ResponseCode
from console.rocketmq.errors import BrokerError, RequestTimeout
from console.rocketmq.models import ClientConnection, ConsumerConnection, MessageQueue
from console.services.apply.check import ApplyCheck, GroupWrites, QueueWrite
from console.services.apply.client_push import FIRST_PUSH, ClientPush, PushTiming
from console.services.apply.writer import Applier
from console.services.infra.journal_store import AuditLog
from console.services.plan.load import LoadedPlan
from tests.support.writes import write_access

ADDR_A, ADDR_B = "10.0.0.1:10911", "10.0.0.2:10911"
GROUP, TOPIC = "shipping", "orders"
BEFORE, TARGET = 100, 60
FAST = PushTiming(hold_wait_s=0.5, take_s=0.2, max_pushes=3, poll_s=0.01)
GET_CONSUMER_RUNNING_INFO = 307
GET_CONSUMER_CONNECTION_LIST = 203
INVOKE_BROKER_TO_RESET_OFFSET = 222


class JavaClientBroker:
    """Broker-a and the group's one client, as far as a push is concerned.

    `holds` is what the client holds at each running-info answer (the last one repeats);
    `heard` says, push by push, whether the client acted on it (the last one repeats)."""

    def __init__(
        self,
        holds: Sequence[set[int]],
        heard: Sequence[bool] = (True,),
        *,
        connections: int = 1,
        online: bool = True,
        dead_through: frozenset[str] = frozenset(),
        overwritten: frozenset[int] = frozenset(),
    ) -> None:
        self.holds = list(holds)
        self.heard = list(heard)
        self.connections = connections
        self.online = online
        self.dead_through = dead_through
        self.stored = {q: BEFORE for q in range(4)}
        # Queues whose first reset the client's next commit undoes (it re-read its offset
        # before its own commit of the new one landed), as reads until it does.
        self.undo_in = dict.fromkeys(overwritten, 3)
        self.events: list[str] = []
        self.held_now: set[int] = set()

    async def consumer_connections(self, addr: str, group: str) -> ConsumerConnection:
        if not self.online:
            code = ResponseCode.CONSUMER_NOT_ONLINE
            raise BrokerError(addr, GET_CONSUMER_CONNECTION_LIST, code, "not online")
        clients = [
            ClientConnection("10.0.0.9@shipping", f"10.0.0.9:{5000 + i}", "JAVA", 453)
            for i in range(self.connections)
        ]
        return ConsumerConnection(clients, "CONSUME_PASSIVELY", "CLUSTERING", None)

    async def call(
        self, addr: str, code: int, fields: dict[str, object], **kw: object
    ) -> SimpleNamespace:
        assert code == GET_CONSUMER_RUNNING_INFO
        if addr in self.dead_through:
            raise RequestTimeout(addr, code, 5.0)
        self.held_now = self.holds.pop(0) if len(self.holds) > 1 else self.holds[0]
        self.events.append(f"held {sorted(self.held_now)}")
        table = ",".join(
            f'{{"brokerName":"broker-a","queueId":{q},"topic":"{TOPIC}"}}:'
            + json.dumps(
                {
                    "commitOffset": BEFORE,
                    "cachedMsgCount": 0,
                    "cachedMsgMinOffset": 0,
                    "cachedMsgMaxOffset": 0,
                    "droped": False,
                    "locked": False,
                }
            )
            for q in sorted(self.held_now)
        )
        props = '{"persistConsumerOffsetInterval":"20"}'  # ms: hold_s is 1.04 s
        return SimpleNamespace(body=f'{{"mqTable":{{{table}}},"properties":{props}}}'.encode())

    async def reset_offset(self, addr: str, group: str, topic: str, *, timestamp_ms: int) -> dict:
        if not self.online:
            code = ResponseCode.CONSUMER_NOT_ONLINE
            raise BrokerError(addr, INVOKE_BROKER_TO_RESET_OFFSET, code, "not online")
        heard = self.heard.pop(0) if len(self.heard) > 1 else self.heard[0]
        self.events.append("push" if heard else "push unheard")
        if heard:
            for q in self.held_now:  # the client resets the queues it holds, no others
                self.stored[q] = TARGET
        # The broker answers with the offset it found for the time, for every queue it has.
        return {MessageQueue(TOPIC, "broker-a", q): TARGET for q in self.stored}

    async def query_consumer_offset(self, addr: str, group: str, topic: str, q: int) -> int:
        if self.stored[q] == TARGET and q in self.undo_in:
            self.undo_in[q] -= 1
            if not self.undo_in[q]:
                del self.undo_in[q]
                self.stored[q] = BEFORE + 1
                self.events.append(f"old position committed again on {q}")
        return self.stored[q]


def writes(*queue_ids: int) -> list[QueueWrite]:
    rows = [
        PlanRow("prod", GROUP, TOPIC, "broker-a", q, 0, 200, BEFORE, None, TARGET, -40, None, ())
        for q in queue_ids
    ]
    return [QueueWrite(r, ADDR_A, BEFORE) for r in rows]


class Seen:
    def __init__(self) -> None:
        self.pushed: dict[int, list[str]] = {}
        self.taken: dict[int, int] = {}

    def on_pushed(self, ws: Sequence[QueueWrite], detail: str, offsets: Mapping[int, int]) -> None:
        assert all(offsets[w.row.queue_id] == TARGET for w in ws)  # the broker's answer
        for w in ws:
            self.pushed.setdefault(w.row.queue_id, []).append(detail)

    def on_taken(self, w: QueueWrite, stored: int) -> None:
        self.taken[w.row.queue_id] = stored


def push(
    broker: JavaClientBroker, timing: PushTiming = FAST, told: list[str | None] | None = None
) -> ClientPush:
    return ClientPush(
        broker,  # type: ignore[arg-type]
        group=GROUP,
        topic=TOPIC,
        broker="broker-a",
        addr=ADDR_A,
        timestamp_ms=1,
        other_addrs=[ADDR_A, ADDR_B],
        timing=timing,
        waiting=None if told is None else told.append,
    )


async def test_a_push_the_client_did_not_act_on_is_sent_again_and_taken() -> None:
    broker = JavaClientBroker([{0, 1, 2, 3}], heard=[False, True])
    seen = Seen()

    outcome = await push(broker).run(writes(0, 1, 2, 3), seen.on_pushed, seen.on_taken)

    assert outcome.pushes == 2
    assert broker.events.count("push unheard") == 1
    assert broker.events.count("push") == 1
    assert seen.taken == {0: TARGET, 1: TARGET, 2: TARGET, 3: TARGET}
    assert seen.pushed[0][0] == FIRST_PUSH
    assert seen.pushed[0][1].startswith("pushed again (2 pushes): the last did not show")


async def test_the_push_waits_until_the_client_holds_every_queue() -> None:
    # Rebalancing: the client holds two of the four queues, then all of them.
    broker = JavaClientBroker([{0, 1}, {0, 1}, {0, 1, 2, 3}])
    seen = Seen()

    told: list[str | None] = []

    outcome = await push(broker, told=told).run(writes(0, 1, 2, 3), seen.on_pushed, seen.on_taken)

    assert broker.events == ["held [0, 1]", "held [0, 1]", "held [0, 1, 2, 3]", "push"]
    assert outcome.pushes == 1
    # No silent wait: each says what it waits for, and for how long at most.
    waits = [t for t in told if t]
    assert waits[0].startswith("broker-a: waiting for the clients to hold 2 more queue(s) of")
    assert "at most" in waits[0]
    assert any("watching the push of orders take on" in t for t in waits)
    assert set(seen.taken) == {0, 1, 2, 3}
    assert all(details == [FIRST_PUSH] for details in seen.pushed.values())


async def test_queues_never_held_are_pushed_at_most_max_pushes_times_and_the_cause_named() -> None:
    # The broker lists the client twice: the client counts two consumers and keeps half.
    broker = JavaClientBroker([{0, 1}], connections=2)
    seen = Seen()

    outcome = await push(broker).run(writes(0, 1, 2, 3), seen.on_pushed, seen.on_taken)

    assert outcome.pushes == FAST.max_pushes
    assert broker.events.count("push") == FAST.max_pushes
    assert seen.taken == {0: TARGET, 1: TARGET}  # the held ones, at the first push
    assert len(seen.pushed[2]) == FAST.max_pushes
    assert "no online client held the queue when pushed" in seen.pushed[2][0]
    assert "broker-a lists client 10.0.0.9@shipping on 2 connections" in seen.pushed[2][0]
    assert seen.pushed[0] == [FIRST_PUSH]
    assert broker.stored == {0: TARGET, 1: TARGET, 2: BEFORE, 3: BEFORE}


async def test_running_info_is_asked_through_another_broker_when_one_does_not_answer() -> None:
    broker = JavaClientBroker([{0, 1}, {0, 1, 2, 3}], dead_through=frozenset({ADDR_A}))
    seen = Seen()

    outcome = await push(broker).run(writes(0, 1, 2, 3), seen.on_pushed, seen.on_taken)

    assert broker.events[:3] == ["held [0, 1]", "held [0, 1, 2, 3]", "push"]
    assert outcome.pushes == 1
    assert set(seen.taken) == {0, 1, 2, 3}


async def test_nobody_online_is_not_waited_for_and_goes_to_the_direct_write() -> None:
    broker = JavaClientBroker([{0}], online=False)
    seen = Seen()
    patient = PushTiming(hold_wait_s=600, take_s=600, max_pushes=3, poll_s=0.01)

    outcome = await push(broker, patient).run(writes(0, 1), seen.on_pushed, seen.on_taken)

    assert outcome.pushes == 0
    assert [w.row.queue_id for w in outcome.not_online] == [0, 1]
    assert seen.pushed == {}
    assert seen.taken == {}
    assert broker.events == []  # no running info asked, nothing pushed


async def test_a_refused_first_push_sends_nothing_more() -> None:
    class Refusing(JavaClientBroker):
        async def reset_offset(self, addr: str, group: str, topic: str, **kw: int) -> dict:
            self.events.append("refused")
            raise BrokerError(addr, INVOKE_BROKER_TO_RESET_OFFSET, 1, "system error")

    broker = Refusing([{0, 1}])
    seen = Seen()

    outcome = await push(broker).run(writes(0, 1), seen.on_pushed, seen.on_taken)

    assert outcome.pushes == 0
    assert outcome.refused is not None
    assert [w.row.queue_id for w in outcome.refused_writes] == [0, 1]
    assert broker.events.count("refused") == 1
    assert seen.pushed == {}


async def test_a_reset_the_client_undid_with_its_old_position_is_pushed_again() -> None:
    # The broker shows queue 2 at the target for a moment, then the client's commit of the
    # position it re-read too early: only a reset that holds counts.
    broker = JavaClientBroker([{0, 1, 2, 3}], overwritten=frozenset({2}))
    seen = Seen()

    outcome = await push(broker).run(writes(0, 1, 2, 3), seen.on_pushed, seen.on_taken)

    assert "old position committed again on 2" in broker.events
    assert outcome.pushes == 2
    assert outcome.hold_s == 2 * 0.02 + 1.0  # the clients' commit interval, twice, and 1 s
    assert seen.taken == {0: TARGET, 1: TARGET, 2: TARGET, 3: TARGET}
    assert seen.pushed[2][1].startswith("pushed again (2 pushes)")
    assert broker.stored[2] == TARGET


async def test_an_apply_whose_pushes_never_take_says_not_yet_with_the_offset_read(
    tmp_path: Path,
) -> None:
    broker = JavaClientBroker([{0, 1}], heard=[False])
    rows = [w.row for w in writes(0, 1)]
    header = PlanHeader(
        plan_id="p1",
        spec=ResetSpec(Scope("prod", (GROUP,)), ToTimestamp(1)),
        snapshot=SnapshotInfo("prod", "s1", 1),
        created_at_ms=1,
        content_hash="sha256:0",
        rows=2,
        totals=(),
    )
    path = ResetPath(ResetPathKind.CLIENT_PUSH, "brokers without server-side reset")
    group = GroupWrites(GROUP, path, path, 1, 1, tuple(writes(0, 1)))
    check = ApplyCheck(LoadedPlan("file:///p1", header, tuple(rows)), (group,), (), (), ())
    reader = SimpleNamespace(admin=broker, brokers=_brokers)
    applier = Applier(write_access(reader, tmp_path), push_timing=FAST)

    journal = await applier.apply(check)

    assert broker.events.count("push unheard") == FAST.max_pushes
    assert journal.status is ApplyStatus.FINISHED
    assert {q.state for q in journal.queues} == {QueueState.NOT_YET}
    assert {q.stored for q in journal.queues} == {BEFORE}
    (detail,) = {q.detail for q in journal.queues}
    assert detail is not None
    assert detail.startswith(f"pushed {FAST.max_pushes} time(s); no read showed the pushed offset")
    assert len(list(AuditLog(tmp_path).read())) == 2  # one line per queue written


async def _brokers() -> dict[str, str]:
    return {"broker-a": ADDR_A}
