"""What every evidence provider stands on: the context it reads through (the cluster, the
workspace, the walkthrough run so far) and the ways of saying what it found."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field

from console.config import Config
from console.domain.gaps import Gap
from console.domain.offsets import GroupOffsets, QueueOffsets
from console.domain.triage import missing
from console.domain.walkthrough import Evidence, StepKind
from console.rocketmq.errors import RocketMQError
from console.services.infra.workspace import Workspace
from console.services.read.reader import ClusterReader
from console.services.read.routes import read_addrs
from console.services.walkthrough.guided_run import Answer, WalkthroughRun, queue_name

#: How long `rates` and `stuck` watch the group by default (two or more reads that far apart).
WATCH_S = 10.0
#: How long `moved-on` waits for online consumers to consume past the targets, in watches.
MOVED_ON_FACTOR = 6
MOVED_ON_S = WATCH_S * MOVED_ON_FACTOR
#: Queue lines shown per evidence before "... and N more".
SHOWN_QUEUES = 12


@dataclass
class EvidenceContext:
    """What a provider may read: the cluster, the workspace, the run so far."""

    reader: ClusterReader
    run: WalkthroughRun
    config: Config
    now_ms: Callable[[], int] = lambda: int(time.time() * 1000)
    watch_s: float = WATCH_S
    moved_on_s: float = MOVED_ON_S
    _offsets: GroupOffsets | None = field(default=None, repr=False)

    @classmethod
    def of(cls, reader: ClusterReader, run: WalkthroughRun, config: Config) -> EvidenceContext:
        """With the config's watch window (`walkthrough_watch`)."""
        watch = config.walkthrough_watch
        return cls(reader, run, config, watch_s=watch, moved_on_s=watch * MOVED_ON_FACTOR)

    @property
    def group(self) -> str:
        return self.run.group

    @property
    def workspace(self) -> Workspace:
        return Workspace(self.config.workspace_path)

    async def offsets(self, *, fresh: bool = False) -> GroupOffsets:
        """The group's offsets, read once per gathering unless asked fresh."""
        if self._offsets is None or fresh:
            self._offsets = await self.reader.group_offsets(self.group)
        return self._offsets

    async def addrs(self) -> dict[str, str]:
        return read_addrs(await self.reader.routes())


Provider = Callable[[EvidenceContext], Awaitable[Evidence]]


def lag_text(lag: int | None, partial: bool) -> str:
    if lag is None:
        return "unknown"
    return f"≥{lag:,}" if partial else f"{lag:,}"


def queue_lines(lines: Sequence[str]) -> list[str]:
    if len(lines) <= SHOWN_QUEUES:
        return list(lines)
    return [*lines[:SHOWN_QUEUES], f"… and {len(lines) - SHOWN_QUEUES} more queue(s)"]


def gaps_of(offsets: GroupOffsets) -> tuple[str, ...]:
    return tuple(missing(offsets))


def answered(ctx: EvidenceContext, kind: StepKind) -> Answer | None:
    for step in ctx.run.walkthrough.steps:
        if step.kind is kind and step.id in ctx.run.answers:
            return ctx.run.answers[step.id]
    return None


async def search_all(
    ctx: EvidenceContext, queues: Sequence[QueueOffsets], at_ms: int
) -> tuple[dict[tuple[str, str, int], int], list[str]]:
    """Per queue, the offset of the first message stored at or after `at_ms` (what the plan
    job asks too), and the queues whose broker did not say."""
    addrs = await ctx.addrs()
    found: dict[tuple[str, str, int], int] = {}
    lacks: list[str] = []

    async def one(q: QueueOffsets) -> None:
        addr = addrs.get(q.broker)
        if addr is None:
            lacks.append(f"{queue_name(*q.key)}: {q.broker} has no address")
            return
        try:
            found[q.key] = await ctx.reader.admin.search_offset(addr, q.topic, q.queue_id, at_ms)
        except RocketMQError as exc:
            lacks.append(f"{queue_name(*q.key)}: {exc}")

    await asyncio.gather(*(one(q) for q in queues))
    return found, sorted(lacks)


def missing_of(gaps: Iterable[Gap]) -> list[str]:
    return sorted({g.line() for g in gaps})
