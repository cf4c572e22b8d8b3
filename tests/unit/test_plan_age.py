"""A plan's age is checked when it is loaded and again after the operator's confirmation: a
prompt left waiting (a terminal left at "type the group name", a dialog left open) can outlive
the plan, and the cluster has moved on by then. Nothing is written; the refusal says how old."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from console.domain.plan import PlanHeader, PlanRow, SnapshotInfo
from console.domain.spec import Earliest, ResetSpec, Scope
from console.rocketmq.models import ConsumerConnection, MessageQueue
from console.services.apply.intents import ApplyPlan
from console.services.apply.session import ApplySession
from console.services.apply.write_check import Confirmation, WriteCheck
from console.services.plan.load import LoadedPlan
from tests.support.readers import no_proxy_listed
from tests.support.writes import write_access

ADDR, GROUP, TOPIC = "10.0.0.1:10911", "billing", "orders"
MADE_S = 1_795_400_000.0
MAX_AGE_S = 15 * 60


class OfflineBroker:
    """A 5.3.3 broker with server-side reset, nobody consuming the group; it records writes."""

    server_versions = {ADDR: 479}

    def __init__(self) -> None:
        self.writes = 0

    async def consumer_connections(self, addr: str, group: str) -> ConsumerConnection:
        return ConsumerConnection([], None, None, None)

    async def message_request_modes(self, addr: str) -> dict[tuple[str, str], str]:
        return {}

    async def broker_config(self, addr: str) -> dict[str, str]:
        return {"useServerSideResetOffset": "true"}

    async def topic_stats(self, addr: str, topic: str) -> dict[MessageQueue, SimpleNamespace]:
        return {MessageQueue(TOPIC, "broker-a", 0): SimpleNamespace(min_offset=0, max_offset=200)}

    async def query_consumer_offset(self, addr: str, group: str, topic: str, q: int) -> int:
        return 100

    async def reset_offset(self, *args: object, **kw: object) -> dict[MessageQueue, int]:
        self.writes += 1
        return {}


def plan() -> LoadedPlan:
    row = PlanRow("prod", GROUP, TOPIC, "broker-a", 0, 0, 200, 100, 0, 0, -100, None, ())
    header = PlanHeader(
        plan_id="p1",
        spec=ResetSpec(Scope("prod", (GROUP,)), Earliest()),
        snapshot=SnapshotInfo("prod", "s1", int(MADE_S * 1000)),
        created_at_ms=int(MADE_S * 1000),
        content_hash="sha256:0",
        rows=1,
        totals=(),
    )
    return LoadedPlan("file:///p1", header, (row,))


async def test_a_plan_that_grew_too_old_while_the_prompt_waited_writes_nothing(
    tmp_path: Path,
) -> None:
    broker = OfflineBroker()

    async def brokers() -> dict[str, str]:
        return {"broker-a": ADDR}

    reader = SimpleNamespace(
        admin=broker, brokers=brokers, proxies=(), find_proxies=no_proxy_listed
    )
    now = [MADE_S + 60]  # a minute old when checked
    intent = ApplyPlan(plan(), max_age_s=MAX_AGE_S, clock=lambda: now[0])
    seen: list[WriteCheck] = []

    async def after_a_long_wait(check: WriteCheck) -> Confirmation:
        seen.append(check)
        now[0] = MADE_S + MAX_AGE_S + 120  # the operator typed the name 16 minutes later
        return Confirmation((GROUP,))

    session = ApplySession(write_access(reader, tmp_path), intent)
    result = await session.run(after_a_long_wait)
    assert len(seen) == 1  # the check was shown: the plan was young enough then
    assert result.refused == (
        "the plan is 17 min old (limit 15 min): the cluster has moved on since; plan again",
    )
    assert (result.exit_code, broker.writes) == (2, 0)
    assert not (tmp_path / "journal").exists()
