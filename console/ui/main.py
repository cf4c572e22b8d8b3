"""`rmq-console` without a subcommand: open the console.

`--namesrv`/`--cluster` open that cluster's overview; with neither, the Clusters screen lists the
clusters of the config file. Only Textual and the wire client load here: start-up is measured.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from console.config import ClusterConfig, Config, load_config


def run_console(args: argparse.Namespace) -> int:
    from console.cli.target import resolve_target

    cluster: ClusterConfig | None = None
    if getattr(args, "namesrv", None) or getattr(args, "cluster", None):
        target = resolve_target(args)
        config, cluster = target.config, target.cluster
    else:
        config = load_config(Path(args.config) if getattr(args, "config", None) else None)
        if getattr(args, "timeout", None):
            config = replace(config, timeout=float(args.timeout))
    return open_console(config, cluster)


def open_console(config: Config, cluster: ClusterConfig | None = None) -> int:
    """Run the console in this terminal until the operator quits; the exit code."""
    import sys

    from console.ui.app import make_app
    from console.ui.remote import remote_sources

    # The network thread decodes broker answers while the UI thread waits for the GIL; a shorter
    # switch interval (default 5 ms) hands it back to key handling sooner.
    sys.setswitchinterval(0.001)

    app = make_app(config, remote_sources(config), cluster=cluster)
    result = app.run()
    return result if isinstance(result, int) else app.return_code or 0
