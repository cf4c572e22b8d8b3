"""Moves a checked plan's offsets on the cluster, keeps the evidence, and reads every queue back.

The writing stage of an apply session (console/services/apply/session.py), which builds the
`Applier` from the session's `WriteAccess`: nothing else writes. Order of events for one apply:

1. the check (console/services/apply/check.py) read the cluster again; its refusals stop
   everything before a journal exists;
2. the journal is written (every queue's before-image and target, status "running") and
   fsync'd: from here on a crash leaves a record of what was attempted;
3. per group, by the reset path the check chose: the broker's own reset per queue (server-side),
   direct commits (offline update, re-checked for online consumers right before), or a client
   push per broker and topic, one at a time, each watched until it shows and pushed again if
   it does not (a broker answering "consumer not online" falls back to the direct commit for
   its queues);
4. as answers arrive, queue states go to the journal (rewritten whole, at most a few times a
   second) and one audit line per queue written is appended;
5. queues not yet verified are read back until a read proves the write (console/domain/drift.py,
   `proves`) or `verify_timeout_s` passes. A skip with consumers online that was only ever read
   past its target is "past the target, the reset not seen": never verified on that evidence;
6. the replicas a switch could make master are asked until each holds what its master read
   back, for `replica_wait_s` at most (console/services/apply/replicas.py says who and how
   long): consumer offsets are copied on a timer, not with the commit log, so a write only its
   master holds is rolled back by a switch. One not copied in time leaves the journal
   "not copied" (ApplyStatus.NOT_COPIED), naming it; `verify` asks again.

Before the journal is written, a broker set with no master (a switch under way) or a master
other than the one the check read refuses the apply.

A stop request (ctrl-c) stops issuing writes; what was sent is still read back and recorded,
and the journal says where it stopped. A broker that gives no answer (a hung JVM, a partition)
costs one request timeout per table written to it, and leaves the journal stopped, naming it,
when any of its queues is not verified. `resume` and `undo` work from the journal.

One piece (over 400 lines): the order of events above is the write path's guarantee, kept in one
place.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from console.domain.client_offsets import ClientOffsetsError
from console.domain.drift import holds, is_replay, key_text, proves
from console.domain.journal import ApplyProgress, ApplyStatus, Journal, JournalQueue, QueueState
from console.domain.reset_paths import ResetPathKind
from console.errors import Refused
from console.rocketmq.errors import ConnectError, ConnectionLost, RequestTimeout, RocketMQError
from console.services.apply.check import (
    ApplyCheck,
    GroupWrites,
    QueueWrite,
)
from console.services.apply.client_file_writer import rewrite_store_file
from console.services.apply.client_push import DEFAULT_TIMING, ClientPush, PushTiming
from console.services.apply.offset_writer import (
    IN_FLIGHT,
    OffsetWrite,
    OffsetWriter,
    WriteMethod,
    WriteOutcome,
    WriteResult,
)
from console.services.apply.replica_copies import wait_copied
from console.services.apply.replicas import BrokerReplicas
from console.services.apply.resume_check import ResumeCheck
from console.services.apply.write_access import WriteAccess
from console.services.infra.access import write_refusal
from console.services.infra.fanout import gather_answers
from console.services.infra.journal_store import (
    AuditEntry,
    AuditLog,
    JournalStore,
    new_apply_id,
    operator,
)
from console.services.read.online import Consumers, consumers_of

#: How long queues are read back for before they are left "not yet" (the client push watches
#: its own queues: console/services/apply/client_push.py).
VERIFY_TIMEOUT_S = 45.0
VERIFY_POLL_S = 1.0
#: The journal is rewritten at most this often while answers arrive (and always at the end).
FLUSH_EVERY_S = 0.25


ProgressHook = Callable[[ApplyProgress], object]


class Applier:
    """Applies checks through a session's `WriteAccess` (an admin client opened for writing,
    the workspace's journals and audit log)."""

    def __init__(
        self,
        access: WriteAccess,
        *,
        who: str | None = None,
        in_flight: int = IN_FLIGHT,
        verify_timeout_s: float = VERIFY_TIMEOUT_S,
        push_timing: PushTiming = DEFAULT_TIMING,
        clock: Callable[[], float] = time.time,
        replica_wait_s: float | None = None,
    ) -> None:
        refusal = write_refusal(access.cluster)
        if refusal is not None:  # an access made by hand must obey the one rule too
            raise Refused([refusal])
        self.access = access
        self.reader = access.reader
        self.store = JournalStore(access.root)
        self.audit = AuditLog(access.root)
        self.cluster = access.cluster.name
        self.who = who or operator()
        self.in_flight = in_flight
        self.verify_timeout_s = verify_timeout_s
        self.push_timing = push_timing
        self.clock = clock
        #: How long the replicas are waited for (None: by each broker's mode).
        self.replica_wait_s = replica_wait_s

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    async def apply(
        self,
        check: ApplyCheck,
        *,
        accept_drift: bool = False,
        kind: str = "apply",
        undo_of: str | None = None,
        on_progress: ProgressHook | None = None,
        stop: asyncio.Event | None = None,
    ) -> Journal:
        refusals = check.refusals(accept_drift=accept_drift)
        if refusals:
            raise Refused(refusals)
        if not check.writes:
            raise Refused(["the plan changes no queue: nothing to apply"])
        replicas = await self._replicas(check.groups)
        header = check.plan.header
        started = self._now_ms()
        first_group = check.groups[0].group
        journal = Journal(
            apply_id=new_apply_id(started, first_group, kind, secrets.token_hex(4)),
            kind=kind,
            plan_id=header.plan_id,
            plan_hash=header.content_hash,
            cluster=self.cluster,
            paths={g.group: str(g.path.kind) for g in check.groups},
            who=self.who,
            started_at_ms=started,
            queues=tuple(_entry(w) for w in check.writes),
            drift_accepted=tuple(key_text(d.key) for d in check.drift) if accept_drift else (),
            undo_of=undo_of,
        )
        with self.store.hold(journal.apply_id):
            self.store.write(journal)
            run = _Run(self, journal, check.groups, on_progress, stop or asyncio.Event(), replicas)
            return await run.go()

    async def resume(
        self,
        check: ResumeCheck,
        *,
        accept_drift: bool = False,
        on_progress: ProgressHook | None = None,
        stop: asyncio.Event | None = None,
    ) -> Journal:
        """Finish an apply that stopped part-way, in its own journal: queues found at their
        target are verified without a write, the rest are written and read back; so are the
        queues a switch rolled back since the apply verified them."""
        refusals = check.refusals(accept_drift=accept_drift)
        if refusals:
            raise Refused(refusals)
        replicas = await self._replicas(check.groups)
        before = check.journal
        with self.store.hold(before.apply_id):
            # Read again under the lock: another console may have finished it meanwhile.
            if self.store.load(before.apply_id) != before:
                raise Refused([f"apply {before.apply_id} changed since it was read: look again"])
            found = [
                replace(q, state=QueueState.VERIFIED, detail="found at the target on resume")
                for q in check.arrived
            ]
            found += [
                replace(
                    q,
                    state=QueueState.PAST_TARGET,
                    detail="found past the target on resume with consumers online: left as it "
                    "is (writing the target again would move the group back)",
                )
                for q in check.past
            ]
            # Written again: a switch to a replica that had not copied them put them back.
            found += [
                replace(
                    q,
                    state=QueueState.PENDING,
                    detail=f"rolled back by a switch (the master held {q.stored} again): "
                    "written again on resume",
                )
                for q in check.rolled_back
            ]
            drifted = tuple(key_text(d.key) for d in check.drift) if accept_drift else ()
            journal = replace(
                before.with_queues(found),
                status=ApplyStatus.RUNNING,
                finished_at_ms=None,
                stopped_because=None,
                drift_accepted=before.drift_accepted + drifted,
            )
            self.store.write(journal)
            # Queues verified by the earlier run have their audit line; every other one gets
            # the line of how it ends now.
            rewritten = {q.key for q in check.rolled_back}
            audited = {
                q.key
                for q in before.queues
                if q.state is QueueState.VERIFIED and q.key not in rewritten
            }
            run = _Run(
                self,
                journal,
                check.groups,
                on_progress,
                stop or asyncio.Event(),
                replicas,
                audited=audited,
                why_written={q.key: q.detail or "" for q in found if q.key in rewritten},
            )
            return await run.go()

    async def _replicas(self, groups: Iterable[GroupWrites]) -> Mapping[str, BrokerReplicas]:
        """Each written broker's master and the replicas to wait for, from the name server
        asked again: a set with no master, or a master other than the one the check read (a
        switch since), refuses the write."""
        masters = {w.row.broker: w.broker_addr for g in groups for w in g.writes}
        now = await self.access.replicas(self.reader, masters, self.replica_wait_s)
        refusals = list(now.blockers)
        for broker, addr in sorted(masters.items()):
            known = now.by_broker.get(broker)
            if known is not None and known.master_addr != addr:
                refusals.append(
                    f"broker {broker}'s master changed since the check ({addr} -> "
                    f"{known.master_addr}): nothing written; apply again to read the "
                    "before-images from the new master"
                )
        if refusals:
            raise Refused(refusals)
        return now.by_broker


def _entry(w: QueueWrite) -> JournalQueue:
    r = w.row
    return JournalQueue(r.group, r.topic, r.broker, w.broker_addr, r.queue_id, w.before, w.target)


class _Run:
    """One apply under way: the journal as it stands, and what is left to flush."""

    def __init__(
        self,
        applier: Applier,
        journal: Journal,
        groups: tuple[GroupWrites, ...],
        on_progress: ProgressHook | None,
        stop: asyncio.Event,
        replicas: Mapping[str, BrokerReplicas],
        *,
        audited: set[tuple[str, str, str, int]] | None = None,
        why_written: Mapping[tuple[str, str, str, int], str] | None = None,
    ) -> None:
        self.applier = applier
        #: Why a queue is written again (a rollback found on resume): kept in its detail.
        self.why_written = dict(why_written or {})
        self.replicas = replicas
        self.admin = applier.reader.admin
        self.journal = journal
        self.groups = groups
        self.on_progress = on_progress
        self.stop = stop
        self.entries = {q.key: q for q in journal.queues}
        #: Queues that have (or are about to get, at the next flush) their audit line.
        self.audited: set[tuple[str, str, str, int]] = set(audited or ())
        self.unaudited: list[tuple[str, str, str, int]] = []
        self.flushed_at = 0.0
        self.flush_due: asyncio.TimerHandle | None = None
        self.stage = "writing"
        #: What the writes wait for now (ApplyProgress.waiting).
        self.waiting: str | None = None
        #: Queues the client push watched to the end: the read-back leaves them as they are.
        self.watched: set[tuple[str, str, str, int]] = set()
        #: Brokers a write or read-back got no answer from (timed out, unreachable, cut off),
        #: by name: the first such error of each.
        self.unanswered: dict[str, RocketMQError] = {}

    async def go(self) -> Journal:
        stopped_because: str | None = None
        try:
            for group in self.groups:
                if self.stop.is_set():
                    stopped_because = "stopped on request before every group was written"
                    break
                reason = await self._write_group(group)
                if reason is not None:
                    stopped_because = reason
                    break
            self.stage = "verifying"
            await self._verify()
        finally:
            # Whatever was answered gets its audit line, final or not.
            late = [
                k
                for k, q in self.entries.items()
                if q.state is not QueueState.PENDING and k not in self.audited
            ]
            self.audited.update(late)
            self.unaudited.extend(late)
            self._flush(force=True)
        if self.stop.is_set() and stopped_because is None:
            stopped_because = "stopped on request"
        if stopped_because is None:
            stopped_because = self._silent_brokers()
        not_copied, copies = (False, ()) if stopped_because else await self._copies()
        status = ApplyStatus.STOPPED if stopped_because else ApplyStatus.FINISHED
        if status is ApplyStatus.FINISHED and not_copied:
            status = ApplyStatus.NOT_COPIED
        self.journal = replace(
            self._journal(),
            status=status,
            finished_at_ms=self.applier._now_ms(),
            stopped_because=stopped_because,
            replicas=copies,
        )
        self.applier.store.write(self.journal)
        self.stage = "done"
        self._progress()
        return self.journal

    # ---- writing ---------------------------------------------------------------------------

    async def _write_group(self, g: GroupWrites) -> str | None:
        online = g.consumers_online > 0
        if g.path.kind is ResetPathKind.SERVER_SIDE:
            await self._write(g.writes, WriteMethod.BROKER_RESET, online=online)
            return None
        if g.path.kind is ResetPathKind.OFFLINE_UPDATE:
            return await self._write_offline(g.group, g.writes)
        if g.path.kind is ResetPathKind.CLIENT_PUSH:
            return await self._push(g)
        if g.path.kind is ResetPathKind.CLIENT_FILE:
            return await self._write_file(g)
        return f"group {g.group}: {g.path.kind}: {g.path.blocker or g.path.reason}"

    async def _write_offline(self, group: str, writes: Iterable[QueueWrite]) -> str | None:
        # Consumers may have started since the check: their next commit would undo ours.
        writes = list(writes)
        who = await self._consumers(group, writes)
        if who.unknown is not None:
            return (
                f"group {group}: could not tell who is online right before writing: {who.unknown}"
            )
        if who.online:
            return (
                f"group {group}: {who.online} consumer(s) came online since the check; a direct "
                "write would be overwritten by their next commit: stop them, or plan again"
            )
        await self._write(writes, WriteMethod.COMMIT, online=False)
        return None

    async def _consumers(self, group: str, writes: Iterable[QueueWrite]) -> Consumers:
        """Who consumes `group` now, asked as the check asked (console/services/read/online)."""
        listed = list(writes)
        brokers = {w.row.broker: w.broker_addr for w in listed}
        topics = {w.row.topic for w in listed}
        return await consumers_of(self.applier.reader, group, brokers, topics)

    async def _write(
        self, writes: Iterable[QueueWrite], method: WriteMethod, *, online: bool
    ) -> None:
        by_write = {_offset_write(w): w for w in writes}

        def accept(ow: OffsetWrite, stored: int | None) -> bool:
            return proves(by_write[ow].before, ow.offset, stored, online=online)

        writer = OffsetWriter(
            self.admin, in_flight=self.applier.in_flight, method=method, accept=accept
        )
        results = writer.results(by_write)
        try:
            async for result in results:
                self._settle(by_write[result.write], result, online=online)
                if self.stop.is_set():
                    break  # unsent writes are cancelled; the sent ones are read back below
        finally:
            await results.aclose()

    async def _push(self, g: GroupWrites) -> str | None:
        """The legacy client push: per broker and topic, the timestamp goes to the clients,
        which suspend, drop their queues and commit the new offsets themselves; each push is
        watched until it shows on the broker (console/services/apply/client_push.py)."""
        assert g.push_timestamp is not None
        tables: dict[tuple[str, str], list[QueueWrite]] = {}
        for w in g.writes:
            tables.setdefault((w.broker_addr, w.row.topic), []).append(w)
        addrs = sorted({w.broker_addr for w in g.writes})
        fallback: list[QueueWrite] = []
        for (addr, topic), writes in sorted(tables.items()):
            if self.stop.is_set():
                return "stopped on request during the client push"
            push = ClientPush(
                self.admin,
                group=g.group,
                topic=topic,
                broker=writes[0].row.broker,
                addr=addr,
                timestamp_ms=g.push_timestamp,
                other_addrs=addrs,
                timing=self.applier.push_timing,
                stop=self.stop,
                waiting=self._wait,
            )
            outcome = await push.run(writes, self._pushed, self._taken)
            self._wait(None)
            if outcome.refused is not None:
                self._fail(outcome.refused_writes, outcome.refused)
            fallback.extend(outcome.not_online)  # nobody to push to: write them directly
            for w in outcome.not_taken:  # watched to the end already: the read-back is done
                q = self.entries[w.key]
                self.watched.add(q.key)
                stored = outcome.last_read.get(w.row.queue_id)
                detail = (
                    f"pushed {outcome.pushes} time(s); no read showed the pushed offset held "
                    f"for {outcome.hold_s:g} s (two of the clients' commit intervals): the "
                    "clients may have kept their old position"
                )
                self._record(q, _unproved(q, stored, online=True), stored, detail)
        if fallback:
            return await self._write_offline(g.group, fallback)
        return None

    def _pushed(
        self, writes: Iterable[QueueWrite], detail: str, offsets: Mapping[int, int]
    ) -> None:
        for w in writes:
            q = self.entries[w.key]
            pushed = offsets.get(w.row.queue_id)
            told = detail
            if pushed is not None:
                # The broker found the time's offset now (a `latest` push goes to the max of
                # now): that is where the queue moves, and what the read-back looks for.
                q = replace(q, target=pushed)
                if pushed != w.target:
                    told += f"; the broker pushed {pushed} (the plan said {w.target})"
            self._record(q, QueueState.WRITTEN, None, told)

    def _taken(self, w: QueueWrite, stored: int) -> None:
        q = self.entries[w.key]
        self._record(q, QueueState.VERIFIED, stored, q.detail)

    async def _write_file(self, g: GroupWrites) -> str | None:
        """A BROADCASTING client's offsets.json, rewritten in one step while it is stopped;
        what the file holds afterwards, read back from disk, is each queue's verdict."""
        file, client = Path(g.path.file or ""), g.path.client_id
        # The client may have started since the check: it would write its offsets over ours.
        who = await self._consumers(g.group, g.writes)
        if who.unknown is not None:
            return f"group {g.group}: could not tell whether client {client} runs: {who.unknown}"
        if client in who.clients:
            return f"group {g.group}: client {client} started since the check: stop it first"
        targets = {(w.row.topic, w.row.broker, w.row.queue_id): w.target for w in g.writes}
        try:
            stored = await asyncio.to_thread(rewrite_store_file, self.applier.access, file, targets)
        except (OSError, ClientOffsetsError, Refused) as exc:
            for w in g.writes:
                self._record(_entry(w), QueueState.FAILED, None, f"{file}: {exc}")
            return None
        for w in g.writes:
            got = stored.get((w.row.topic, w.row.broker, w.row.queue_id))
            state = QueueState.VERIFIED if got == w.target else QueueState.FAILED
            self._record(_entry(w), state, got, f"{file} rewritten, the previous kept as .bak")
        return None

    # ---- verifying -------------------------------------------------------------------------

    async def _verify(self) -> None:
        """Read back every queue written but not verified, until each is or time is up."""
        online = {g.group: g.consumers_online > 0 for g in self.groups}
        deadline = time.monotonic() + self.applier.verify_timeout_s

        async def read(q: JournalQueue) -> int | None:
            return await self.admin.query_consumer_offset(
                q.broker_addr, q.group, q.topic, q.queue_id
            )

        while True:
            waiting = [
                q
                for q in self.entries.values()
                if q.state in (QueueState.WRITTEN, QueueState.NOT_YET) and q.key not in self.watched
            ]
            if not waiting:
                self._wait(None)
                return
            left = max(0.0, deadline - time.monotonic())
            self._wait(
                f"reading back {len(waiting)} queue(s) until each shows the write "
                f"({left:.0f} s more at most)"
            )
            answers = await gather_answers(read, waiting, limit=self.applier.in_flight)
            last = time.monotonic() >= deadline
            for q, stored in answers.items():
                if isinstance(stored, RocketMQError):
                    self._heard(q.broker, stored)
                    if last:
                        self._record(q, QueueState.FAILED, q.stored, f"read-back: {stored}")
                    continue
                on = online.get(q.group, False)
                if proves(q.before, q.target, stored, online=on):
                    self._record(q, QueueState.VERIFIED, stored, q.detail)
                elif last:
                    self._record(q, _unproved(q, stored, online=on), stored, q.detail)
            self._flush(force=True)
            if last:
                self._wait(None)
                return
            await asyncio.sleep(VERIFY_POLL_S)

    async def _copies(self) -> tuple[bool, tuple[str, ...]]:
        """Wait for the replicas to hold what their masters read back: whether one had not
        copied it when its wait ended, and a line per broker saying what became of it."""
        verified = [q for q in self.entries.values() if q.state is QueueState.VERIFIED]
        if not verified:
            return False, ()
        self.stage = "copying"
        online = {g.group: g.consumers_online > 0 for g in self.groups}
        copies = await wait_copied(
            self.admin,
            verified,
            self.replicas,
            online,
            announce=self._wait,
            in_flight=self.applier.in_flight,
        )
        lines = copies.lines(self.replicas, verified, self.journal.apply_id)
        return bool(copies.lacking), tuple(lines)

    # ---- recording -------------------------------------------------------------------------

    def _silent_brokers(self) -> str | None:
        """Why the apply stopped short when a broker stopped answering (None: none did, or
        every queue of those that did was verified after all): a broker that hangs mid-apply
        leaves its queues unwritten or unread, which only `resume` can finish once it answers."""
        reasons = []
        for broker, error in sorted(self.unanswered.items()):
            left = sum(1 for q in self.entries.values() if q.broker == broker and not q.state.done)
            if left:
                reasons.append(
                    f"{broker} did not answer, {left} of its queue(s) not verified ({error})"
                )
        return "; ".join(reasons) or None

    def _heard(self, broker: str, error: RocketMQError | None) -> None:
        """Keep `error` when it says `broker` gave no answer at all."""
        if isinstance(error, _NO_ANSWER):
            self.unanswered.setdefault(broker, error)

    def _settle(self, w: QueueWrite, result: WriteResult, *, online: bool) -> None:
        self._heard(w.row.broker, result.error)
        entry = _entry(w)
        why = self.why_written.get(entry.key)
        remark = "; ".join(t for t in (why, result.remark) if t) or None
        if result.outcome is WriteOutcome.VERIFIED:
            self._record(entry, QueueState.VERIFIED, result.stored, remark)
        elif result.outcome is WriteOutcome.KEPT_OTHER:
            # Online, the consumers may not have picked it up yet: read back again later.
            state = QueueState.NOT_YET if online else QueueState.KEPT_OTHER
            self._record(entry, state, result.stored, remark)
        elif not result.sent:
            self._record(entry, QueueState.PENDING, None, f"not sent: {result.error}")
        else:
            self._record(entry, QueueState.FAILED, result.stored, str(result.error))

    def _fail(self, writes: Iterable[QueueWrite], error: RocketMQError) -> None:
        for w in writes:
            self._heard(w.row.broker, error)
            self._record(_entry(w), QueueState.FAILED, None, str(error))

    def _record(
        self, q: JournalQueue, state: QueueState, stored: int | None, detail: str | None
    ) -> None:
        self.entries[q.key] = replace(q, state=state, stored=stored, detail=detail)
        if state in _FINAL and q.key not in self.audited:
            self.audited.add(q.key)
            self.unaudited.append(q.key)
        self._flush()

    def _journal(self) -> Journal:
        return replace(self.journal, queues=tuple(self.entries.values()))

    def _flush(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.flushed_at < FLUSH_EVERY_S:
            # Written soon in any case: when the next answers are slow to come (a broker that
            # hangs), these are on disk before a crash could lose them.
            if self.flush_due is None:
                wait = FLUSH_EVERY_S - (now - self.flushed_at)
                self.flush_due = asyncio.get_running_loop().call_later(wait, self._flush_now)
            return
        if self.flush_due is not None:
            self.flush_due.cancel()
            self.flush_due = None
        self.flushed_at = now
        self.journal = self._journal()
        # The journal first: an audit line never names a write the journal does not hold.
        self.applier.store.write(self.journal)
        if self.unaudited:
            j = self.journal
            at = self.applier._now_ms()
            keys, self.unaudited = self.unaudited, []
            self.applier.audit.append(
                AuditEntry(at, j.who, j.cluster, j.apply_id, j.plan_hash, j.paths[k[0]], q)
                for k in keys
                if (q := self.entries[k])
            )
        self._progress()

    def _flush_now(self) -> None:
        self.flush_due = None
        self._flush(force=True)

    def _wait(self, what: str | None) -> None:
        """Tell what the writes wait for now (None: nothing any more)."""
        if what != self.waiting:
            self.waiting = what
            self._progress()

    def _progress(self) -> None:
        if self.on_progress is None:
            return
        queues = self.entries.values()
        self.on_progress(
            ApplyProgress(
                total=len(self.entries),
                settled=sum(1 for q in queues if q.state is not QueueState.PENDING),
                verified=sum(1 for q in queues if q.state is QueueState.VERIFIED),
                stage=self.stage,
                waiting=self.waiting,
            )
        )


def _unproved(q: JournalQueue, stored: int | None, *, online: bool) -> QueueState:
    """The state of a queue no read proved written when the read-back ends."""
    if not online:
        return QueueState.KEPT_OTHER
    if not is_replay(q.before, q.target) and holds(q.before, q.target, stored, online=True):
        return QueueState.PAST_TARGET
    return QueueState.NOT_YET


#: Errors that mean a broker gave no answer (as opposed to an answer that refused).
_NO_ANSWER = (RequestTimeout, ConnectError, ConnectionLost)

#: States a queue does not leave during this run (NOT_YET and WRITTEN may still verify).
_FINAL = frozenset(
    {QueueState.VERIFIED, QueueState.FAILED, QueueState.KEPT_OTHER, QueueState.PAST_TARGET}
)


def _offset_write(w: QueueWrite) -> OffsetWrite:
    return OffsetWrite(w.broker_addr, w.row.group, w.row.topic, w.row.queue_id, w.target)
