"""Whether a cluster may be written, decided in one place, and what every write holds.

A write needs three things at once: the cluster's consent (`read_only: false`), an admin client
opened for writing, and a workspace on this machine to keep the journal and the audit log in.
`open_write_access` is the only way to get them; the apply session, and through it every writer
(the offset writer, the client push, a broadcasting client's offsets.json), is built from the
`WriteAccess` it yields. The decision itself is `access.write_refusal`, which the admin-client
factory asks too, so a client opened for writing anywhere obeys the same rule.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from console.config import ClusterConfig, Config
from console.errors import Refused
from console.services.apply.replicas import ReplicaLookup, replicas_now
from console.services.infra.access import write_refusal
from console.services.infra.workspace import Workspace
from console.services.read.open_reader import open_reader
from console.services.read.reader import ClusterReader


@dataclass(frozen=True, slots=True)
class WriteAccess:
    cluster: ClusterConfig
    config: Config
    #: Reads and writes through one admin client opened for writing.
    reader: ClusterReader
    #: The workspace folder on this machine that holds journals and the audit log.
    root: Path
    #: Where each broker's replicas are, that a write waits for (console/services/apply/
    #: replicas.py).
    replicas: ReplicaLookup = field(default=replicas_now)


def journal_root(config: Config) -> Path:
    """The workspace folder for journals and the audit log; Refused when the workspace is not
    on this machine (an apply keeps no evidence rather than write without it)."""

    workspace = Workspace(config.workspace_path)
    root = workspace.local_root
    if root is None:
        raise Refused(
            [
                f"the workspace {workspace.uri} is not on this machine: an apply keeps its "
                "journal and audit log there, so it needs a local workspace"
            ]
        )
    return root


@asynccontextmanager
async def open_write_access(cluster: ClusterConfig, config: Config) -> AsyncIterator[WriteAccess]:
    """Everything a write to `cluster` needs; Refused (nothing opened) when it may not be
    written or the workspace is not local."""
    refusal = write_refusal(cluster)
    if refusal is not None:
        raise Refused([refusal])
    root = journal_root(config)
    async with open_reader(cluster, config, write=True) as reader:
        yield WriteAccess(cluster, config, reader, root)
