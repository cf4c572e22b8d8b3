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
    config, cluster = console_target(args)
    return open_console(config, cluster)


def console_target(args: argparse.Namespace) -> tuple[Config, ClusterConfig | None]:
    """The config, and the cluster to open (None: the Clusters screen, when none is named)."""
    from console.cli.target import resolve_target

    if getattr(args, "namesrv", None) or getattr(args, "cluster", None):
        target = resolve_target(args)
        return target.config, target.cluster
    config = load_config(Path(args.config) if getattr(args, "config", None) else None)
    if getattr(args, "timeout", None):
        config = replace(config, timeout=float(args.timeout))
    return config, None


def open_console(config: Config, cluster: ClusterConfig | None = None) -> int:
    """Run the console in this terminal until the operator quits; the exit code."""
    from console.ui.remote import remote_sources

    # Before Textual is imported: the cluster's network process boots meanwhile.
    connect = remote_sources(config, warm=cluster)

    from console.ui.app import make_app

    app = make_app(config, connect, cluster=cluster)
    result = app.run()
    return result if isinstance(result, int) else app.return_code or 0
