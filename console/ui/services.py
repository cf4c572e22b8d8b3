"""What the console's screens get their services from: made once, in `make_app` (the composition
root), and handed to every screen through the app. Tests hand `make_app` fakes here instead of
patching modules."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from console.config import ClusterConfig, Config
from console.services.apply.write_sessions import ClusterWrites, WriteSessions
from console.services.plan.preview_planners import ClusterPlanners, Planners
from console.services.walkthrough.reads import ClusterWalkthroughs, WalkthroughReaders

if TYPE_CHECKING:
    from console.services.apply.verify_journal import Verification


class ApplyVerifier(Protocol):
    """Reads an apply's queues again now (`verify APPLY_ID`)."""

    async def __call__(
        self, cluster: ClusterConfig, config: Config, apply_id: str
    ) -> Verification: ...


async def verify_on_cluster(cluster: ClusterConfig, config: Config, apply_id: str) -> Verification:
    """The real one: the apply's journal read again on the cluster."""
    # deferred: the reader and the apply's services load when History first verifies
    from console.services.apply.verify_journal import verify_apply

    return await verify_apply(cluster, config, apply_id)


@dataclass(frozen=True, slots=True)
class ConsoleServices:
    #: Reset previews: a planner on the console's warm Spark session.
    planners: Planners
    #: Applies, undos and resumes: each an apply session on the cluster.
    writes: WriteSessions
    #: A walkthrough's evidence and answers, read from the cluster.
    walkthroughs: WalkthroughReaders
    #: Whether what an apply wrote still holds on the masters and replicas now (History).
    verify: ApplyVerifier = field(default=verify_on_cluster)


def cluster_services(config: Config) -> ConsoleServices:
    """The real ones: planners, write sessions and walkthrough reads on the configured
    clusters."""
    return ConsoleServices(ClusterPlanners(), ClusterWrites(config), ClusterWalkthroughs())
