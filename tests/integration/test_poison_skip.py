"""A poison message found and skipped on an online orderly group, ledger-sync on the sandbox's
5.3.3 brokers: the test sends its own poison message to one queue, the group stops there,
`watch_group` finds that queue (and the seeded one, if nobody skipped it yet), a shift-by +1 on
that queue alone is applied on the server-side path and read back, and the consumer moves on:
its committed offset passes the target and its log shows the messages after the poison one
delivered, the poison one never again, while the other queues are left as they were."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from console.domain.journal import ApplyStatus, QueueState
from console.domain.offsets import QueueKey
from console.domain.reset_paths import ResetPathKind
from console.domain.spec import ResetSpec, Scope, ShiftBy
from console.domain.stuck import Finding
from console.rocketmq.admin import AdminClient
from console.sandbox import scenario as sc
from console.sandbox.runner import Sandbox
from console.services.apply.check import check_apply
from console.services.apply.writer import Applier
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import Workspace
from console.services.plan.load import load_plan
from console.services.plan.planner import Planner
from console.services.read.group_watch import consumercaches_of, wait_moved_on, watch_group
from tests.integration.consumer_log import queue_events
from tests.support.writes import write_access

BROKER, QUEUE = "broker-b", 2  # not the seeded poisoned queue (broker-a 1)
BEHIND = 2  # messages the test sends behind its poison message
#: The sandbox's consumers commit every second; over 6 s a healthy queue moves at least once.
WATCH_S = 6.0
#: How long the consumer may take to move past the skip: the walkthrough's own wait (6 x its
#: 10 s watch) and a margin for JVMs slowed by a loaded machine (over 30 s seen in CI).
MOVE_ON_S = 90.0


@pytest.fixture(scope="module")
def runner(plan_runner: SparkRunner) -> SparkRunner:
    return plan_runner


async def test_a_poison_message_is_found_skipped_and_the_consumer_moves_on(
    sandbox: Sandbox, runner: SparkRunner, tmp_path: Path
) -> None:
    assert sandbox.report is not None
    log = sandbox.consumers[sc.GROUP_POISON].log
    addr = sandbox.broker_addrs[BROKER]
    chosen: QueueKey = (sc.TOPIC_LEDGER, BROKER, QUEUE)
    started = time.monotonic()
    async with AdminClient([sandbox.namesrv_addr], timeout=10) as admin:
        reader = sandbox.reader(admin)

        async def committed(key: QueueKey) -> int | None:
            topic, broker, queue_id = key
            return await admin.query_consumer_offset(
                sandbox.broker_addrs[broker], sc.GROUP_POISON, topic, queue_id
            )

        seen_from = log.stat().st_size

        async def consuming() -> bool:
            return any(kind == "DELIVERED" for kind, _ in queue_events(log, seen_from, *chosen))

        # A test before this one may have stopped broker-b: the orderly consumer locks its
        # queues there again in its own time (minutes, on a loaded machine). The clock below
        # starts once it takes the ledger's trickle (a message a queue every 8 s) from this one.
        await eventually(consuming, f"ledger-sync consumes {chosen} again", timeout=240)
        poison = (
            await admin.send_message(
                addr, sc.TOPIC_LEDGER, QUEUE, b'{"poison":"test"}', tags="posted",
                keys=f"{sc.POISON_KEY} test-poison",
            )
        ).queue_offset  # fmt: skip
        for n in range(BEHIND):
            await admin.send_message(
                addr, sc.TOPIC_LEDGER, QUEUE, b"{}", tags="posted", keys=f"test-behind-{n}"
            )

        async def stuck_there() -> bool:
            failed = ("FAILED", poison) in queue_events(log, seen_from, *chosen)
            return failed and await committed(chosen) == poison

        await eventually(stuck_there, "ledger-sync failed the poison message and committed to it")
        stuck_at = time.monotonic()

        # The seeded poisoned queue is stuck too, unless another test skipped its message.
        ((seeded_mq, seeded_poison),) = sandbox.report.poisoned.items()
        seeded: QueueKey = (seeded_mq.topic, seeded_mq.broker_name, seeded_mq.queue_id)
        seeded_stuck = await committed(seeded) == seeded_poison
        report = await watch_group(reader, sc.GROUP_POISON, seconds=WATCH_S, reads=3)
        watched = time.monotonic()

        expected = {chosen} | ({seeded} if seeded_stuck else set())
        assert {s.key for s in report.stuck} == expected, report
        assert not report.partial
        assert report.online is True
        assert report.reads == 3
        assert report.seconds >= WATCH_S
        finding = next(s for s in report.stuck if s.key == chosen)
        assert finding.kind is Finding.STALLED
        assert finding.committed == poison
        assert finding.lag >= 1 + BEHIND
        assert finding.seconds == report.seconds
        # The client holding the queue caches the poison message and those behind it, far
        # below its threshold: it keeps pulling, so it will hear of the skip.
        cache = finding.cache
        if cache is None:
            # Between two rebalances (20 s apart; the tests before this one stopped and froze
            # broker-b) the client may hold no queue there: the report says so, never empty.
            assert report.cache_missing == (
                f"{sc.TOPIC_LEDGER}@{BROKER}:{QUEUE}: none of the 1 client(s) that answered "
                "holds it (rebalancing?)",
            ), report.cache_missing

            async def held() -> bool:
                nonlocal cache
                read = await reader.group_offsets(sc.GROUP_POISON, topics=[sc.TOPIC_LEDGER])
                cache = (await consumercaches_of(reader, read, [chosen]))[0].get(chosen)
                return cache is not None

            await eventually(held, f"a client of ledger-sync holds {chosen} again", timeout=60)
        assert cache is not None
        assert cache.cached_min == poison
        assert cache.cached >= 1 + BEHIND
        assert cache.threshold == sc.group_plan(sc.GROUP_POISON).pull_threshold
        assert not cache.flow_controlled
        others = {k for k in report.clear if k[0] == sc.TOPIC_LEDGER}
        assert len(others) == 2 * sc.topic_plan(sc.TOPIC_LEDGER).queues_per_broker - len(expected)

        # The skip: shift-by +1 on that queue only, through the planner and the apply service.
        ws = tmp_path / "ws"
        planner = Planner(Workspace(ws), runner, reader=reader, cluster="sandbox")
        scope = Scope(
            "sandbox", (sc.GROUP_POISON,), topics=(sc.TOPIC_LEDGER,), brokers=(BROKER,),
            queue_ids=(QUEUE,),
        )  # fmt: skip
        made = await planner.plan(ResetSpec(scope, ShiftBy(1)))
        plan = load_plan(Workspace(ws), made.uri, cluster="sandbox", now_ms=_now_ms())
        check = await check_apply(reader, plan)
        (group,) = check.groups
        assert group.consumers_online >= 1
        assert group.path.kind is ResetPathKind.SERVER_SIDE
        assert check.refusals(accept_drift=False) == ()
        (write,) = check.writes
        assert (write.row.broker, write.row.queue_id) == (BROKER, QUEUE)
        assert (write.before, write.target) == (poison, poison + 1)
        before_apply = {k: await committed(k) for k in others}
        planned = time.monotonic()

        journal = await Applier(write_access(reader, ws, "sandbox")).apply(check)
        applied = time.monotonic()
        assert journal.status is ApplyStatus.FINISHED
        (entry,) = journal.queues
        assert (entry.state, entry.stored) == (QueueState.VERIFIED, poison + 1)

        # Verified is the broker's read-back; the consumer moved on only once its committed
        # offset passes the target (it consumed the message right after the poison one).
        moved = await wait_moved_on(
            reader, sc.GROUP_POISON, {chosen: poison + 1}, timeout=MOVE_ON_S
        )
        assert moved.moved_on, moved
        moved_at = time.monotonic()
        after = {k: await committed(k) for k in others}
        if seeded_stuck:
            assert await committed(seeded) == seeded_poison  # still stuck: not touched

    events = queue_events(log, seen_from, *chosen)
    delivered = [o for kind, o in events if kind == "DELIVERED"]
    assert any(o > poison for o in delivered), events
    past = next(i for i, o in enumerate(delivered) if o > poison)
    assert delivered[past] == poison + 1  # the very next message, none skipped but the poison
    assert set(range(poison + 1, poison + 1 + BEHIND)) <= set(delivered[past:])
    assert poison not in delivered[past:]  # never delivered again once past it
    assert delivered[:past].count(poison) >= 2  # redelivered, over and over, until the skip
    # The other queues went on from where they were: none moved back, none lost its offset.
    went_back = {
        k: (was, after[k])
        for k, was in before_apply.items()
        if was is None or after[k] is None or after[k] < was
    }
    assert went_back == {}

    print(
        f"poison stuck after {stuck_at - started:.1f}s, watched {watched - stuck_at:.1f}s, "
        f"planned {planned - watched:.1f}s, applied {applied - planned:.1f}s, "
        f"consumer moved on {moved_at - applied:.1f}s after the apply"
    )


async def eventually(probe: Callable[[], Awaitable[bool]], what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not await probe():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout:.0f}s: {what}")
        await asyncio.sleep(0.2)


def _now_ms() -> int:
    return int(time.time() * 1000)
