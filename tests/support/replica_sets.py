"""What the failover tests (controller mode, DLedger) share: the command line run in the test's
process, and a replicated cluster's seeded queues against what a read found."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import pytest

from console.cli import main
from console.domain.offsets import GroupOffsets
from console.rocketmq.models import MessageQueue

#: A queue by topic, broker and queue id.
QueueKey = tuple[str, str, int]


class Seeded(Protocol):
    """A replicated sandbox's seed (ControllerSeed, DLedgerSeed)."""

    @property
    def max_offsets(self) -> Mapping[MessageQueue, int]: ...

    @property
    def committed(self) -> Mapping[MessageQueue, int]: ...


def run(capfd: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`rmq-console ARGV` in this process: its exit code, stdout and stderr."""
    code = main(list(argv))
    out, err = capfd.readouterr()
    return code, out, err


def seeded(seed: Seeded | None) -> dict[QueueKey, tuple[int, int | None]]:
    """The seed's queues: max offset and committed offset of each."""
    assert seed is not None
    return {
        (mq.topic, mq.broker_name, mq.queue_id): (seed.max_offsets[mq], c)
        for mq, c in seed.committed.items()
    }


def read_queues(offsets: GroupOffsets) -> dict[QueueKey, tuple[int, int | None]]:
    """What a read found of each queue: max offset and committed offset."""
    return {(q.topic, q.broker, q.queue_id): (q.max_offset, q.committed) for q in offsets.queues}
