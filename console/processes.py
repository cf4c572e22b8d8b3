"""Whether a process is alive, by PID: the console's Spark Connect server and the sandbox's
servers are both watched by it."""

from __future__ import annotations

import os
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """True while the PID exists and is not a zombie waiting to be reaped."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    # Field 3, after the parenthesised command name, is the state; Z is a zombie.
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"
