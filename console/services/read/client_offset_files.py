"""Finds the offsets.json of a BROADCASTING group's clients on this host and sets them beside the
brokers' min and max (see console.domain.client_offsets for the file).

The console reads the directories the config names (`client_offset_dirs`, by default the Java
client's `~/.rocketmq_offsets`): each holds one directory per client id, and in it one per group.
A file that cannot be read is shown as such, never as an offset of 0.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from console.domain.client_offsets import OFFSETS_FILE, ClientOffsetsError, parse_offsets_json
from console.domain.gaps import Gap, Part, gap
from console.domain.offsets import (
    BACKUP_SUFFIX,
    BROADCASTING,
    ClientStore,
    GroupOffsets,
    QueueKey,
    QueueOffsets,
)
from console.rocketmq.errors import RocketMQError
from console.rocketmq.models import QueueStats
from console.services.read.reader import ClusterReader
from console.services.read.routes import QueuesRead


@dataclass(frozen=True, slots=True)
class StoreFile:
    """One client's offsets file as found on disk (offsets empty when `error` says why)."""

    client_id: str
    path: Path
    modified_ms: int
    offsets: dict[QueueKey, int]
    error: str | None = None


def store_dirs(dirs: Iterable[str]) -> list[Path]:
    return [Path(d).expanduser() for d in dirs]


def find_store_files(dirs: Iterable[str], group: str) -> list[StoreFile]:
    """Every `<dir>/<clientId>/<group>/offsets.json` (or only its .bak) under these dirs."""
    found: list[StoreFile] = []
    for root in store_dirs(dirs):
        try:
            clients = sorted(p for p in root.iterdir() if p.is_dir())
        except OSError:
            continue  # no such directory here: nothing of this host's clients
        for client_dir in clients:
            folder = client_dir / group
            if (folder / OFFSETS_FILE).exists() or (
                folder / (OFFSETS_FILE + BACKUP_SUFFIX)
            ).exists():
                found.append(read_store_file(client_dir.name, folder / OFFSETS_FILE))
    return found


def read_store_file(client_id: str, path: Path) -> StoreFile:
    """The offsets as the Java client would load them: the file, else its backup when the file
    is missing, empty or unreadable."""
    errors: list[str] = []
    for candidate in (path, path.with_name(path.name + BACKUP_SUFFIX)):
        try:
            text = candidate.read_text(encoding="utf-8")
            modified_ms = int(candidate.stat().st_mtime * 1000)
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError) as exc:
            errors.append(f"{candidate}: {getattr(exc, 'strerror', None) or exc}")
            continue
        if not text.strip():
            errors.append(f"{candidate}: empty")
            continue
        try:
            return StoreFile(client_id, candidate, modified_ms, parse_offsets_json(text))
        except ClientOffsetsError as exc:
            errors.append(f"{candidate}: {exc}")
    return StoreFile(client_id, path, 0, {}, "; ".join(errors) or f"{path}: not found")


async def with_client_stores(
    reader: ClusterReader, offsets: GroupOffsets, dirs: Sequence[str]
) -> GroupOffsets:
    """A BROADCASTING group's read with the client stores found on this host; other groups
    are returned as they are."""
    # Offline, a group says nothing of its model; one without offsets on the brokers may be
    # a broadcasting group whose clients are stopped: a client file of it says so (only a
    # BROADCASTING consumer keeps one).
    maybe = offsets.message_model is None and not offsets.queues and offsets.answered
    if not (offsets.client_local or maybe) or not dirs:
        return offsets
    files = await asyncio.to_thread(find_store_files, dirs, offsets.group)
    if not files:
        return offsets
    if maybe:
        offsets = replace(offsets, message_model=BROADCASTING)
    topics = sorted({k[0] for f in files for k in f.offsets})
    reads = await asyncio.gather(*(reader.topic_queues(t) for t in topics), return_exceptions=True)
    stats: dict[QueueKey, QueueStats] = {}
    gaps: list[Gap] = []
    for topic, read in zip(topics, reads, strict=True):
        if isinstance(read, QueuesRead):
            stats.update(
                {(s.queue.topic, s.queue.broker_name, s.queue.queue_id): s for s in read.queues}
            )
            gaps.extend(read.gaps)
        elif isinstance(read, RocketMQError):
            gaps.append(gap(Part.MIN_OFFSETS, topic, read))
        else:
            raise read
    running = {c.client_id for c in offsets.clients} if offsets.clients_known else None
    stores = tuple(_store(offsets.group, f, stats, running) for f in files)
    return replace(offsets, client_stores=stores, gaps=offsets.gaps + tuple(gaps))


def _store(
    group: str, f: StoreFile, stats: dict[QueueKey, QueueStats], running: set[str] | None
) -> ClientStore:
    queues: list[QueueOffsets] = []
    unknown: list[QueueKey] = []
    for key, offset in sorted(f.offsets.items()):
        s = stats.get(key)
        if s is None:
            unknown.append(key)
            continue
        queues.append(
            QueueOffsets(
                topic=key[0],
                broker=key[1],
                queue_id=key[2],
                min_offset=s.min_offset,
                max_offset=s.max_offset,
                committed=offset,
                client_id=f.client_id,
            )
        )
    return ClientStore(
        client_id=f.client_id,
        group=group,
        path=str(f.path),
        modified_ms=f.modified_ms,
        running=None if running is None else f.client_id in running,
        queues=tuple(queues),
        error=f.error,
        unknown=tuple(unknown),
    )
