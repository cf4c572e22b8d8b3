"""Every evidence provider by the name walkthrough files use, `gather`, which runs the ones a
step names, and `ClusterEvidence`, the evidence and answers of one cluster as the console's
walkthrough screen reads them (console/services/walkthrough/reads.py)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from console.config import Config
from console.domain.walkthrough import Evidence
from console.rocketmq.errors import RocketMQError
from console.services.read.reader import ClusterReader
from console.services.walkthrough.evidence import (
    clients,
    group,
    history,
    message_at_committed,
    moved_on,
    rates,
    reset_path,
    retry_backlog,
    skip_span,
    source_group,
    stuck,
    time_per_queue,
)
from console.services.walkthrough.evidence.answers import check_answer
from console.services.walkthrough.evidence.context import EvidenceContext, Provider
from console.services.walkthrough.evidence.titles import TITLES
from console.services.walkthrough.guided_run import Answer, WalkthroughRun

#: Every provider by the name walkthrough files use (the names `titles.TITLES` lists).
EVIDENCE: dict[str, Provider] = {
    "group": group.provide,
    "clients": clients.provide,
    "reset-path": reset_path.provide,
    "rates": rates.provide,
    "source-group": source_group.provide,
    "retry-backlog": retry_backlog.provide,
    "history": history.provide,
    "moved-on": moved_on.provide,
    "time-per-queue": time_per_queue.provide,
    "stuck": stuck.provide,
    "message-at-committed": message_at_committed.provide,
    "skip-span": skip_span.provide,
}


async def gather(ctx: EvidenceContext, names: Iterable[str]) -> list[Evidence]:
    """The evidence named, in order. A provider whose read fails entirely gives an Evidence that
    says what failed, so the walkthrough goes on and the report shows the hole."""
    out: list[Evidence] = []
    for name in names:
        try:
            out.append(await EVIDENCE[name](ctx))
        except RocketMQError as exc:
            out.append(
                Evidence(name, TITLES[name], (f"could not be read: {exc}",), {}, (str(exc),))
            )
    return out


class ClusterEvidence:
    """Evidence and checked answers of one walkthrough run, read through `reader`."""

    def __init__(self, reader: ClusterReader, config: Config) -> None:
        self.reader = reader
        self.config = config

    def _context(self, run: WalkthroughRun) -> EvidenceContext:
        return EvidenceContext.of(self.reader, run, self.config)

    async def evidence(self, run: WalkthroughRun, names: Sequence[str]) -> list[Evidence]:
        return await gather(self._context(run), names)

    async def answer(self, run: WalkthroughRun, step_id: str, text: str) -> Answer | None:
        return await check_answer(self._context(run), step_id, text)
