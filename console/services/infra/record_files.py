"""The record file of a process the console started and leaves running (the Connect server of
`spark up`, its warm job host): JSON written whole (a temporary file renamed over it), readable
by its owner only (the server's holds its token), and read as no record when it is missing, torn
or of another shape."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

R = TypeVar("R")


def read_record(path: Path, parse: Callable[[str], R]) -> R | None:
    try:
        return parse(path.read_text())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        # None there, or a torn or foreign file (a directory, another JSON shape): as good as
        # no record.
        return None


def write_record(path: Path, text: str) -> None:
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    tmp.replace(path)
