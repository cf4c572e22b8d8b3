"""What a screen asks of the console app, as a protocol.

Screens reach the app for its clock, its config, its services, the cluster sessions it holds
and its error dialog. The app imports every screen it opens; were the screens to import the app
for its type, the two would import each other. They depend on this instead, and the app is one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.screen import Screen

    from console.config import ClusterConfig, Config
    from console.services.read.cluster_session import ClusterSession
    from console.ui.services import ConsoleServices

#: The console's clock: seconds since the epoch (a fixed one in tests).
Clock = Callable[[], float]


class ConsoleHost(Protocol):
    config: Config
    services: ConsoleServices
    #: The refresh is paused (`p`): screens say so in their status line.
    paused: bool
    clock: Clock

    def clock_ms(self) -> int: ...

    def open_cluster(self, cluster: ClusterConfig) -> None: ...

    def session_for(self, cluster: ClusterConfig) -> ClusterSession:
        """The open session of `cluster`, else a new one."""
        ...

    def is_root(self, screen: Screen[Any]) -> bool:
        """Whether `screen` is the first console screen of the stack (esc there quits)."""
        ...

    def report_error(self, title: str, error: BaseException) -> None: ...

    def clear_error(self) -> None: ...
