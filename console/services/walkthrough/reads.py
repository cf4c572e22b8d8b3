"""Walkthrough reads for the console: evidence and answers, on a worker's event loop.

The walkthrough screen asks a `WalkthroughReaders` for a reader; the real one opens a read-only
admin client from the cluster's config (the one factory, console/services/infra/access.py) and
gathers evidence and checks answers exactly as `rmq-console walkthrough` does. Tests hand the
screen a source of their own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

from console.config import Config
from console.domain.walkthrough import Evidence
from console.services.read.cluster_session import ClusterSession
from console.services.read.open_reader import open_reader
from console.services.walkthrough.guided_run import Answer, WalkthroughRun


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
        # deferred: the evidence providers load when a walkthrough opens, not with the
        # console's first frame (this module is imported at start-up)
        from console.services.walkthrough.evidence.registry import ClusterEvidence

        cluster = session.cluster
        async with open_reader(cluster, config) as reader:
            yield ClusterEvidence(reader, config)
