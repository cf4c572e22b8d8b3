"""Messages a test or a benchmark has sent, and the wait until the broker's queues show them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

from console.rocketmq.admin import AdminClient


async def indexed(
    admin: AdminClient, addr: str, topic: str, want: Mapping[int, int], *, within: float = 30.0
) -> None:
    """Wait until each queue in `want` has at least that max offset on the broker at `addr`.

    A broker answers a send once the commit log holds the message and indexes it in the
    queue a moment later; under load the last of a burst of sends can stay unseen for seconds,
    and a snapshot taken then reads those queues' max offsets short."""
    deadline = time.monotonic() + within
    while True:
        stats = await admin.topic_stats(addr, topic)
        seen = {mq.queue_id: s.max_offset for mq, s in stats.items()}
        short = {q: seen.get(q, 0) for q, n in want.items() if seen.get(q, 0) < n}
        if not short:
            return
        assert time.monotonic() < deadline, (
            f"{topic} on {addr}: {len(short)} queue(s) never showed the messages sent, "
            f"e.g. queue {min(short)} at {short[min(short)]} of {want[min(short)]}"
        )
        await asyncio.sleep(0.05)
