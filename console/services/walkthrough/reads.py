"""Walkthrough reads for the console: evidence and answers, on a worker's event loop.

The walkthrough screen asks a `WalkthroughReaders` for a reader; the real one opens a read-only
admin client from the cluster's config (the one factory, console/services/infra/access.py) and
gathers evidence and checks answers exactly as `rmq-console walkthrough` does. Tests hand the
screen a source of their own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Protocol

from console.config import Config
from console.domain.walkthrough import Evidence
from console.services.read.session import ClusterSession
from console.services.walkthrough.runner import Answer, WalkthroughRun

if TYPE_CHECKING:
    from console.services.read.reader import ClusterReader
    from console.services.walkthrough.evidence.context import EvidenceContext


class WalkthroughReads(Protocol):
    async def evidence(self, run: WalkthroughRun, names: Sequence[str]) -> list[Evidence]: ...

    async def answer(self, run: WalkthroughRun, step_id: str, text: str) -> Answer | None:
        """The checked answer (None: an optional step left blank); AnswerError when it cannot
        be used, and NotFoundError for a group that does not exist."""
        ...


class WalkthroughReaders(Protocol):
    def open(
        self, session: ClusterSession, config: Config
    ) -> AbstractAsyncContextManager[WalkthroughReads]: ...


class ClusterWalkthroughs:
    @asynccontextmanager
    async def open(
        self, session: ClusterSession, config: Config
    ) -> AsyncIterator[WalkthroughReads]:
        from console.services.infra.access import open_admin
        from console.services.read.reader import ClusterReader

        cluster = session.cluster
        async with open_admin(cluster, config) as admin:
            yield _Reads(ClusterReader(admin, cluster.rocketmq_cluster), config)


class _Reads:
    def __init__(self, reader: ClusterReader, config: Config) -> None:
        self.reader = reader
        self.config = config

    def _context(self, run: WalkthroughRun) -> EvidenceContext:
        from console.services.walkthrough.evidence.context import EvidenceContext

        return EvidenceContext.of(self.reader, run, self.config)

    async def evidence(self, run: WalkthroughRun, names: Sequence[str]) -> list[Evidence]:
        from console.services.walkthrough.evidence.registry import gather

        return await gather(self._context(run), names)

    async def answer(self, run: WalkthroughRun, step_id: str, text: str) -> Answer | None:
        from console.services.walkthrough.evidence.answers import check_answer

        return await check_answer(self._context(run), step_id, text)
