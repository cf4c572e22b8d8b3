"""Journals and the audit log on disk, in the workspace:

    journal/<apply-id>.json     one per apply or undo, rewritten whole as queues settle
    audit.log                   JSON lines, append-only, one per queue written

A journal is replaced atomically (a temporary file, fsync, rename, fsync of the directory), so a
console killed at any instant leaves either the previous version or the new one, never half of
either. Audit lines are appended with O_APPEND in one write and fsync'd before the apply goes on;
an append starts on a fresh line, so a line a crash cut short stays alone (and is reported where
it is, with every other line still read) instead of swallowing the next apply's first line.
Both need the workspace on this machine: an apply refuses to start on a remote workspace rather
than keep no evidence.
"""

from __future__ import annotations

import contextlib
import fcntl
import getpass
import hashlib
import json
import os
import re
import socket
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from console import json_text
from console.domain.journal import ApplyStatus, Journal, JournalError, JournalQueue
from console.domain.plan import stamp
from console.errors import BadFile, read_text

JOURNAL_DIR = "journal"
AUDIT_LOG = "audit.log"
#: The status of an apply left running by a console that is gone.
INTERRUPTED = "interrupted"
LOCK_DIR = ".locks"  # one lock per apply being written, held by the console writing it
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def operator() -> str:
    """Who runs this console, as the journal and the audit log name them: user@host."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no LOGNAME/USER: a bare container
        user = f"uid{os.getuid()}"
    return f"{user}@{socket.gethostname()}"


def new_apply_id(started_at_ms: int, group: str, kind: str, salt: str) -> str:
    """`<stamp>-<kind>-<group>-<6 hex>`: sorts by time, reads in a listing, unique by salt."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", group).strip("-")[:40] or "group"
    digest = hashlib.sha256(f"{started_at_ms}:{salt}".encode()).hexdigest()[:6]
    return f"{stamp(started_at_ms)}-{kind}-{name}-{digest}"


class JournalBusy(JournalError):
    """Another console is writing for this apply right now."""


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A journal file the store could not read, kept in listings with the reason."""

    apply_id: str
    path: Path
    error: str


class JournalStore:
    def __init__(self, root: Path) -> None:
        self.dir = root / JOURNAL_DIR
        self.locks = root / LOCK_DIR

    def path(self, apply_id: str) -> Path:
        if not _ID.fullmatch(apply_id):
            raise JournalError(f"{apply_id!r} is not an apply id")
        return self.dir / f"{apply_id}.json"

    def write(self, journal: Journal) -> Path:
        """Replace the journal's file with this version, durably."""
        path = self.path(journal.apply_id)
        self.dir.mkdir(parents=True, exist_ok=True)
        _write_durably(path, journal.dumps() + "\n")
        return path

    def load(self, apply_id: str) -> Journal:
        path = self.path(apply_id)
        try:
            text = read_text(path)
        except BadFile as exc:
            if not path.exists() and not path.is_symlink():
                raise JournalError(f"no apply {apply_id!r} in {self.dir}") from None
            raise JournalError(str(exc)) from None
        journal = Journal.loads(text, str(path))
        if journal.apply_id != apply_id:
            raise JournalError(f"{path}: holds apply {journal.apply_id!r}, not {apply_id!r}")
        return journal

    def all(self) -> list[Journal | Unreadable]:
        """Every journal, oldest first; unreadable ones are listed with why, never skipped."""
        if not self.dir.is_dir():
            return []
        out: list[Journal | Unreadable] = []
        for path in sorted(self.dir.glob("*.json")):
            apply_id = path.name.removesuffix(".json")
            try:
                out.append(self.load(apply_id))
            except (JournalError, OSError) as exc:
                out.append(Unreadable(apply_id, path, str(exc)))
        return out

    @contextlib.contextmanager
    def hold(self, apply_id: str) -> Iterator[None]:
        """Hold the apply's lock while writing for it: a second console resuming or undoing the
        same apply at once is refused (JournalBusy) instead of writing beside it. The lock goes
        with the process, so an apply killed with -9 leaves it free."""
        self.path(apply_id)  # refuses what is not an apply id
        self.locks.mkdir(parents=True, exist_ok=True)
        lock = self.locks / f"{apply_id}.lock"
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT, 0o640)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise JournalBusy(
                    f"apply {apply_id} is being written by another console on this machine"
                ) from None
            yield
        finally:
            os.close(fd)

    def running(self, apply_id: str) -> bool:
        """Whether a console on this machine holds the apply's lock now."""
        try:
            with self.hold(apply_id):
                return False
        except JournalBusy:
            return True

    def status(self, j: Journal) -> str:
        """The journal's status as listings say it: "running" told apart, a console writing it
        now, or one that died mid-apply ("interrupted": resume or undo it)."""
        if j.status is ApplyStatus.RUNNING and not self.running(j.apply_id):
            return INTERRUPTED
        return str(j.status)

    def unfinished(self) -> list[Journal]:
        """Applies a console left part-way (killed, stopped, or a broker lost): resume or undo."""
        return [j for j in self.all() if isinstance(j, Journal) and self._left(j)]

    def _left(self, j: Journal) -> bool:
        # Not copied to a replica yet is not part-way: every queue is written, `verify` says
        # whether the replicas hold it now.
        done = (ApplyStatus.FINISHED, ApplyStatus.NOT_COPIED)
        return j.status not in done and not self.running(j.apply_id)


def unfinished_lines(
    root: Path, cluster: str | None = None, *, read_only: Collection[str] = ()
) -> list[str]:
    """One line per apply (on `cluster`, or any) a console left part-way, naming what to do,
    and one per journal that could not be read (whether it finished is unknown): what the CLI
    prints before an apply and the console shows when it starts. An apply on a cluster named in
    `read_only` is said to be on a read-only cluster: neither a resume nor an undo may write
    to it, so neither is offered."""
    store = JournalStore(root)
    lines = []
    for j in store.all():
        if isinstance(j, Unreadable):
            lines.append(
                f"journal {j.path} cannot be read, so whether it finished is unknown: "
                f"{without_path(j.error, j.path)}"
            )
        elif store._left(j) and (cluster is None or j.cluster == cluster):
            left = (
                f"apply {j.apply_id} on {j.cluster} stopped part-way ({len(j.unfinished)} "
                "queue(s) not verified)"
            )
            if j.cluster in read_only:
                lines.append(
                    f"{left}; cluster {j.cluster!r} is read-only (read_only: true in the "
                    "config): no resume or undo from this console"
                )
            else:
                lines.append(
                    f"{left}: rmq-console resume {j.apply_id}, or rmq-console undo {j.apply_id}"
                )
    return lines


def without_path(error: str, path: Path) -> str:
    """An error that names the file first, without it (where the file is named already)."""
    return re.sub(rf"^{re.escape(str(path))}(:\d+)?: ", "", error)


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One queue written: the line audit.log gets."""

    at_ms: int
    who: str
    cluster: str
    apply_id: str
    plan_hash: str
    path: str
    queue: JournalQueue

    def to_json(self) -> dict[str, Any]:
        q = self.queue
        return {
            "at": datetime.fromtimestamp(self.at_ms / 1000, UTC).isoformat(timespec="milliseconds"),
            "who": self.who,
            "cluster": self.cluster,
            "group": q.group,
            "topic": q.topic,
            "broker": q.broker,
            "queue": q.queue_id,
            "before": q.before,
            "after": q.target,
            "path": self.path,
            "plan_hash": self.plan_hash,
            "apply_id": self.apply_id,
            "result": q.state.value,
            "stored": q.stored,
            "detail": q.detail,
        }


@dataclass(frozen=True, slots=True)
class AuditRead:
    """The audit log as read: its whole lines, and one problem per line that is not one (cut
    short by a crash mid-append, or edited), naming the file and the line."""

    lines: tuple[dict[str, Any], ...]
    problems: tuple[str, ...] = ()


class AuditLog:
    def __init__(self, root: Path) -> None:
        self.path = root / AUDIT_LOG

    def append(self, entries: Iterable[AuditEntry]) -> int:
        """Append one line per entry, in one write, and fsync; returns the lines written. A file
        whose last line was cut short (a crash mid-append) gets a newline first, in the same
        write, so the new lines stay whole and the cut one stays alone."""
        lines = [json.dumps(e.to_json(), separators=(",", ":")) + "\n" for e in entries]
        if not lines:
            return 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o640)
        try:
            # Two consoles appending at once: the check of the last byte and the write are one.
            fcntl.flock(fd, fcntl.LOCK_EX)
            data = "".join(lines).encode()
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        return len(lines)

    def scan(self) -> AuditRead:
        """Every whole line, and a problem for each line that is not one; a log that cannot be
        read at all (a directory, no permission) is one problem."""
        try:
            with self.path.open("rb") as f:
                data = f.read()
        except FileNotFoundError:
            return AuditRead(())
        except OSError as exc:
            reason = (
                "a directory, not a file"
                if isinstance(exc, IsADirectoryError)
                else (f"cannot be read: {exc.strerror or exc}")
            )
            return AuditRead((), (f"{self.path}: {reason}",))
        lines: list[dict[str, Any]] = []
        problems: list[str] = []
        for number, raw in enumerate(data.split(b"\n"), 1):
            if not raw.strip():
                continue  # the end of the file, or the newline put after a cut line
            try:
                value = json_text.loads(raw.decode("utf-8"))
            except json_text.TooDeep as exc:
                problems.append(f"{self.path}:{number}: not an audit line ({exc.msg}): skipped")
                continue
            except (UnicodeDecodeError, ValueError):
                problems.append(
                    f"{self.path}:{number}: not a whole audit line (cut short by a crash "
                    "mid-append, or edited): skipped"
                )
                continue
            if not isinstance(value, dict):
                problems.append(f"{self.path}:{number}: not an audit line: skipped")
                continue
            lines.append(value)
        return AuditRead(tuple(lines), tuple(problems))

    def read(self) -> Iterator[dict[str, Any]]:
        """The lines as written; a line that is not one is a JournalError naming the file and
        the line (`scan` lists it and goes on)."""
        read = self.scan()
        if read.problems:
            raise JournalError(read.problems[0])
        yield from read.lines


def _write_durably(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
    try:
        data = memoryview(text.encode())
        while data:
            data = data[os.write(fd, data) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
