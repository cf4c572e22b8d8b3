"""An online group moved back by time on the server-side reset path, with its live Java consumer
running (shipping-service on the sandbox's 5.3.3 brokers): the broker moves the offsets itself,
the read-back converges (at or past each target, short of where the group was), and the
consumer's own log shows every queue's messages delivered again from exactly its target.

A skip online is verified only by its target read back. A write lost on its way (dropped before
it is sent, answered as a success) while the consumer consumes on past the target is "past the
target, the reset not seen": exit 1, never verified, and `resume` leaves it so, writing nothing
(the target again would move the group back)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from console.cli import main
from console.domain.journal import ApplyStatus, QueueState
from console.domain.reset_paths import ResetPathKind
from console.domain.spec import ResetSpec, Scope, ShiftBy, ToTimestamp
from console.rocketmq.admin import AdminClient
from console.rocketmq.models import MessageQueue
from console.sandbox.consumers import wait_online
from console.sandbox.runner import Sandbox
from console.sandbox.scenario import GROUP_LIVE, TOPIC_ORDERS, GroupPlan, Setup
from console.sandbox.seed import send_patiently, wait_for_routes
from console.services.apply.check import check_apply
from console.services.apply.intents import ApplyPlan
from console.services.apply.session import ApplySession
from console.services.apply.write_access import WriteAccess
from console.services.apply.write_check import Confirmation, WriteCheck
from console.services.apply.writer import Applier
from console.services.infra.journal_store import AuditLog
from console.services.infra.spark_runner import SparkRunner
from console.services.infra.workspace import Workspace
from console.services.plan.load import load_plan
from console.services.plan.planner import Planner
from tests.integration.consumer_log import queue_events, redelivered_from
from tests.support.groups import BACK_MS
from tests.support.writes import write_access


@pytest.fixture(scope="module")
def runner(plan_runner: SparkRunner) -> SparkRunner:
    return plan_runner


async def test_an_online_group_replays_from_the_targets_on_the_server_side_path(
    sandbox: Sandbox, runner: SparkRunner, tmp_path: Path
) -> None:
    log = sandbox.consumers[GROUP_LIVE].log
    async with AdminClient([sandbox.namesrv_addr], timeout=10) as admin:
        # A time every queue has consumed past: each target lies behind the group's position.
        standing = []
        for addr in sandbox.broker_addrs.values():
            spans = await admin.consume_time_span(addr, TOPIC_ORDERS, GROUP_LIVE)
            standing += [s.consume_timestamp for s in spans.values() if s.consume_timestamp > 0]
        assert standing, "shipping-service has consumed orders"
        ts = min(standing) - BACK_MS
        reader = sandbox.reader(admin)
        ws = Workspace(tmp_path / "ws")
        planner = Planner(ws, runner, reader=reader, cluster="sandbox")
        spec = ResetSpec(Scope("sandbox", (GROUP_LIVE,), topics=(TOPIC_ORDERS,)), ToTimestamp(ts))
        made = await planner.plan(spec)
        plan = load_plan(ws, made.uri, cluster="sandbox", now_ms=int(time.time() * 1000))
        check = await check_apply(reader, plan)
        (group,) = check.groups
        assert group.consumers_online >= 1
        assert group.path.kind is ResetPathKind.SERVER_SIDE
        assert check.refusals(accept_drift=False) == ()  # moving forward is not drift online
        targets = {(w.row.broker, w.row.queue_id): w.target for w in check.writes}
        assert all(w.before is not None and w.target < w.before for w in check.writes)
        seen_from = log.stat().st_size

        journal = await Applier(write_access(reader, tmp_path / "ws", "sandbox")).apply(check)

    assert journal.status is ApplyStatus.FINISHED
    assert {q.state for q in journal.queues} == {QueueState.VERIFIED}, [
        (q.broker, q.queue_id, q.before, q.target, q.stored, q.state) for q in journal.queues
    ]
    for q in journal.queues:
        assert q.before is not None
        assert q.stored is not None
        assert q.target <= q.stored < q.before  # moved back, then on from the target

    # The consumer itself delivers each queue again from its target.
    assert await redelivered_from(log, seen_from, targets, TOPIC_ORDERS) == targets


# ---- a skip whose write is lost -------------------------------------------------------------

SKIP_ON = "broker-a"
#: Messages sent while the consumer is held: the skip's target is the last but one of them.
ARRIVING = 30
#: How long the apply reads back a queue no read proves written (the default is 45 s).
SKIP_VERIFY_S = 10.0


class DropsWrites:
    """The session's admin client, passing everything on except the offset writes to one
    queue: those never leave this process, and are answered as a broker answers success (a
    write lost on its way, acknowledged all the same). `on_drop` runs as one is dropped."""

    def __init__(
        self, admin: AdminClient, group: str, topic: str, queue_id: int, on_drop: Callable[[], None]
    ) -> None:
        self._admin = admin
        self.lost = (group, topic, queue_id)
        self.on_drop = on_drop
        self.dropped = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._admin, name)

    def _drops(self, group: str, topic: str, queue_id: int) -> bool:
        if (group, topic, queue_id) != self.lost:
            return False
        self.dropped += 1
        self.on_drop()
        return True

    async def reset_offset(
        self, addr: str, group: str, topic: str, *, queue_id: int = -1, **kwargs: Any
    ) -> dict[MessageQueue, int]:
        if self._drops(group, topic, queue_id):
            return {}
        return await self._admin.reset_offset(addr, group, topic, queue_id=queue_id, **kwargs)

    async def update_consumer_offset(
        self, addr: str, group: str, topic: str, queue_id: int, offset: int
    ) -> str | None:
        if self._drops(group, topic, queue_id):
            return None
        return await self._admin.update_consumer_offset(addr, group, topic, queue_id, offset)


async def test_a_skip_whose_write_is_lost_is_past_the_target_never_verified(
    sandbox: Sandbox,
    runner: SparkRunner,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    tag = uuid.uuid4().hex[:8]
    topic, group = f"it-lost-skip-{tag}", f"it-lost-skip-{tag}"
    addr = sandbox.broker_addrs[SKIP_ON]
    ws = tmp_path / "ws"
    async with AdminClient([sandbox.namesrv_addr], timeout=10) as admin:
        await admin.create_topic(addr, topic, read_queues=1, write_queues=1)
        await admin.create_group(addr, group)
        await wait_for_routes(admin, [topic], {SKIP_ON})
        await send_patiently(admin, addr, topic, 0, b"{}", tags="skip", keys="first")
        # A quick consumer that takes every message a pull brings at once.
        live = GroupPlan(
            group, topic, Setup.LIVE_CONSUMER, "a quick consumer", pull_batch=32,
            pull_threshold=1000,
        )  # fmt: skip
        consumer = await sandbox.start_consumer(live)
        pid = consumer.pid
        assert pid is not None
        held = False
        try:
            await wait_online(admin, {SKIP_ON: addr}, [group], timeout=90)
            await until_committed(admin, addr, group, topic, 1)
            # The consumer is held (its process stopped; the broker still lists it) while
            # messages arrive, so the group stands behind them when planned and checked.
            held_from = consumer.log.stat().st_size
            os.kill(pid, signal.SIGSTOP)
            held = True
            for n in range(ARRIVING):
                await send_patiently(admin, addr, topic, 0, b"{}", tags="skip", keys=str(n))
            stored = await admin.query_consumer_offset(addr, group, topic, 0)
            assert stored == 1, (
                f"the held consumer's offset moved to {stored}; its state: {process_state(pid)}; "
                f"it printed since: {queue_events(consumer.log, held_from, topic, SKIP_ON, 0)}"
            )
            reader = sandbox.reader(admin)
            planner = Planner(Workspace(ws), runner, reader=reader, cluster="sandbox")
            spec = ResetSpec(Scope("sandbox", (group,), topics=(topic,)), ShiftBy(ARRIVING - 1))
            made = await planner.plan(spec)
            ((row),) = load_plan(Workspace(ws), made.uri, cluster="sandbox", now_ms=now_ms()).rows
            target = ARRIVING  # all but the last message that arrived are skipped
            assert (row.current, row.target, row.max_offset) == (1, target, ARRIVING + 1)
            seen_from = consumer.log.stat().st_size

            def let_it_consume() -> None:
                # The write is lost; the consumer, let go, consumes on past the target.
                nonlocal held
                if held:
                    os.kill(pid, signal.SIGCONT)
                    held = False

            dropping = DropsWrites(admin, group, topic, 0, let_it_consume)
            access = write_access(sandbox.reader(dropping), ws, "sandbox")

            def applier(a: WriteAccess) -> Applier:
                return Applier(a, verify_timeout_s=SKIP_VERIFY_S)

            async def typed(check: WriteCheck) -> Confirmation:
                (g,) = check.groups
                assert (g.consumers_online, g.path.kind) == (1, ResetPathKind.SERVER_SIDE)
                return Confirmation((group,))

            session = ApplySession(access, ApplyPlan(made.header.plan_id), applier=applier)
            result = await session.run(typed)

            assert dropping.dropped == 1
            assert result.journal is not None, result.refused
            assert result.exit_code == 1
            (q,) = result.journal.queues
            assert (q.before, q.target, q.state) == (1, target, QueueState.PAST_TARGET)
            assert q.stored is not None
            assert q.stored > target
            # The consumer was handed the messages the skip was to pass over: no reset reached
            # it.
            events = queue_events(consumer.log, seen_from, topic, SKIP_ON, 0)
            assert set(range(1, target)) <= {offset for _, offset in events}
            (line,) = AuditLog(ws).read()
            assert line["result"] == str(QueueState.PAST_TARGET)

            # `resume` leaves it as it is: not verified, and not written again (that would
            # move the group back); it says so.
            config = tmp_path / "config.yaml"
            entry = sandbox.config_entry("sandbox")
            config.write_text(yaml.safe_dump({"clusters": [entry], "workspace": str(ws)}))
            monkeypatch.setenv("RMQ_CONSOLE_CONFIG", str(config))
            resume = ["resume", result.journal.apply_id, "--cluster", "sandbox", "--json"]
            assert await asyncio.to_thread(main, resume) == 1
            out, err = capfd.readouterr()
            resumed = json.loads(out)
            assert [x["state"] for x in resumed["queues"]] == [str(QueueState.PAST_TARGET)]
            assert "1 past the target, the reset not seen" in err
            assert "every queue is verified" not in out + err
            assert await admin.query_consumer_offset(addr, group, topic, 0) == q.stored
            assert len(list(AuditLog(ws).read())) == 1
        finally:
            if held:
                os.kill(pid, signal.SIGCONT)
            await consumer.stop()


async def until_committed(
    admin: AdminClient, addr: str, group: str, topic: str, offset: int
) -> None:
    deadline = time.monotonic() + 90
    while await admin.query_consumer_offset(addr, group, topic, 0) != offset:
        assert time.monotonic() < deadline, f"{group} did not commit {offset} within 90 s"
        await asyncio.sleep(0.5)


def process_state(pid: int) -> str:
    """The kernel's one-letter state of `pid` (T: stopped), or why it cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError as exc:
        return f"unreadable ({exc})"
    return stat.rsplit(")", 1)[1].split()[0]


def now_ms() -> int:
    return int(time.time() * 1000)
