"""The lag history: every refresh's lag and committed offsets of each group, kept in the workspace.

    lag/<cluster>/<group>.jsonl     one JSON line per refresh of the group (console/domain/lag.py)
    lag/<cluster>/.lock             taken shared by appends, exclusive by a compaction

Names are kept readable in the file name; a character outside letters, digits, `_`, `-` and `.`
is written as %XX (so a cluster named by its name servers, `10.0.0.1:9876`, is a directory too).

Appends: one `write` per line on a file opened with O_APPEND, so two consoles appending at once
never interleave inside a line. A console killed mid-write leaves at most a cut last line: the
next append starts on a new line, and readers skip and count it (`LagSeries.skipped`), never
crash on it. Appends are not fsync'd: the history is evidence of trends, not of writes (the
journal and the audit log are those), and a refresh must not wait on the disk.

Bounds: when a file grows past `max_bytes` it is compacted, atomically (a temporary file and a
rename, under the exclusive lock so no append is lost): points are thinned by age (`TIERS`:
every point of the last hour, one a minute to a day, one per 15 minutes to 7 days, nothing
older), then, while it is still too big, the oldest points lose their per-queue detail, and only
then are the oldest points dropped. A point kept in a bucket is the newest complete one when
there is one: thinning never turns a complete stretch into a partial one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from console import json_text
from console.domain.lag import LagPoint, LagSeries, PointError, at_or_before
from console.domain.offsets import GroupOffsets
from console.errors import read_failure

LAG_DIR = "lag"
SUFFIX = ".jsonl"
LOCK_FILE = ".lock"

SECOND_MS = 1000
MINUTE_MS = 60 * SECOND_MS
HOUR_MS = 60 * MINUTE_MS
DAY_MS = 24 * HOUR_MS

#: A file is compacted when it grows past this.
DEFAULT_MAX_BYTES = 1 << 20
#: ...down to this share of it, so that the next compaction is a while away.
COMPACT_TO = 0.75
#: Two refreshes of a group closer than this (a screen refreshed on a key, right after the
#: interval's own refresh) are one point.
MIN_SPACING_MS = SECOND_MS
#: Files kept parsed in memory (the group screen reads its own on every refresh).
CACHED_FILES = 16


@dataclass(frozen=True, slots=True)
class Tier:
    """Points up to `age_ms` old are kept one per `every_ms` (0: every one)."""

    age_ms: int
    every_ms: int


TIERS: tuple[Tier, ...] = (
    Tier(HOUR_MS, 0),
    Tier(DAY_MS, MINUTE_MS),
    Tier(7 * DAY_MS, 15 * MINUTE_MS),
)


def local_root(workspace: str) -> Path | None:
    """The workspace's directory when it is on this machine (what `Workspace.local_root` says,
    without loading pyarrow); None for a remote workspace, which keeps no lag history."""
    if "://" not in workspace:
        return Path(os.path.abspath(os.path.expanduser(workspace)))
    parsed = urlparse(workspace)
    return Path(parsed.path) if parsed.scheme == "file" else None


def file_name(name: str) -> str:
    """A cluster or group name as one path component: readable, reversible (`unquote`), never
    `.`, `..` or hidden."""
    out = "".join(c if c.isascii() and (c.isalnum() or c in "_-.") else _escape(c) for c in name)
    if not out:
        raise ValueError("an empty name cannot be a file name")
    return "%2E" + out[1:] if out.startswith(".") else out


def _escape(c: str) -> str:
    return "".join(f"%{b:02X}" for b in c.encode())


# ---- thinning ---------------------------------------------------------------------------------


def thin(points: Sequence[LagPoint], now_ms: int, tiers: Sequence[Tier] = TIERS) -> list[LagPoint]:
    """Points kept by age: in each tier one per bucket of `every_ms`, the newest complete one
    of the bucket (the newest partial one when none is complete); none older than the last
    tier. Oldest first."""
    ordered = sorted(points, key=lambda p: p.at_ms)
    kept: list[LagPoint] = []
    buckets: dict[tuple[int, int], LagPoint] = {}
    for p in ordered:
        age = now_ms - p.at_ms
        tier = next((i for i, t in enumerate(tiers) if age <= t.age_ms), None)
        if tier is None:
            continue  # older than the last tier
        every = tiers[tier].every_ms
        if every <= 0:
            kept.append(p)
            continue
        key = (tier, p.at_ms // every)
        held = buckets.get(key)
        if held is None or not p.partial or held.partial:
            buckets[key] = p  # later points come later: the newest of the kind wins
    kept += buckets.values()
    return sorted(kept, key=lambda p: p.at_ms)


def bound(points: Sequence[LagPoint], max_bytes: int) -> list[LagPoint]:
    """Points whose lines fit in `max_bytes`: the oldest lose their per-queue detail first, and
    only when that is not enough are the oldest dropped."""
    kept = list(points)
    sizes = [len(_line(p)) for p in kept]
    total = sum(sizes)
    i = 0
    while total > max_bytes and i < len(kept):
        if kept[i].detailed and kept[i].queues:
            bare = kept[i].without_detail()
            size = len(_line(bare))
            total += size - sizes[i]
            kept[i], sizes[i] = bare, size
        i += 1
    drop = 0
    while total > max_bytes and drop < len(kept):
        total -= sizes[drop]
        drop += 1
    return kept[drop:]


def _line(p: LagPoint) -> bytes:
    return (json.dumps(p.to_json(), separators=(",", ":")) + "\n").encode()


# ---- reading ----------------------------------------------------------------------------------


@dataclass
class _Parsed:
    """What is known of one file: its identity, how far it was read, what that held."""

    inode: tuple[int, int]
    offset: int
    points: list[LagPoint]
    skipped: int


def _parse(data: bytes) -> tuple[list[LagPoint], int]:
    points, skipped = [], 0
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            points.append(LagPoint.from_json(json_text.loads(raw)))
        except (ValueError, PointError, UnicodeDecodeError):
            skipped += 1
    return points, skipped


class LagHistory:
    """The lag history files of one workspace (its local root). Safe to share between threads
    and between consoles on the same machine."""

    def __init__(
        self,
        root: Path,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        tiers: Sequence[Tier] = TIERS,
        min_spacing_ms: int = MIN_SPACING_MS,
    ) -> None:
        self.root = root
        self.dir = root / LAG_DIR
        self.max_bytes = max_bytes
        self.tiers = tuple(tiers)
        self.min_spacing_ms = min_spacing_ms
        self._lock = threading.Lock()
        self._last: dict[Path, int] = {}  # newest point this process appended, per file
        self._aged: set[Path] = set()  # files whose oldest point was checked for age
        self._cache: OrderedDict[Path, _Parsed] = OrderedDict()

    def path(self, cluster: str, group: str) -> Path:
        return self.dir / file_name(cluster) / (file_name(group) + SUFFIX)

    def groups(self, cluster: str) -> list[str]:
        """Groups with a history on `cluster`, by name."""
        base = self.dir / file_name(cluster)
        if not base.is_dir():
            return []
        return sorted(unquote(p.name.removesuffix(SUFFIX)) for p in base.glob(f"*{SUFFIX}"))

    # ---- writing ----------------------------------------------------------------------------

    def record(self, cluster: str, samples: Iterable[GroupOffsets], at_ms: int) -> None:
        """Append one point per group read, timed `at_ms`; compact the files that outgrew
        their bound. Raises OSError when the workspace cannot be written."""
        lines: list[tuple[Path, bytes]] = []
        with self._lock:
            for offsets in samples:
                path = self.path(cluster, offsets.group)
                last = self._last.get(path)
                if last is not None and 0 <= at_ms - last < self.min_spacing_ms:
                    continue
                self._last[path] = at_ms
                lines.append((path, _line(LagPoint.of(offsets, at_ms))))
        if not lines:
            return
        base = self.dir / file_name(cluster)
        base.mkdir(parents=True, exist_ok=True)
        grown: list[Path] = []
        with self._locked(base, fcntl.LOCK_SH):
            for path, line in lines:
                size = _append(path, line)
                if size == len(line):  # a new file: its first point is this one
                    with self._lock:
                        self._aged.add(path)
                elif size > self.max_bytes or self._too_old(path, at_ms):
                    grown.append(path)
        for path in grown:
            self.compact(path, at_ms)

    def _too_old(self, path: Path, now_ms: int) -> bool:
        """Once per file and process: whether its first point is past the last tier (a file that
        never grows to its bound is thinned by age all the same)."""
        with self._lock:
            if path in self._aged:
                return False
            self._aged.add(path)
        try:
            with path.open("rb") as f:
                first = f.readline()
            oldest = LagPoint.from_json(json_text.loads(first)).at_ms
        except (OSError, ValueError, PointError):
            return False
        return now_ms - oldest > self.tiers[-1].age_ms

    def compact(self, path: Path, now_ms: int) -> None:
        """Thin and bound one file, replacing it atomically; appends wait meanwhile."""
        with self._locked(path.parent, fcntl.LOCK_EX):
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                return
            points, _ = _parse(data)
            kept = bound(thin(points, now_ms, self.tiers), int(self.max_bytes * COMPACT_TO))
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
            try:
                _write_all(fd, b"".join(_line(p) for p in kept))
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
        with self._lock:
            self._cache.pop(path, None)

    @contextlib.contextmanager
    def _locked(self, base: Path, how: int) -> Iterator[None]:
        fd = os.open(base / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o640)
        try:
            fcntl.flock(fd, how)
            yield
        finally:
            os.close(fd)

    # ---- reading ----------------------------------------------------------------------------

    def series(
        self,
        cluster: str,
        group: str,
        since_ms: int | None = None,
        until_ms: int | None = None,
    ) -> LagSeries:
        """The group's points from `since_ms` to `until_ms` (inclusive), oldest first, with the
        number of lines of its file that could not be read."""
        points, skipped = self._read(self.path(cluster, group))
        return LagSeries(cluster, group, tuple(points), skipped).between(since_ms, until_ms)

    def offsets_at(self, cluster: str, group: str, at_ms: int) -> LagPoint | None:
        """The newest point with per-queue detail at or before `at_ms` (each queue's committed
        offset then: `point.committed()`); None when there is none. A partial point says so
        (`partial`, `missing`): its queues not read are not in it."""
        return at_or_before(self.series(cluster, group, until_ms=at_ms).points, at_ms)

    def _read(self, path: Path) -> tuple[list[LagPoint], int]:
        """Every point of the file, oldest first, read on from where the last read stopped
        unless the file was replaced (compacted) since."""
        try:
            with path.open("rb") as f:
                st = os.fstat(f.fileno())
                inode = (st.st_dev, st.st_ino)
                with self._lock:
                    known = self._cache.get(path)
                if known is None or known.inode != inode or known.offset > st.st_size:
                    known = _Parsed(inode, 0, [], 0)
                f.seek(known.offset)
                data = f.read()
        except FileNotFoundError:
            return [], 0
        except OSError as exc:
            raise read_failure(path, exc) from None
        whole = data.rfind(b"\n") + 1
        fresh, bad = _parse(data[:whole])
        points = known.points
        if fresh:
            points = points + fresh
            times = [p.at_ms for p in points[len(known.points) - 1 if known.points else 0 :]]
            if times != sorted(times):
                points.sort(key=lambda p: p.at_ms)  # two consoles' appends interleave
        parsed = _Parsed(inode, known.offset + whole, points, known.skipped + bad)
        with self._lock:
            self._cache[path] = parsed
            self._cache.move_to_end(path)
            while len(self._cache) > CACHED_FILES:
                self._cache.popitem(last=False)
        # A cut last line (a console killed mid-write) is counted, not kept: it is read again
        # next time, when an append has ended it.
        cut = 1 if data[whole:].strip() else 0
        return list(points), parsed.skipped + cut


def _append(path: Path, line: bytes) -> int:
    """Append one line in one write; returns the file's size after it. A file that does not end
    in a newline (its writer was killed mid-line) gets one first, so this line stays whole."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o640)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line
        _write_all(fd, line)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
