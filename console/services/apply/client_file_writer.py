"""A BROADCASTING client's offsets.json rewritten: the write path of a group whose offsets live
on its consumer host (console/services/read/client_offset_files.py reads them).

Only the apply session's writer calls this, with the session's `WriteAccess`; it asks the one
rule (console/services/infra/access.py, `write_refusal`) itself all the same.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from console.domain.client_offsets import ClientOffsetsError, render_offsets_json
from console.domain.offsets import BACKUP_SUFFIX, QueueKey
from console.errors import Refused
from console.services.apply.write_access import WriteAccess
from console.services.infra.access import write_refusal
from console.services.read.client_offset_files import read_store_file


def rewrite_store_file(
    access: WriteAccess, path: Path, targets: Mapping[QueueKey, int]
) -> dict[QueueKey, int]:
    """Move these queues in a (stopped) client's offsets file, the others kept as they are;
    returns the offsets the file holds afterwards, read back from disk. Refused for a cluster
    that may not be written, like every other write.

    Written as the Java client writes it (MixAll.string2File): the new text to `<file>.tmp`,
    the current text kept as `<file>.bak`, then the `.tmp` renamed over the file, each synced,
    so a crash leaves either the old file or the new one, and the backup."""
    refusal = write_refusal(access.cluster)
    if refusal is not None:
        raise Refused([refusal])
    current = read_store_file(path.parent.parent.name, path)
    if current.error is not None:
        raise ClientOffsetsError(current.error)
    tmp = path.with_name(path.name + ".tmp")
    _write_synced(tmp, render_offsets_json({**current.offsets, **targets}))
    if path.exists():
        _write_synced(path.with_name(path.name + BACKUP_SUFFIX), path.read_text(encoding="utf-8"))
    os.replace(tmp, path)
    _sync_dir(path.parent)
    after = read_store_file(current.client_id, path)
    if after.error is not None or after.path != path:
        raise ClientOffsetsError(f"{path}: unreadable after the rewrite: {after.error}")
    return after.offsets


def _write_synced(path: Path, text: str) -> None:
    with path.open("w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
