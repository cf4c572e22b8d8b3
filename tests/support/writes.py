"""Write access for tests that drive the writer below the session (a fake admin, or one stage of
the apply against the sandbox): what `open_write_access` yields, made from a reader at hand."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from console.config import ClusterConfig, Config
from console.domain.journal import Journal
from console.errors import Refused
from console.services.apply.events import Tell
from console.services.apply.replicas import ReplicasNow, replicas_now
from console.services.apply.session import (
    ApplyProgress,
    Confirm,
    Intent,
    SessionResult,
    run_session,
)
from console.services.apply.write_access import WriteAccess
from console.services.apply.write_check import Confirmation, WriteCheck
from console.services.read.reader import ClusterReader


def write_access(reader: Any, root: Path, cluster: str = "prod", **options: Any) -> WriteAccess:
    """`reader`'s writes go to `cluster`; journals and the audit log to `root`. A fake reader's
    brokers have no replicas to wait for; a real one's are asked."""
    config = ClusterConfig(cluster, ("127.0.0.1:9876",), **options)
    replicas = replicas_now if isinstance(reader, ClusterReader) else no_replicas
    whole = Config(clusters=(config,), workspace=str(root))
    return WriteAccess(config, whole, reader, root, replicas)


async def no_replicas(reader: Any, brokers: Iterable[str], wait_s: float | None) -> ReplicasNow:
    """Each broker's master is the one the check read, with no replica."""
    return ReplicasNow({}, ())


class ScriptedIntent:
    """An intent whose check and write a test scripts; everything between (the confirmation,
    its checking, the re-check, the refusals) is the real session's."""

    def __init__(self, kind: str, ref: str, writes: ScriptedWrites) -> None:
        self.kind, self.ref, self.writes = kind, ref, writes

    async def prepare(self, access: WriteAccess, tell: Tell) -> Journal | None:
        refusal = self.writes.refuse.get((self.kind, self.ref))
        if refusal is not None:
            raise Refused([refusal])
        return None

    async def read(self, access: WriteAccess) -> WriteCheck:
        self.writes.reads.append((self.kind, self.ref))
        return self.writes.check(self.kind, self.ref)

    async def write(
        self,
        applier: Any,
        check: WriteCheck,
        *,
        accept_drift: bool,
        on_progress: Callable[[ApplyProgress], object],
        stop: asyncio.Event,
    ) -> Journal:
        self.writes.calls.append((self.kind, self.ref, accept_drift))
        return await self.writes.write(self.kind, check, on_progress, stop)


#: A scripted write: (kind, the check, progress, stop) -> the journal.
Writer = Callable[
    [str, WriteCheck, Callable[[ApplyProgress], object], asyncio.Event], Awaitable[Journal]
]


class ScriptedWrites:
    """The console's write sessions on no cluster: the real `run_session` (read-only refused,
    the confirmation checked, the cluster read again), with checks and writes a test scripts.
    `opened` lists the clusters a session opened its write access on."""

    def __init__(self, root: Path, check: Callable[[str, str], WriteCheck], write: Writer) -> None:
        self.root = root
        self.check = check
        self.write = write
        self.refuse: dict[tuple[str, str], str] = {}
        self.opened: list[str] = []
        self.reads: list[tuple[str, str]] = []
        self.calls: list[tuple[str, str, bool]] = []

    def apply_plan(self, plan_uri: str) -> Intent:
        return ScriptedIntent("apply", plan_uri, self)

    def undo(self, apply_id: str) -> Intent:
        return ScriptedIntent("undo", apply_id, self)

    def resume(self, apply_id: str) -> Intent:
        return ScriptedIntent("resume", apply_id, self)

    async def run(
        self,
        cluster: ClusterConfig,
        intent: Intent,
        confirm: Confirm,
        tell: Tell,
        stop: asyncio.Event,
    ) -> SessionResult:
        return await run_session(
            cluster, Config(), intent, confirm, tell, stop, open_access=self._open
        )

    @asynccontextmanager
    async def _open(self, cluster: ClusterConfig, config: Config) -> AsyncIterator[WriteAccess]:
        self.opened.append(cluster.name)
        yield write_access(None, self.root, cluster.name)


async def confirm_every_name(check: WriteCheck) -> Confirmation:
    """An operator who types every group name of the check (and accepts no drift)."""
    return Confirmation(check.names)
