"""The legacy client push (brokers before 5.1, or with useServerSideResetOffset off), made to take.

The broker answers SUCCESS once it has sent the new offsets to the group's clients, one way:
nobody tells it whether they acted. A Java client acts on a push only for the queues it holds at
that moment (MQClientInstance.resetOffset walks its own process-queue table), one push at a time
(the method is synchronized and sleeps 10 s inside), and sends the new offsets to the broker as
one-way commits. So a push can be lost, whole or in part, behind its SUCCESS:

- the clients were rebalancing and did not hold some queues when it came. A broker that lists a
  client on connections left over from a pause (they expire after 2 min) makes the clients count
  more consumers than there are, and each holds fewer queues, as long as it asks that broker;
- a connection the client closed after a time-out took the push or its commit with it;
- the client re-read the queue's offset from the broker before its own one-way commit of the new
  one was applied there: the broker shows the target for a moment, then the client's next
  commit puts its old position back.

So the push goes one broker and topic at a time, once the clients were seen holding every queue
of it (their running info), and is watched on the broker until a read proves each queue took it
(console/domain/drift.py, `proves`: for a skip, the pushed offset itself) and it keeps holding
it (not back at the old position) across two of the clients' commit intervals. Queues that do
not are pushed again, `PushTiming.max_pushes` times in all at most. A push resets every queue of
the topic on that broker, to the offset the broker finds for the time (its answer says which):
that offset is the queue's target from then on. A queue that took an earlier push replays
again what it consumed since; the journal says the push was repeated.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from console.domain.drift import holds, proves
from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import ResponseCode
from console.rocketmq.errors import BrokerError, RocketMQError
from console.rocketmq.running_info import consumer_running_info
from console.services.apply.check import QueueWrite

FIRST_PUSH = "pushed to the online clients"
#: The Java client's persistConsumerOffsetInterval when its running info does not say.
DEFAULT_COMMIT_INTERVAL_S = 5.0


@dataclass(frozen=True, slots=True)
class PushTiming:
    #: How long to wait for the clients to hold every queue of a push before sending it anyway
    #: (they rebalance every 20 s).
    hold_wait_s: float = 60.0
    #: How long a push has to show on the broker: the client's 10 s suspend, its one-way
    #: commit, and a margin for a loaded client host.
    take_s: float = 40.0
    max_pushes: int = 3
    poll_s: float = 1.0


DEFAULT_TIMING = PushTiming()


@dataclass(frozen=True, slots=True)
class PushOutcome:
    pushes: int
    #: The broker had nobody to push to: these queues are for the direct write.
    not_online: tuple[QueueWrite, ...] = ()
    #: The first push was refused: nothing was sent for `refused_writes`.
    refused: RocketMQError | None = None
    refused_writes: tuple[QueueWrite, ...] = ()
    #: Watched to the end of the last push without holding it: not yet (none when stopped on
    #: request, which leaves the pushed queues to the apply's read-back).
    not_taken: tuple[QueueWrite, ...] = ()
    #: The offset each queue id of this broker's topic was last read at.
    last_read: dict[int, int] = field(default_factory=dict)
    #: How long a queue had to hold the reset to count as taken.
    hold_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Holding:
    """Which queues of one broker's topic the group's online clients hold, as they say."""

    #: None when there is nothing to wait for: nobody is online (the push itself will say so),
    #: or some client could not be asked, so what the others hold is not the whole story.
    queue_ids: frozenset[int] | None
    #: Set when the broker lists one client on several connections (see the module's text).
    note: str | None = None


#: Queues pushed, one line on how, and the offset the broker pushed per queue id.
Pushed = Callable[[Sequence[QueueWrite], str, Mapping[int, int]], None]
Taken = Callable[[QueueWrite, int], None]


class ClientPush:
    """Pushes one topic's time to the clients of `group` through the broker at `addr`."""

    def __init__(
        self,
        admin: AdminClient,
        *,
        group: str,
        topic: str,
        broker: str,
        addr: str,
        timestamp_ms: int,
        other_addrs: Sequence[str] = (),
        timing: PushTiming = DEFAULT_TIMING,
        stop: asyncio.Event | None = None,
        waiting: Callable[[str | None], None] | None = None,
    ) -> None:
        self.admin = admin
        #: Told what the push waits for, as it waits (every wait has a bound, and says it).
        self.waiting = waiting or (lambda what: None)
        self.group, self.topic, self.broker, self.addr = group, topic, broker, addr
        self.timestamp_ms = timestamp_ms
        # Running info goes through a broker to the client; a broker holding a dead connection
        # for the client waits out its time-out, so the others are asked next.
        self.ask_through = [addr, *(a for a in other_addrs if a != addr)]
        self.timing = timing
        self.stop = stop or asyncio.Event()
        #: The longest commit interval among the clients, as their running info says.
        self.commit_interval_s = DEFAULT_COMMIT_INTERVAL_S
        self.last_read: dict[int, int] = {}
        #: The offset the broker pushed, by queue id, from its answer to the last push.
        self.pushed_to: dict[int, int] = {}

    async def run(self, writes: Sequence[QueueWrite], pushed: Pushed, taken: Taken) -> PushOutcome:
        pending = list(writes)
        pushes = 0
        while pending and pushes < self.timing.max_pushes and not self.stop.is_set():
            unheld, note = await self._wait_held(pending)
            if self.stop.is_set():
                break
            try:
                table = await self.admin.reset_offset(
                    self.addr, self.group, self.topic, timestamp_ms=self.timestamp_ms
                )
            except RocketMQError as exc:
                if isinstance(exc, BrokerError) and exc.code == ResponseCode.CONSUMER_NOT_ONLINE:
                    # Nobody left to push to, and so nobody to overwrite a direct write.
                    return PushOutcome(pushes, not_online=tuple(pending))
                if pushes == 0:
                    return PushOutcome(0, refused=exc, refused_writes=tuple(pending))
                break  # the read-back decides what the earlier pushes did
            pushes += 1
            self.pushed_to.update(
                {mq.queue_id: offset for mq, offset in table.items() if mq.topic == self.topic}
            )
            self._tell(pushed, pending, pushes, unheld, note)
            pending = await self._watch(pending, taken)
        if self.stop.is_set():
            return PushOutcome(pushes, hold_s=self.hold_s)
        return PushOutcome(
            pushes, not_taken=tuple(pending), hold_s=self.hold_s, last_read=self.last_read
        )

    @property
    def hold_s(self) -> float:
        """A client's next commit puts back an old position within one interval; two, and a
        second for the commit to land, leave no doubt."""
        return 2 * self.commit_interval_s + 1.0

    def _tell(
        self,
        pushed: Pushed,
        pending: Sequence[QueueWrite],
        pushes: int,
        unheld: frozenset[int],
        note: str | None,
    ) -> None:
        detail = FIRST_PUSH
        if pushes > 1:
            detail = (
                f"pushed again ({pushes} pushes): the last did not show on the broker; "
                "queues that took it replayed again from the target"
            )
        held = [w for w in pending if w.row.queue_id not in unheld]
        if held:
            pushed(held, detail, self.pushed_to)
        if len(held) < len(pending):
            why = f"; {note}" if note else ""
            pushed(
                [w for w in pending if w.row.queue_id in unheld],
                f"{detail}; no online client held the queue when pushed{why}",
                self.pushed_to,
            )

    async def _wait_held(self, pending: Sequence[QueueWrite]) -> tuple[frozenset[int], str | None]:
        """Waits until the clients hold every pending queue, or hold_wait_s; the queues still
        not held (none when the clients could not say), and the broker's connection note."""
        wanted = {w.row.queue_id for w in pending}
        deadline = time.monotonic() + self.timing.hold_wait_s
        while True:
            holding = await self.holding()
            if holding.queue_ids is None:
                return frozenset(), holding.note
            missing = frozenset(wanted - holding.queue_ids)
            if not missing or time.monotonic() >= deadline or self.stop.is_set():
                return missing, holding.note
            left = deadline - time.monotonic()
            self.waiting(
                f"{self.broker}: waiting for the clients to hold {len(missing)} more queue(s) of "
                f"{self.topic} before pushing ({left:.0f} s more at most, then pushed anyway)"
            )
            await asyncio.sleep(self.timing.poll_s)

    async def holding(self) -> Holding:
        try:
            connection = await self.admin.consumer_connections(self.addr, self.group)
        except RocketMQError:  # CONSUMER_NOT_ONLINE among them
            return Holding(None)
        listed = Counter(c.client_id for c in connection.clients)
        if not listed:
            return Holding(None)
        note = None
        repeated = [(cid, n) for cid, n in sorted(listed.items()) if n > 1]
        if repeated:
            cid, n = repeated[0]
            note = (
                f"{self.broker} lists client {cid} on {n} connections (left from a pause or "
                "a lost network), so the clients count more consumers and hold fewer queues"
            )
        held: set[int] = set()
        intervals: list[float] = []
        for client_id in listed:
            said = await self._held_by(client_id)
            if said is None:
                return Holding(None, note)
            queues, interval = said
            held |= queues
            if interval is not None:
                intervals.append(interval)
        self.commit_interval_s = max(intervals, default=DEFAULT_COMMIT_INTERVAL_S)
        return Holding(frozenset(held), note)

    async def _held_by(self, client_id: str) -> tuple[set[int], float | None] | None:
        """The queue ids of this broker's topic the client holds, and its commit interval in
        seconds when it says; None when no broker got an answer from it."""
        for addr in self.ask_through:
            try:
                info = await consumer_running_info(self.admin, addr, self.group, client_id)
            except RocketMQError:
                continue
            ms = info.properties.get("persistConsumerOffsetInterval", "")
            interval = int(ms) / 1000 if ms.isdigit() and int(ms) > 0 else None
            queues = {
                mq.queue_id
                for mq in info.queues
                if mq.topic == self.topic
                and mq.broker_name == self.broker
                and not ((pq := info.process_queues.get(mq)) is not None and pq.dropped)
            }
            return queues, interval
        return None

    def target(self, w: QueueWrite) -> int:
        """Where the push moves the queue: the broker's answer, else the plan's target."""
        return self.pushed_to.get(w.row.queue_id, w.target)

    async def _watch(self, pending: Sequence[QueueWrite], taken: Taken) -> list[QueueWrite]:
        """Reads the pending queues back until each has held the push for `hold_s` since a read
        proved it, or take_s passes (a queue holding it then gets its `hold_s` out); the ones
        that did not."""
        left = list(pending)
        since: dict[int, float] = {}  # queue id -> the read that proved the push, held since
        deadline = time.monotonic() + self.timing.take_s
        while left:
            read = self.admin.query_consumer_offset
            answers = await asyncio.gather(
                *(read(self.addr, self.group, self.topic, w.row.queue_id) for w in left),
                return_exceptions=True,
            )
            now = time.monotonic()
            still = []
            for w, stored in zip(left, answers, strict=True):
                if isinstance(stored, BaseException) and not isinstance(stored, RocketMQError):
                    raise stored
                q = w.row.queue_id
                if isinstance(stored, RocketMQError):
                    still.append(w)  # a read that failed says nothing either way
                    continue
                if stored is not None:
                    self.last_read[q] = stored
                target = self.target(w)
                if q not in since and proves(w.before, target, stored, online=True):
                    since[q] = now
                if (
                    stored is not None
                    and q in since
                    and holds(w.before, target, stored, online=True)
                ):
                    if now - since[q] >= self.hold_s:
                        taken(w, stored)
                        continue
                else:
                    since.pop(q, None)  # the old position again: the client kept it
                still.append(w)
            left = still
            # Past the deadline, a queue holding the push gets its hold_s out.
            holding = any(w.row.queue_id in since for w in left)
            end = deadline + (self.hold_s if holding else 0.0)
            if not left or self.stop.is_set() or now >= end:
                break
            self.waiting(
                f"{self.broker}: watching the push of {self.topic} take on {len(left)} queue(s) "
                f"(each must hold it {self.hold_s:g} s; {end - now:.0f} s more at most)"
            )
            await asyncio.sleep(self.timing.poll_s)
        return left
