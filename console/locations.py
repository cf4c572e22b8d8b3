"""Where the console keeps files of its own outside the workspace: the cache directory."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

CACHE_ENV = "RMQ_CONSOLE_CACHE"


def cache_root(env: Mapping[str, str] | None = None) -> Path:
    """`$RMQ_CONSOLE_CACHE`, else `$XDG_CACHE_HOME/rmq-console`, else `~/.cache/rmq-console`."""
    env = os.environ if env is None else env
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV]).expanduser()
    xdg = env.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "rmq-console"


def crash_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where the command line writes the traceback of a bug (console/cli/crash.py)."""
    return cache_root(env) / "crashes"


def log_dir(workspace_root: Path | None) -> Path:
    """Logs of the console's helper processes: the workspace's logs/ when the workspace is on this
    machine, else the cache's."""
    return (workspace_root if workspace_root is not None else cache_root()) / "logs"
