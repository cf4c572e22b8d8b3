"""Commits offsets queue by queue, the way a broker can take them, and says what each queue holds.

Two things a plain burst of UPDATE_CONSUMER_OFFSET gets wrong, both acknowledged with SUCCESS:

- a broker loses concurrent *first* commits of a `topic@group` it has no offset for yet: each
  request builds the group's offset table and the last one published wins (fact sheet §9.1,
  5.3.3 and earlier). So per (broker, topic, group) one queue is written alone, and only once
  the broker has answered it do the others go, many at a time;
- a broker with a server-side reset pending for a queue drops the commit and says only "Offset
  has been previously reset" (§4.3A).

So every written queue is read back (QUERY_CONSUMER_OFFSET, "not found" kept apart from 0) once
all writes of its (broker, topic, group) are answered, and reported as verified, kept another
value (with the broker's remark), or failed (with the typed error). Results come out as they are
known, for a journal to record and a progress bar to count.

Writes go to masters only. A 5.3.3 slave takes UPDATE_CONSUMER_OFFSET with SUCCESS and keeps
the value until its next copy from the master overwrites it: a write there is lost, silently.
So the writer first has the client learn, from the name server, which addresses are slaves;
the wire client then refuses any write to one (`NotMaster`, nothing sent).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import BrokerError, NotMaster, ReadOnlyError, RocketMQError
from console.services.infra.fanout import Limit

#: Requests (writes and read-backs) outstanding at once, over all brokers.
IN_FLIGHT = 256


@dataclass(frozen=True, slots=True)
class OffsetWrite:
    """Commit `offset` for `group` on queue `queue_id` of `topic` at the broker `broker_addr`."""

    broker_addr: str
    group: str
    topic: str
    queue_id: int
    offset: int

    @property
    def table(self) -> tuple[str, str, str]:
        """The broker's offset table this write lands in: (broker, topic, group)."""
        return (self.broker_addr, self.topic, self.group)

    def __str__(self) -> str:
        return f"{self.group} on {self.topic}:{self.queue_id} at {self.broker_addr}"


class WriteMethod(StrEnum):
    """How an offset is moved: a direct commit (what a consumer does), or the broker's own
    reset (server-side path, 5.1+ with useServerSideResetOffset: the broker holds the target
    until the group's next pull and drops commits meanwhile, so online consumers cannot
    overwrite it)."""

    COMMIT = "UPDATE_CONSUMER_OFFSET"
    BROKER_RESET = "INVOKE_BROKER_TO_RESET_OFFSET"


#: Whether what a queue holds after the write counts as written: (write, stored) -> bool.
Acceptance = Callable[["OffsetWrite", "int | None"], bool]


def holds_target(write: OffsetWrite, stored: int | None) -> bool:
    return stored == write.offset


class WriteOutcome(StrEnum):
    VERIFIED = "verified"
    KEPT_OTHER = "kept another value"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class WriteResult:
    write: OffsetWrite
    outcome: WriteOutcome
    #: What the read-back found; None when nothing is committed there, or it was not read.
    stored: int | None = None
    #: What the broker said to the update (e.g. "Offset has been previously reset").
    remark: str | None = None
    #: Why the queue failed: the update's or the read-back's error.
    error: RocketMQError | None = None
    #: False when the update was never sent (the broker did not answer this table's first one).
    sent: bool = True

    def describe(self) -> str:
        """One line for a log, a report or an error message."""
        w = self.write
        if self.outcome is WriteOutcome.VERIFIED:
            return f"{w}: {w.offset}"
        if self.outcome is WriteOutcome.KEPT_OTHER:
            held = "nothing committed" if self.stored is None else f"holds {self.stored}"
            why = f" ({self.remark})" if self.remark else ""
            return f"{w}: {held}, not {w.offset}{why}"
        prefix = "" if self.sent else "not sent: "
        return f"{w}: {prefix}{self.error}"


@dataclass(frozen=True, slots=True)
class WriteProgress:
    """How far a write of `total` queues is: `answered` updates, `reported` results."""

    total: int
    answered: int
    reported: int

    @property
    def finished(self) -> bool:
        return self.reported == self.total


@dataclass(frozen=True, slots=True)
class WriteReport:
    """Every queue's result, in the order the writes were given."""

    results: tuple[WriteResult, ...]

    def _with(self, outcome: WriteOutcome) -> tuple[WriteResult, ...]:
        return tuple(r for r in self.results if r.outcome is outcome)

    @property
    def verified(self) -> tuple[WriteResult, ...]:
        return self._with(WriteOutcome.VERIFIED)

    @property
    def kept_other(self) -> tuple[WriteResult, ...]:
        return self._with(WriteOutcome.KEPT_OTHER)

    @property
    def failed(self) -> tuple[WriteResult, ...]:
        return self._with(WriteOutcome.FAILED)

    @property
    def ok(self) -> bool:
        return len(self.verified) == len(self.results)

    def summary(self, limit: int = 3) -> str:
        """`998 of 1000 queues verified; 2 not: …` naming the first `limit` that were not."""
        bad = [r for r in self.results if r.outcome is not WriteOutcome.VERIFIED]
        text = f"{len(self.verified)} of {len(self.results)} queues verified"
        if bad:
            named = "; ".join(r.describe() for r in bad[:limit])
            more = f"; and {len(bad) - limit} more" if len(bad) > limit else ""
            text += f"; {len(bad)} not: {named}{more}"
        return text


ResultHook = Callable[[WriteResult], None]
ProgressHook = Callable[[WriteProgress], None]


class OffsetWriter:
    """Writes offsets through one admin client (opened for writing) with at most `in_flight`
    requests outstanding. `on_progress` hears every update answered and every result."""

    def __init__(
        self,
        admin: AdminClient,
        *,
        in_flight: int = IN_FLIGHT,
        on_progress: ProgressHook | None = None,
        method: WriteMethod = WriteMethod.COMMIT,
        accept: Acceptance = holds_target,
    ) -> None:
        if in_flight < 1:
            raise ValueError(f"in_flight must be at least 1, got {in_flight}")
        self.admin = admin
        self.in_flight = in_flight
        self.on_progress = on_progress
        self.method = method
        self.accept = accept

    async def write(
        self, writes: Iterable[OffsetWrite], *, on_result: ResultHook | None = None
    ) -> WriteReport:
        """Write every queue and read it back; `on_result` hears each result as it is known.

        A queue named twice is refused (ValueError) before anything is sent: which of two
        targets should win is the caller's decision. Errors of the cluster become results;
        anything else (a bug) propagates and cancels what is still running.
        """
        ordered = list(writes)
        tables = _by_table(ordered)
        await self._learn_roles()
        run = _Run(self, Limit(self.in_flight), len(ordered), on_result)
        run.progress()
        async with asyncio.TaskGroup() as tg:
            for table in tables.values():
                tg.create_task(run.table(table))
        return WriteReport(tuple(run.results[w] for w in ordered))

    async def _learn_roles(self) -> None:
        """Ask the name server which addresses are masters and which slaves now, so that the
        client refuses a write to a slave. Without an answer the client keeps what it learnt
        before (the writes' addresses came from a master listing)."""
        try:
            await self.admin.cluster_info()
        except RocketMQError:
            pass

    async def results(self, writes: Iterable[OffsetWrite]) -> AsyncGenerator[WriteResult, None]:
        """The results of `write`, as they are known. Leaving the loop early cancels the
        requests not yet sent (updates already sent may still land, unverified)."""
        ready: asyncio.Queue[WriteResult | None] = asyncio.Queue()

        async def drive() -> WriteReport:
            try:
                return await self.write(writes, on_result=ready.put_nowait)
            finally:
                ready.put_nowait(None)

        driver = asyncio.ensure_future(drive())
        try:
            while (result := await ready.get()) is not None:
                yield result
            await driver  # raises what made the writes stop, if anything did
        finally:
            if not driver.done():
                driver.cancel()
                await asyncio.gather(driver, return_exceptions=True)


def _by_table(writes: Sequence[OffsetWrite]) -> dict[tuple[str, str, str], list[OffsetWrite]]:
    tables: dict[tuple[str, str, str], list[OffsetWrite]] = {}
    seen: set[tuple[str, str, str, int]] = set()
    for w in writes:
        queue = (*w.table, w.queue_id)
        if queue in seen:
            raise ValueError(f"{w} is written twice")
        seen.add(queue)
        tables.setdefault(w.table, []).append(w)
    return tables


class _Run:
    """One call of OffsetWriter.write: the shared gate, the counts and the results so far."""

    def __init__(
        self,
        writer: OffsetWriter,
        gate: Limit,
        total: int,
        on_result: ResultHook | None,
    ) -> None:
        self.admin = writer.admin
        self.method = writer.method
        self.accept = writer.accept
        self.gate = gate
        self.total = total
        self.on_result = on_result
        self.on_progress = writer.on_progress
        self.answered = 0
        self.results: dict[OffsetWrite, WriteResult] = {}

    def progress(self) -> None:
        if self.on_progress is not None:
            self.on_progress(WriteProgress(self.total, self.answered, len(self.results)))

    def report(self, result: WriteResult) -> None:
        self.results[result.write] = result
        if self.on_result is not None:
            self.on_result(result)
        self.progress()

    async def table(self, writes: list[OffsetWrite]) -> None:
        """All writes of one (broker, topic, group): one alone until the broker has taken one,
        then the rest at once, then every acknowledged queue read back."""
        acknowledged: list[tuple[OffsetWrite, str | None]] = []
        waiting = list(writes)
        while waiting and not acknowledged:
            first = waiting.pop(0)
            answer = await self.update(first)
            if isinstance(answer, RocketMQError):
                sent = not isinstance(answer, NotMaster | ReadOnlyError)  # refused before sending
                self.report(WriteResult(first, WriteOutcome.FAILED, error=answer, sent=sent))
                if not isinstance(answer, BrokerError):
                    # No answer at all: the rest would only race each other into a table that
                    # may still not exist, on a broker that may not be there.
                    for w in waiting:
                        self.report(WriteResult(w, WriteOutcome.FAILED, error=answer, sent=False))
                    return
                continue  # refused (e.g. busy): the next queue goes alone in its place
            acknowledged.append((first, answer))
        answers = await asyncio.gather(*(self.update(w) for w in waiting))
        for w, answer in zip(waiting, answers, strict=True):
            if isinstance(answer, RocketMQError):
                self.report(WriteResult(w, WriteOutcome.FAILED, error=answer))
            else:
                acknowledged.append((w, answer))
        await asyncio.gather(*(self.check(w, remark) for w, remark in acknowledged))

    async def update(self, w: OffsetWrite) -> str | None | RocketMQError:
        """The broker's remark, or the error that stands for its answer."""

        async def send() -> str | None:
            if self.method is WriteMethod.BROKER_RESET:
                await self.admin.reset_offset(
                    w.broker_addr, w.group, w.topic, queue_id=w.queue_id, offset=w.offset
                )
                return None
            return await self.admin.update_consumer_offset(
                w.broker_addr, w.group, w.topic, w.queue_id, w.offset
            )

        answer: str | None | RocketMQError
        try:
            answer = await self.gate.run(send)
        except RocketMQError as exc:
            answer = exc
        self.answered += 1
        self.progress()
        return answer

    async def check(self, w: OffsetWrite, remark: str | None) -> None:
        try:
            stored = await self.gate.run(
                lambda: self.admin.query_consumer_offset(
                    w.broker_addr, w.group, w.topic, w.queue_id
                )
            )
        except RocketMQError as exc:
            self.report(WriteResult(w, WriteOutcome.FAILED, remark=remark, error=exc))
            return
        outcome = WriteOutcome.VERIFIED if self.accept(w, stored) else WriteOutcome.KEPT_OTHER
        self.report(WriteResult(w, outcome, stored=stored, remark=remark))
