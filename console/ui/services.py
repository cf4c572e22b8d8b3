"""What the console's screens get their services from: made once, in `make_app` (the composition
root), and handed to every screen through the app. Tests hand `make_app` fakes here instead of
patching modules."""

from __future__ import annotations

from dataclasses import dataclass

from console.config import Config
from console.services.apply.write_sessions import ClusterWrites, WriteSessions
from console.services.plan.preview_planners import ClusterPlanners, Planners
from console.services.walkthrough.reads import ClusterWalkthroughs, WalkthroughReaders


@dataclass(frozen=True, slots=True)
class ConsoleServices:
    #: Reset previews: a planner on the console's warm Spark session.
    planners: Planners
    #: Applies, undos and resumes: each an apply session on the cluster.
    writes: WriteSessions
    #: A walkthrough's evidence and answers, read from the cluster.
    walkthroughs: WalkthroughReaders


def cluster_services(config: Config) -> ConsoleServices:
    """The real ones: planners, write sessions and walkthrough reads on the configured
    clusters."""
    return ConsoleServices(ClusterPlanners(), ClusterWrites(config), ClusterWalkthroughs())
