"""Planners for the console's reset preview: one per preview, on the console's warm Spark session.

The preview screen asks a `Planners` for a planner; the real one (`ClusterPlanners`) opens a
read-only admin client on the worker's event loop and shares the console's warm session. Tests
hand the screen a source of their own.

Importing this module loads no planning code (pyarrow, the planner): the console imports it at
start-up, and those load when the first preview opens.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from console.config import ClusterConfig, Config
from console.domain.plan import Impact
from console.domain.spec import ResetSpec
from console.services.infra.workspace import Workspace
from console.services.read.cluster_session import ClusterSession
from console.services.read.open_reader import open_reader
from console.services.read.reader import ClusterReader

if TYPE_CHECKING:
    import pyarrow as pa

    from console.services.infra.spark_jobs import JobProgress
    from console.services.infra.spark_runner import JobHandle, SparkRunner
    from console.services.infra.workspace import SnapshotRef
    from console.services.plan.planner import Planner, PlanResult


class PreviewPlanner(Protocol):
    async def plan(
        self,
        spec: ResetSpec,
        *,
        on_progress: Callable[[JobProgress], object] | None = None,
        on_submit: Callable[[JobHandle], None] | None = None,
        snapshot: SnapshotRef | None = None,
        out_uri: str | None = None,
        imported_from: str | None = None,
    ) -> PlanResult: ...

    def rows(self, plan_uri: str) -> pa.Table: ...

    async def impact(self, result: PlanResult) -> list[Impact]: ...


class Planners(Protocol):
    """Where the screen gets its planner: `warm` when the screen opens (start Spark while the
    operator types), `open` for each preview."""

    def warm(self, config: Config) -> None: ...

    def open(
        self, session: ClusterSession, config: Config
    ) -> AbstractAsyncContextManager[PreviewPlanner]: ...


class ClusterPlanners:
    """The real planners: a wire client of their own (on the worker's loop), the workspace
    from the config, and the console's shared warm Spark session."""

    def warm(self, config: Config) -> None:
        console_runner(config)

    @asynccontextmanager
    async def open(self, session: ClusterSession, config: Config) -> AsyncIterator[Any]:
        cluster = session.cluster
        async with open_reader(cluster, config) as reader:
            yield console_planner(cluster, config, reader)


def console_planner(cluster: ClusterConfig, config: Config, reader: ClusterReader) -> Planner:
    """A planner that reads through `reader` and plans on the console's shared warm Spark
    session, into the workspace of `config`."""
    # deferred: pyarrow and the planner
    from console.services.plan.planner import Planner

    return Planner(
        Workspace(config.workspace_path),
        console_runner(config),
        reader=reader,
        cluster=cluster.name,
        client_offset_dirs=config.client_offset_dirs,
    )


def console_runner(config: Config) -> SparkRunner:
    """The console's shared warm session, on the engine the CLI's `plan` would choose (a
    server started by `spark up`, with its token, before a local `spark_master`);
    EngineUnavailable when the Connect server the config names does not answer."""
    # deferred: the Spark host and its client start when a preview opens, not with the
    # console (which imports this module at start-up)
    from console.services.infra.spark_engine import choose_engine
    from console.services.infra.spark_runner import shared_runner

    engine = choose_engine(None, config.spark_master)
    return shared_runner(engine.master, _log_path(config), env=engine.env or None)


def _log_path(config: Config) -> Path:
    return Workspace(config.workspace_path).log_path()
