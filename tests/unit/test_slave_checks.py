"""A slave's answer that could not be checked is not believed (console.services.read.slave_checks):
its group list or a topic's route that could not be read leaves the read partial, named; a topic
the name server does not know has nothing to compare with. The asks are fakes; the same on a
real slave is tests/integration/test_master_slave.py."""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from console.cli.render import report_missing
from console.domain.gaps import Part, Why, exit_code
from console.rocketmq.codes import ResponseCode
from console.rocketmq.errors import BrokerError, RequestTimeout
from console.rocketmq.models import (
    HaStatus,
    MessageQueue,
    QueueConsumeStats,
    QueueData,
    SubscriptionGroup,
    TopicRoute,
)
from console.services.read.slave_checks import check_slave_reads

SLAVE, NAMESRV = "10.0.0.1:10921", "10.0.0.9:9876"
SLAVES = {"broker-a": SLAVE}
GROUP, TOPIC = "billing", "orders"
#: The slave holds both queues of `orders` on broker-a, each caught up with its messages.
ROWS = [
    (SLAVE, QueueConsumeStats(MessageQueue(TOPIC, "broker-a", q), 20, 20, 20, 0)) for q in (0, 1)
]
GROUP_LIST = 201  # GET_ALL_SUBSCRIPTIONGROUP_CONFIG
ROUTE = 105  # GET_ROUTEINFO_BY_TOPIC


async def groups_known(addr: str) -> dict[str, SubscriptionGroup]:
    return {GROUP: SubscriptionGroup(GROUP, True, True, False, 1, 16)}


async def route_whole(topic: str) -> TopicRoute:
    return TopicRoute(topic, [], [QueueData("broker-a", 2, 2, 6)])


async def ha(addr: str) -> HaStatus:
    return HaStatus(False, max_offset=1000, master_flush_offset=1000, last_read_ms=0)


async def classic(addr: str) -> dict[str, str]:
    return {"brokerRole": "SLAVE"}


async def controller_mode(addr: str) -> dict[str, str]:
    return {"brokerRole": "SLAVE", "enableControllerMode": "true"}


async def dledger_mode(addr: str) -> dict[str, str]:
    # What a 4.9.x follower answers GET_BROKER_CONFIG (no controller keys there).
    return {"brokerRole": "SLAVE", "enableDLegerCommitLog": "true", "dLegerSelfId": "n1"}


def failing(error: BaseException) -> Callable[[str], Awaitable[Any]]:
    async def ask(key: str) -> Any:
        raise error

    return ask


async def check(
    groups_of: Callable[[str], Awaitable[dict[str, SubscriptionGroup]]] = groups_known,
    route_of: Callable[[str], Awaitable[TopicRoute]] = route_whole,
    config_of: Callable[[str], Awaitable[dict[str, str]]] = classic,
) -> Any:
    admin: Any = None  # every ask is given: the admin client is never asked
    return await check_slave_reads(
        admin, GROUP, SLAVES, ROWS, [TOPIC], groups_of, route_of, ha, config_of
    )


async def test_a_checked_slave_that_holds_everything_is_believed() -> None:
    assert (await check()).gaps == ()


async def test_a_slave_whose_group_list_cannot_be_read_is_not_believed() -> None:
    result = await check(groups_of=failing(RequestTimeout(SLAVE, GROUP_LIST, 3.0)))
    (gap,) = result.gaps
    assert (gap.part, gap.name, gap.why) == (Part.BROKER, "broker-a", Why.UNCHECKED)
    assert gap.detail.startswith(f"read from slave {SLAVE}, whose group list could not be read")
    assert f"{SLAVE} did not answer request {GROUP_LIST} within 3s" in gap.detail
    assert exit_code(result.gaps, anything_read=True) == 1  # partial, never complete
    # Unknown is not "not copied": the slave's queues are still read and compared.
    assert result.group_unknown == ()

    # `lag` and `groups` say it on one line, the broker once however many groups lacked it.
    err = io.StringIO()
    report_missing([gap, gap], what="groups", err=err)
    (line,) = err.getvalue().splitlines()
    assert line.startswith(
        f"rmq-console: broker broker-a could not be checked: read from slave {SLAVE}, whose "
        "group list could not be read"
    )
    assert line.endswith("(in 2 groups)")


async def test_a_topic_whose_route_cannot_be_read_leaves_its_slave_queues_unchecked() -> None:
    result = await check(route_of=failing(RequestTimeout(NAMESRV, ROUTE, 3.0)))
    (gap,) = result.gaps
    assert (gap.part, gap.name, gap.why) == (Part.QUEUES, f"{TOPIC}/broker-a", Why.UNCHECKED)
    assert f"the route of {TOPIC} could not be read ({NAMESRV} did not answer" in gap.detail
    assert exit_code(result.gaps, anything_read=True) == 1
    err = io.StringIO()
    report_missing(result.gaps, err=err)
    assert err.getvalue().startswith(
        f"rmq-console: queues {TOPIC}/broker-a could not be checked: read from slave {SLAVE}; "
    )


async def test_a_topic_the_name_server_does_not_know_has_nothing_to_compare() -> None:
    # Its offsets on the slave are all there is (a deleted topic's, which the master keeps too).
    gone = BrokerError(NAMESRV, ROUTE, ResponseCode.TOPIC_NOT_EXIST, "No topic route info")
    assert (await check(route_of=failing(gone))).gaps == ()
    # Any other refusal of the name server is not that: unchecked.
    refused = BrokerError(NAMESRV, ROUTE, ResponseCode.SYSTEM_ERROR, "busy")
    (gap,) = (await check(route_of=failing(refused))).gaps
    assert gap.why is Why.UNCHECKED


async def test_a_replica_in_controller_mode_read_while_no_master_is_elected_is_marked() -> None:
    # A switch under way: what it holds is what it copied last, not the master's.
    result = await check(config_of=controller_mode)
    (gap,) = result.gaps
    assert (gap.part, gap.name, gap.why) == (Part.BROKER, "broker-a", Why.NO_MASTER)
    assert gap.detail.startswith(f"read from replica {SLAVE} while broker-a has no master")
    assert "a replica copies them every 10 s" in gap.detail
    assert exit_code(result.gaps, anything_read=True) == 1


async def test_a_dledger_peer_read_while_no_master_is_elected_is_marked() -> None:
    # The peers' own election (4.9.x) is under way: the follower's offsets are its last copy.
    result = await check(config_of=dledger_mode)
    (gap,) = result.gaps
    assert (gap.part, gap.name, gap.why) == (Part.BROKER, "broker-a", Why.NO_MASTER)
    assert gap.detail.startswith(f"read from replica {SLAVE} while broker-a has no master")
    assert "DLedger mode: its peers elect one" in gap.detail
    assert "a follower copies them every 10 s" in gap.detail
    assert exit_code(result.gaps, anything_read=True) == 1


async def test_a_replica_that_cannot_say_its_mode_is_left_to_the_other_checks() -> None:
    unsaid = failing(RequestTimeout(SLAVE, 26, 3.0))
    assert (await check(config_of=unsaid)).gaps == ()


@pytest.mark.parametrize("ask", ["groups_of", "route_of", "config_of"])
async def test_a_bug_in_an_ask_is_raised_not_taken_for_an_answer(ask: str) -> None:
    asks = {ask: failing(KeyError("brokerName"))}
    with pytest.raises(KeyError):
        await check(**asks)
