"""GET_LITE_GROUP_INFO bodies (RocketMQ 5.5, GetLiteGroupInfoResponseBody), read into
LiteGroupInfo.

Asked for a whole group (no lite topic, as `mqadmin getLiteGroupInfo -p P -g G` asks each
broker), a 5.5.0 broker answers, in standard JSON:

    {"earliestUnconsumedTimestamp":-1,"group":"chat-agents",
     "lagCountTopK":[{"earliestUnconsumedTimestamp":1795880115170,"lagCount":7,
                      "liteTopic":"session-3"}],
     "lagTimestampTopK":[],"parentTopic":"chats","totalLagCount":7}

`totalLagCount` and `lagCountTopK` come from a walk of the broker's in-memory offset table
(LiteConsumerLagCalculator.getLagCountTopK): each `%LMQ%$<parent>$<lite topic>@<group>` entry
counts max - committed; a lite topic the group never committed on counts nothing.
`lagTimestampTopK` holds only lite topics whose last pop filled its batch, and only on a broker
with `liteLagLatencyCollectEnable=true`; `earliestUnconsumedTimestamp` is the oldest of them
(-1 when there is none).
"""

from __future__ import annotations

from typing import Any

from .bodies import body_of, dict_of, list_of
from .frame import Command
from .models import LiteGroupInfo, LiteLagInfo


def read(resp: Command) -> LiteGroupInfo:
    body = body_of(resp)
    return LiteGroupInfo(
        group=str(body.get("group", "")),
        parent_topic=str(body.get("parentTopic", "")),
        total_lag=int(body.get("totalLagCount", 0)),
        earliest_unconsumed_ms=int(body.get("earliestUnconsumedTimestamp", -1)),
        by_count=_lags(body.get("lagCountTopK")),
        by_time=_lags(body.get("lagTimestampTopK")),
    )


def _lags(value: Any) -> tuple[LiteLagInfo, ...]:
    return tuple(
        LiteLagInfo(
            lite_topic=str(item.get("liteTopic", "")),
            lag_count=int(item.get("lagCount", 0)),
            earliest_unconsumed_ms=int(item.get("earliestUnconsumedTimestamp", -1)),
        )
        for item in map(dict_of, list_of(value))
    )
