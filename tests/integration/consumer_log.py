"""What a sandbox consumer's log says it was handed ("DELIVERED topic broker queue offset")."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

DELIVERED = re.compile(r"^DELIVERED (\S+) (\S+) (\d+) (\d+)$", re.MULTILINE)


async def redelivered_from(
    log: Path, seen_from: int, targets: dict[tuple[str, int], int], topic: str
) -> dict[tuple[str, int], int]:
    """Per queue of `targets`, the lowest offset the consumer's log shows delivered after
    byte `seen_from`, once every target is among them (or two minutes have passed)."""
    deadline = time.monotonic() + 120
    while True:
        with log.open() as f:
            f.seek(seen_from)
            again = DELIVERED.findall(f.read())
        delivered: dict[tuple[str, int], set[int]] = {}
        for delivered_topic, broker, queue_id, offset in again:
            if delivered_topic == topic:
                delivered.setdefault((broker, int(queue_id)), set()).add(int(offset))
        replayed = {k for k, target in targets.items() if target in delivered.get(k, ())}
        if replayed == set(targets) or time.monotonic() > deadline:
            break
        await asyncio.sleep(1)
    # Each target offset came again (it lies behind where the group stood), and nothing older.
    return {k: min(delivered[k]) for k in targets if k in delivered}


EVENT = re.compile(r"^(DELIVERED|FAILED) (\S+) (\S+) (\d+) (\d+)$", re.MULTILINE)


def queue_events(
    log: Path, seen_from: int, topic: str, broker: str, queue_id: int
) -> list[tuple[str, int]]:
    """("DELIVERED" or "FAILED", offset) for one queue, in the order the consumer printed them
    after byte `seen_from`."""
    with log.open() as f:
        f.seek(seen_from)
        text = f.read()
    return [
        (kind, int(offset))
        for kind, t, b, q, offset in EVENT.findall(text)
        if (t, b, int(q)) == (topic, broker, queue_id)
    ]
