"""The processes running on this machine, as /proc lists them: what tests that watch the
console's children, Spark's JVMs and their command lines read."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class Process(NamedTuple):
    pid: int
    ppid: int
    pgid: int
    state: str  # "Z": a zombie, ended and not reaped yet
    argv: bytes  # NUL-separated; empty for a zombie or a kernel thread

    @property
    def command_line(self) -> str:
        return self.argv.replace(b"\0", b" ").decode(errors="replace")


def processes() -> list[Process]:
    """Every process listed now; one that ends while it is read is left out."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # The command name (field 2) is in parentheses and may hold spaces.
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
            argv = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        out.append(Process(int(entry.name), int(fields[1]), int(fields[2]), fields[0], argv))
    return out


def descendants(root_pid: int, listed: list[Process]) -> list[Process]:
    """The processes of `listed` below `root_pid`, and itself."""
    below: dict[int, list[Process]] = {}
    for p in listed:
        below.setdefault(p.ppid, []).append(p)
    found = [p for p in listed if p.pid == root_pid]
    for p in found:  # grows as it goes: every level in turn
        found.extend(below.get(p.pid, ()))
    return found
