"""PULL as an admin and the boundary reads built on it, against scripted brokers that answer the
way a 5.x broker's PullMessageProcessor does (the real brokers: tests/integration/
test_boundary_messages.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field

from console.domain.boundary_messages import Absence, BoundaryRequest, boundary_requests
from console.domain.plan import PlanRow
from console.rocketmq import frame
from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import FLAG_RESPONSE, RequestCode, ResponseCode
from console.rocketmq.frame import Command
from console.rocketmq.models import PullStatus
from console.services.read.boundary import read_boundaries
from console.services.read.reader import ClusterReader
from console.services.read.routes import BrokerRoute
from tests.support.servers import serve

from .records import Record

TOPIC = "orders"


@dataclass
class ScriptedBroker:
    """One broker's queues: min, max and the records between them (a missing one is a hole)."""

    name: str
    queues: dict[int, tuple[int, int]] = field(default_factory=lambda: {0: (10, 20)})
    holes: set[tuple[int, int]] = field(default_factory=set)
    silent: bool = False
    garbage: bool = False
    delay: float = 0.0
    pulls: list[dict[str, str]] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0

    async def handle(self, cmd: Command, writer: asyncio.StreamWriter) -> None:
        assert cmd.code == RequestCode.PULL_MESSAGE
        self.pulls.append(dict(cmd.ext_fields))
        if self.silent:
            return
        asyncio.get_running_loop().create_task(self._answer(cmd, writer))

    async def _answer(self, cmd: Command, writer: asyncio.StreamWriter) -> None:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await asyncio.sleep(self.delay)
        self.in_flight -= 1
        f = cmd.ext_fields
        qid, offset, count = int(f["queueId"]), int(f["queueOffset"]), int(f["maxMsgNums"])
        if qid not in self.queues:
            writer.write(_reply(cmd, code=ResponseCode.INVALID_PARAMETER, remark="no queue"))
            return
        low, high = self.queues[qid]
        ext = {"minOffset": str(low), "maxOffset": str(high), "suggestWhichBrokerId": "0"}
        if offset < low or offset > high:
            ext["nextBeginOffset"] = str(low if offset < low else high)
            writer.write(_reply(cmd, code=ResponseCode.PULL_OFFSET_MOVED, ext_fields=ext))
            return
        # As the store does: entries whose message is gone are passed over, up to `count` found.
        offsets = [o for o in range(offset, high) if (qid, o) not in self.holes][:count]
        found = [
            Record(
                topic=TOPIC, queue_id=qid, queue_offset=o, body=f"{self.name}/{qid}/{o}".encode()
            )
            for o in offsets
        ]
        ext["nextBeginOffset"] = str(offsets[-1] + 1 if offsets else high)
        if not found:
            writer.write(_reply(cmd, code=ResponseCode.PULL_NOT_FOUND, ext_fields=ext))
            return
        body = b"\x00\x00\x00\x30garbage" if self.garbage else b"".join(r.encode() for r in found)
        writer.write(_reply(cmd, ext_fields=ext, body=body))


def _reply(
    request: Command,
    *,
    code: int = ResponseCode.SUCCESS,
    remark: str | None = None,
    ext_fields: dict[str, str] | None = None,
    body: bytes = b"",
) -> bytes:
    answer = Command(code, request.opaque, FLAG_RESPONSE, remark, ext_fields or {}, body)
    return frame.encode(answer)


class FixedRoutes(ClusterReader):
    """A reader whose name server lists these routes."""

    def __init__(self, admin: AdminClient, routes: dict[str, BrokerRoute]) -> None:
        super().__init__(admin)
        self._fixed = routes

    async def routes(self) -> dict[str, BrokerRoute]:
        return dict(self._fixed)


@asynccontextmanager
async def brokers(*scripted: ScriptedBroker) -> AsyncIterator[dict[str, str]]:
    async with AsyncExitStack() as stack:
        addrs = {b.name: await stack.enter_async_context(serve(b.handle)) for b in scripted}
        yield addrs


def body_of(view: object) -> str:
    return getattr(view, "body_head", "")


async def test_an_admin_pull_asks_as_the_tools_group_and_maps_every_answer() -> None:
    broker = ScriptedBroker("broker-a")
    async with brokers(broker) as addrs, AdminClient("127.0.0.1:1", timeout=2) as admin:
        addr = addrs["broker-a"]
        found = await admin.pull_message(addr, TOPIC, 0, 12, max_nums=2)
        assert found.status is PullStatus.FOUND
        assert [m.queue_offset for m in found.messages] == [12, 13]
        assert (found.min_offset, found.max_offset, found.next_begin_offset) == (10, 20, 14)
        end = await admin.pull_message(addr, TOPIC, 0, 20)
        assert (end.status, end.messages) == (PullStatus.NO_NEW_MSG, ())
        moved = await admin.pull_message(addr, TOPIC, 0, 3)
        assert (moved.status, moved.next_begin_offset) == (PullStatus.OFFSET_MOVED, 10)
    sent = broker.pulls[0]
    assert sent["consumerGroup"] == "TOOLS_CONSUMER"
    assert sent["sysFlag"] == "4"  # subscription in the request: no commit, no suspend
    assert (sent["subscription"], sent["expressionType"]) == ("*", "TAG")
    assert (sent["commitOffset"], sent["suspendTimeoutMillis"]) == ("0", "0")
    assert (sent["queueOffset"], sent["maxMsgNums"]) == ("12", "2")


async def test_each_kind_of_boundary_reads_what_the_consumer_would_get() -> None:
    a = ScriptedBroker("broker-a", queues={0: (10, 20), 1: (0, 5)}, holes={(0, 15)})
    async with brokers(a) as addrs, AdminClient("127.0.0.1:1", timeout=2) as admin:
        reader = FixedRoutes(admin, {"broker-a": BrokerRoute("broker-a", addrs["broker-a"], {})})
        wanted = [
            BoundaryRequest(TOPIC, "broker-a", 0, 18, 12),  # replay
            BoundaryRequest(TOPIC, "broker-a", 0, 12, 18),  # skip: one pull gives both
            BoundaryRequest(TOPIC, "broker-a", 0, 3, 10),  # skip whose last is deleted
            BoundaryRequest(TOPIC, "broker-a", 0, 12, 20),  # skip to the end
            BoundaryRequest(TOPIC, "broker-a", 0, 12, 25),  # beyond the end
            BoundaryRequest(TOPIC, "broker-a", 0, 18, 4),  # below the min
            BoundaryRequest(TOPIC, "broker-a", 0, None, 13),  # nothing committed
            BoundaryRequest(TOPIC, "broker-a", 0, 12, 15),  # a hole at the target
            BoundaryRequest(TOPIC, "broker-a", 7, 1, 2),  # no such queue
        ]
        replay, skip, cut, end, beyond, low, unknown, hole, noqueue = await read_boundaries(
            reader, wanted
        )
    assert replay.first is not None
    assert replay.first.queue_offset == 12
    assert (replay.last_skipped, replay.last_note, replay.first_note) == (None, None, None)

    assert skip.first is not None
    assert skip.first.queue_offset == 18
    assert skip.last_skipped is not None
    assert skip.last_skipped.queue_offset == 17
    assert body_of(skip.first) == "broker-a/0/18"

    assert cut.last_skipped is None
    assert cut.last_note == "deleted: below the min offset 10"
    assert cut.last_absence is Absence.DELETED
    assert cut.first is not None
    assert cut.first.queue_offset == 10

    assert end.last_skipped is not None
    assert end.last_skipped.queue_offset == 19
    assert end.first_note == "nothing after the target: it is the queue's end (max offset 20)"
    assert end.first_absence is Absence.END

    assert beyond.first_note == (
        "nothing after the target: it is beyond the queue's end (max offset 20)"
    )
    assert beyond.last_note == "nothing at offset 24: beyond the queue's end (max offset 20)"

    assert low.first_note == "deleted: below the min offset 10"
    assert low.last_note is None  # a replay skips nothing

    assert unknown.first is not None
    assert unknown.first.queue_offset == 13
    assert unknown.last_note is not None
    assert unknown.last_note.startswith("nothing committed before")
    assert unknown.last_absence is Absence.NOT_COMMITTED

    # The consumer would get the next message after the hole: that one is the first.
    assert hole.first is not None
    assert hole.first.queue_offset == 16
    assert hole.last_skipped is not None
    assert hole.last_skipped.queue_offset == 14

    assert noqueue.first_absence is Absence.NOT_FOUND
    assert noqueue.first_note == "broker-a has no such queue: no queue"
    assert not any(b.unread for b in (replay, skip, cut, end, beyond, low, unknown, noqueue))
    # One pull per boundary, two for the skip whose last message is deleted.
    assert len(a.pulls) == len(wanted) + 1
    assert {p["maxMsgNums"] for p in a.pulls if p["queueOffset"] == "17"} == {"2"}


async def test_a_broker_that_does_not_answer_is_named_and_the_others_are_read() -> None:
    a = ScriptedBroker("broker-a")
    b = ScriptedBroker("broker-b", silent=True)
    async with brokers(a, b) as addrs, AdminClient("127.0.0.1:1", timeout=0.3) as admin:
        routes = {n: BrokerRoute(n, addr, {}) for n, addr in addrs.items()}
        routes["broker-c"] = BrokerRoute("broker-c", None, {})  # listed with no address at all
        reader = FixedRoutes(admin, routes)
        got = await read_boundaries(
            reader,
            [
                BoundaryRequest(TOPIC, "broker-b", 0, 11, 14),
                BoundaryRequest(TOPIC, "broker-a", 0, 11, 14),
                BoundaryRequest(TOPIC, "broker-c", 0, 11, 14),
                BoundaryRequest(TOPIC, "broker-x", 0, 11, 14),
            ],
        )
    down, up, empty, unknown = got
    assert down.first is None
    assert down.first_note == down.last_note == "broker-b did not answer: timed out"
    assert down.first_absence is Absence.UNANSWERED
    assert down.unread
    assert up.first is not None
    assert up.last_skipped is not None
    assert not up.unread
    for missing in (empty, unknown):
        assert (
            missing.first_note == f"{missing.request.broker} is not registered with the name server"
        )
        assert missing.unread


async def test_a_silent_master_gives_way_to_its_slave_once() -> None:
    master = ScriptedBroker("broker-a", silent=True)
    slave = ScriptedBroker("broker-a-slave")
    async with brokers(master, slave) as addrs, AdminClient("127.0.0.1:1", timeout=0.3) as admin:
        route = BrokerRoute("broker-a", addrs["broker-a"], {1: addrs["broker-a-slave"]})
        reader = FixedRoutes(admin, {"broker-a": route})
        got = await read_boundaries(
            reader,
            [BoundaryRequest(TOPIC, "broker-a", 0, 11, t) for t in range(12, 18)],
            in_flight=1,
        )
    assert [b.first.queue_offset for b in got if b.first] == list(range(12, 18))
    assert all(b.from_slave for b in got)
    assert len(master.pulls) == 1  # asked once; the rest went straight to the slave
    assert len(slave.pulls) == 6


async def test_many_boundaries_keep_their_order_and_the_in_flight_bound() -> None:
    a = ScriptedBroker("broker-a", queues={q: (0, 50) for q in range(40)}, delay=0.01)
    async with brokers(a) as addrs, AdminClient("127.0.0.1:1", timeout=5) as admin:
        reader = FixedRoutes(admin, {"broker-a": BrokerRoute("broker-a", addrs["broker-a"], {})})
        wanted = [BoundaryRequest(TOPIC, "broker-a", q, 40, q) for q in range(40)]
        got = await read_boundaries(reader, wanted, in_flight=8)
    assert [b.request for b in got] == wanted
    assert [b.first.queue_offset if b.first else None for b in got] == list(range(40))
    assert a.most_in_flight <= 8


async def test_an_unanswered_name_server_leaves_a_note_on_every_queue() -> None:
    async with AdminClient("127.0.0.1:1", timeout=0.3) as admin:
        got = await read_boundaries(ClusterReader(admin), [BoundaryRequest(TOPIC, "b", 0, 1, 2)])
    assert got[0].first_note is not None
    assert got[0].first_note.startswith("the name server did not say where the brokers are")
    assert got[0].unread


def test_requests_come_from_the_queues_a_plan_changes() -> None:
    def row(q: int, current: int | None, target: int | None) -> PlanRow:
        return PlanRow(
            "c", "g", TOPIC, "broker-a", q, 0, 9, current, target, target, None, None, ()
        )

    rows = [row(0, 5, 2), row(1, 5, 5), row(2, None, 3), row(3, 4, None), row(4, 1, 8)]
    assert boundary_requests(rows) == [
        BoundaryRequest(TOPIC, "broker-a", 0, 5, 2),
        BoundaryRequest(TOPIC, "broker-a", 2, None, 3),
        BoundaryRequest(TOPIC, "broker-a", 4, 1, 8),
    ]
    assert BoundaryRequest(TOPIC, "broker-a", 4, 1, 8).skips
    assert not BoundaryRequest(TOPIC, "broker-a", 2, None, 3).skips


async def test_bytes_that_are_not_messages_are_a_note_not_a_crash() -> None:
    a = ScriptedBroker("broker-a", garbage=True)
    async with brokers(a) as addrs, AdminClient("127.0.0.1:1", timeout=2) as admin:
        reader = FixedRoutes(admin, {"broker-a": BrokerRoute("broker-a", addrs["broker-a"], {})})
        got = await read_boundaries(reader, [BoundaryRequest(TOPIC, "broker-a", 0, 11, 12)])
    assert got[0].first is None
    assert got[0].first_note is not None
    assert got[0].first_note.startswith("broker-a answered bytes that are not a message")
    assert got[0].unread
