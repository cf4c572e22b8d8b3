"""Open the console in this terminal: the one entry the CLI calls once it knows the cluster.

Only Textual and the network process's proxy load here: start-up is measured.
"""

from __future__ import annotations

from console.config import ClusterConfig, Config
from console.remote.proxy import remote_sources


def open_console(config: Config, cluster: ClusterConfig | None = None) -> int:
    """Run the console until the operator quits; the exit code. `cluster` opens that cluster's
    overview; None opens the Clusters screen."""

    # Before Textual is imported: the cluster's network process boots meanwhile.
    connect = remote_sources(config, warm=cluster)

    # deferred: Textual, imported once the cluster's network process is booting
    from console.ui.app import make_app

    app = make_app(config, connect, cluster=cluster)
    result = app.run()
    return result if isinstance(result, int) else app.return_code or 0
