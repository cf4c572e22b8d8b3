"""A lite group's lag as its brokers count it (RocketMQ 5.5's LiteTopic, RIP-83).

A lite group is bound to one parent topic of message type LITE (its subscription group's
attribute `lite.bind.topic`). Its consumers (LitePushConsumer, through a proxy) subscribe lite
topics under the parent, one per session, conversation or device. Each lite topic is a queue of
its own in the broker's LMQ store, `%LMQ%$<parent>$<lite topic>` queue 0, on the broker the lite
topic's name hashes to; the group's committed offset there is kept under
`%LMQ%$<parent>$<lite topic>@<group>`, never on the parent topic's queues. It moves as the
consumer acks, in order (a lite topic is consumed first in, first out): what was handed out and
not acked is inside max - committed, not past it as under POP.

The brokers count a lite group themselves (GET_LITE_GROUP_INFO, what `mqadmin getLiteGroupInfo`
prints): each its total over the lite topics it holds an offset of, and the lite topics most
behind, by count and, where they collect it, by time (console/rocketmq/lite_group_body.py).
`LiteLag` is those answers put together as mqadmin puts them: totals summed, lists merged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from console.rocketmq.models import LiteGroupInfo, LiteLagInfo

#: The start of every lite topic's LMQ name (LiteUtil.LITE_TOPIC_PREFIX).
LITE_QUEUE_PREFIX = "%LMQ%$"


def lite_queue(parent_topic: str, lite_topic: str) -> str:
    """The LMQ name a lite topic's messages and offsets live under (LiteUtil.toLmqName)."""
    return f"{LITE_QUEUE_PREFIX}{parent_topic}${lite_topic}"


def is_lite_queue(topic: str) -> bool:
    return topic.startswith(LITE_QUEUE_PREFIX)


@dataclass(frozen=True, slots=True)
class LiteTopicLag:
    """One lite topic of a lite group, behind by `lag` messages on `broker`."""

    lite_topic: str
    broker: str
    lag: int
    #: Store time of its oldest unconsumed message (epoch ms); None: the broker did not say.
    oldest_unconsumed_ms: int | None


@dataclass(frozen=True, slots=True)
class LiteLag:
    """What the brokers that answered count of a lite group.

    `by_count`: the lite topics most behind by messages, as the brokers list them (each its
    `top`), merged. `by_time`: the same lite topics and those a broker lists by time, those
    whose store time is known, oldest unconsumed message first. A broker whose count is not
    here (it did not answer, or its count cannot be believed) is a gap of the group's read, and
    `total` is then a lower bound."""

    parent_topic: str
    #: The brokers whose count is in `total`, each with its own count.
    counted: tuple[tuple[str, int], ...] = ()
    by_count: tuple[LiteTopicLag, ...] = ()
    by_time: tuple[LiteTopicLag, ...] = ()

    @property
    def total(self) -> int:
        return sum(n for _, n in self.counted)

    @property
    def oldest_unconsumed_ms(self) -> int | None:
        """The oldest unconsumed message among the lite topics listed (None: none said)."""
        return self.by_time[0].oldest_unconsumed_ms if self.by_time else None


def lite_lag(parent_topic: str, answers: Mapping[str, LiteGroupInfo], shown: int) -> LiteLag:
    """The answers of the brokers (by name) put together as mqadmin getLiteGroupInfo does: the
    totals summed (a negative one, "not held here", counts nothing), the lists merged and cut
    to `shown`."""
    by_count = _listed((b, i) for b, a in answers.items() for i in a.by_count)
    by_time: dict[tuple[str, str], LiteTopicLag] = {}
    for lag in (*by_count, *_listed((b, i) for b, a in answers.items() for i in a.by_time)):
        if lag.oldest_unconsumed_ms is not None:
            by_time.setdefault((lag.broker, lag.lite_topic), lag)
    return LiteLag(
        parent_topic=parent_topic,
        counted=tuple(sorted((b, max(a.total_lag, 0)) for b, a in answers.items())),
        by_count=tuple(sorted(by_count, key=lambda x: (-x.lag, x.lite_topic, x.broker)))[:shown],
        by_time=tuple(
            sorted(
                by_time.values(),
                key=lambda x: (x.oldest_unconsumed_ms or 0, -x.lag, x.lite_topic, x.broker),
            )
        )[:shown],
    )


def _listed(items: Iterable[tuple[str, LiteLagInfo]]) -> list[LiteTopicLag]:
    return [
        LiteTopicLag(
            i.lite_topic,
            broker,
            max(i.lag_count, 0),
            i.earliest_unconsumed_ms if i.earliest_unconsumed_ms > 0 else None,
        )
        for broker, i in items
    ]
