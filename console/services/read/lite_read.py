"""A lite group's lag (RocketMQ 5.5, console.domain.lite) as its brokers count it, and each
broker whose count cannot be had or believed, named.

Each broker is asked what `mqadmin getLiteGroupInfo -p PARENT -g GROUP` asks it
(GET_LITE_GROUP_INFO, 200078, header `group` and `topK`), and its configuration
(GET_BROKER_CONFIG, once per read batch). Seen on 5.5.0 brokers of each offset store,
against mqadmin (tests/integration/test_lite_groups.py):

- A broker that keeps consumer offsets in RocksDB (`configManagerVersion=v2`) keeps a lite
  topic's offset there only (ConsumerOffsetManagerV2 holds no LMQ offset in memory), while its
  count walks the offsets in memory: it answers total 0 and no lite topic however far behind
  the group is (mqadmin then prints "Total Lag Count: 0"). Its part is unknown, never 0; a lite
  topic can still be read alone there (`mqadmin getLiteGroupInfo ... -l LITE_TOPIC`).
- A broker that does not hold the group (SUBSCRIPTION_GROUP_NOT_EXIST) holds no offset of it:
  it counts nothing.
- Any other failure (no answer, an error, a broker older than 5.5 that does not know the
  request) leaves that broker's part unknown, with why.
- A broker that keeps offsets in its JSON file (with `enableLmq=true`, which lite topics need)
  also lists a lite group's lite topics among its consume stats, as queues
  `%LMQ%$<parent>$<lite topic>`/0 (its topic config answers for any LMQ name): the read drops
  them, their lag is the brokers' count. A v2 broker lists none.
- A lite message is stored once and indexed twice: in a queue of the parent topic and in its
  lite topic's LMQ. The lite group holds no offset on the parent topic's queues.

The brokers' other lite requests answer per lite topic or per broker, not per group
(GET_LITE_TOPIC_INFO 200076: a lite topic's min, max and subscribers; GET_PARENT_TOPIC_INFO
200075: the groups and lite topic count of a parent; GET_BROKER_LITE_INFO 200074: a broker's LMQ
and subscription counts; GET_LITE_CLIENT_INFO 200077: one client's lite topics); the read does
not need them.
"""

from __future__ import annotations

from collections.abc import Mapping

from console.domain.gaps import Gap, Part, Why, gap
from console.domain.lite import LiteLag, lite_lag
from console.rocketmq.admin import AdminClient
from console.rocketmq.codes import ResponseCode
from console.rocketmq.errors import BrokerError, RocketMQError
from console.rocketmq.models import LiteGroupInfo
from console.services.infra.fanout import ask_each
from console.services.read.batch import ReadBatch

#: Lite topics each broker is asked to list, by count and by time (mqadmin's own default, -k).
LITE_TOP = 20
#: What a broker that does not hold the group answers.
NOT_HELD = ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
#: The broker setting whose "v2" keeps consumer offsets in RocksDB (BrokerConfig).
CONFIG_MANAGER_VERSION = "configManagerVersion"


async def read_lite(
    admin: AdminClient,
    group: str,
    parent_topic: str,
    brokers: Mapping[str, str],
    batch: ReadBatch,
) -> tuple[LiteLag, list[Gap]]:
    """What the brokers at `brokers` (by name) count of the lite group `group`, and a gap for
    each whose part is unknown.

    A lite message goes to a queue of the parent topic, and its lite topic lives on that
    queue's broker: a broker that keeps offsets in RocksDB but holds no queue of the parent
    topic (its route says so) holds none of the group's lite topics, and its 0 is believed.
    When the route cannot be read, every such broker's part is unknown."""

    async def info(addr: str) -> LiteGroupInfo:
        return await batch.ask(addr, lambda: admin.lite_group_info(addr, group, LITE_TOP))

    try:
        route = await batch.topic_route(parent_topic)
        parent_held: set[str] | None = {q.broker_name for q in route.queues}
    except RocketMQError:
        parent_held = None
    infos = await ask_each(brokers, info)
    configs = await ask_each(brokers, batch.broker_config)
    counted: dict[str, LiteGroupInfo] = {}
    gaps: list[Gap] = []
    name = f"{group} on "
    for broker, answer in infos.items():
        if isinstance(answer, BrokerError) and answer.code == NOT_HELD:
            continue  # a broker without the group holds no offset of it
        if isinstance(answer, RocketMQError):
            gaps.append(gap(Part.LITE, name + broker, answer, broker=broker))
            continue
        if isinstance(answer, BaseException):
            raise answer
        config = configs[broker]
        if isinstance(config, RocketMQError):
            gaps.append(_unchecked(group, broker, config))
        elif isinstance(config, BaseException):
            raise config
        elif config.get(CONFIG_MANAGER_VERSION, "").strip().lower() == "v2" and (
            parent_held is None or broker in parent_held
        ):
            gaps.append(_uncounted(group, parent_topic, broker))
        else:
            counted[broker] = answer
    return lite_lag(parent_topic, counted, LITE_TOP), gaps


def _uncounted(group: str, parent_topic: str, broker: str) -> Gap:
    return Gap(
        Part.LITE,
        f"{group} on {broker}",
        Why.NOT_REPORTED,
        f"{broker} keeps consumer offsets in RocksDB (configManagerVersion=v2), where its count "
        f"of a lite group does not look: it says 0 whatever {group}'s lite topics hold "
        "(GET_LITE_GROUP_INFO, as mqadmin getLiteGroupInfo prints it); one lite topic at a "
        f"time can be read there: mqadmin getLiteGroupInfo -p {parent_topic} -g {group} "
        "-l LITE_TOPIC",
    )


def _unchecked(group: str, broker: str, error: RocketMQError) -> Gap:
    said = " ".join(str(error).split())
    return Gap(
        Part.LITE,
        f"{group} on {broker}",
        Why.UNCHECKED,
        f"{broker}'s count of {group}'s lite topics could not be checked: its configuration "
        f"did not answer ({said}), and a broker keeping offsets in RocksDB "
        "(configManagerVersion=v2) says 0 whatever they hold",
    )
