"""Producers that keep sending to a topic after the seed (scenario.TRICKLES), so lag moves."""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass

from console.rocketmq.admin import AdminClient
from console.rocketmq.errors import RocketMQError
from console.sandbox import scenario as sc

_TICK_S = 0.1
_BROKER_BACKOFF_S = 2.0


@dataclass(slots=True)
class TrickleStats:
    sent: int = 0
    failed: int = 0


def rate_at(plan: sc.TricklePlan, elapsed: float) -> float:
    """Messages per second `elapsed` seconds after the start: a slow sine around the mean."""
    phase = 2 * math.pi * elapsed / plan.period_s
    return max(0.0, plan.mean_rate + plan.amplitude * math.sin(phase))


async def trickle(
    admin: AdminClient,
    brokers: Mapping[str, str],
    stats: TrickleStats,
    rate: sc.TricklePlan,
) -> None:
    """Send to every queue of the plan's topic in turn until cancelled.

    A broker that fails a send is skipped for a moment (tests stop brokers on purpose); the
    producer never gives up, so lag keeps moving once the broker is back.
    """
    plan = sc.topic_plan(rate.topic)
    targets = itertools.cycle(
        [(b, q) for b in sorted(brokers) for q in range(plan.queues_per_broker)]
    )
    resting_until: dict[str, float] = {}
    started = time.monotonic()
    budget = 0.0
    seq = 0
    while True:
        await asyncio.sleep(_TICK_S)
        budget += rate_at(rate, time.monotonic() - started) * _TICK_S
        while budget >= 1.0:
            budget -= 1.0
            broker, queue_id = next(targets)
            if time.monotonic() < resting_until.get(broker, 0.0):
                continue
            seq += 1
            try:
                await admin.send_message(
                    brokers[broker],
                    plan.name,
                    queue_id,
                    f'{{"live":true,"seq":{seq}}}'.encode(),
                    tags=plan.tags,
                    keys=f"live-{plan.name}-{seq}",
                )
            except RocketMQError:
                stats.failed += 1
                resting_until[broker] = time.monotonic() + _BROKER_BACKOFF_S
            else:
                stats.sent += 1
