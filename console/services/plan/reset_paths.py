"""How an apply would move each group of a plan, decided when it is planned: the brokers' reset
path (console.domain.plan.choose_reset_path) from the snapshot's rows and the brokers' settings,
or a BROADCASTING client's own offsets file; and the refusal of a broadcasting group whose
offsets are not on this host."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc

from console.domain.offsets import GroupOffsets
from console.domain.reset_paths import ResetPath, choose_reset_path, client_file_path
from console.domain.spec import ResetSpec, SpecError, ToGroup
from console.services.read.broker_facts import broker_facts
from console.services.read.client_offsets import find_store_files, with_client_stores
from console.services.read.reader import ClusterReader


async def paths_for(
    reader: ClusterReader, spec: ResetSpec, table: pa.Table, client_offset_dirs: Sequence[str]
) -> dict[str, ResetPath]:
    """Per group of the spec, the way an apply would move its offsets, from the snapshot's rows
    (`table`) and the brokers' reset settings."""
    admin = reader.admin
    mine = table.filter(pc.is_in(table["group"], pa.array(list(spec.scope.groups))))
    addrs = dict(zip(mine["broker"].to_pylist(), mine["broker_addr"].to_pylist(), strict=True))

    brokers = list((await broker_facts(admin, addrs)).values())
    per_queue = not spec.one_time_per_topic
    out: dict[str, ResetPath] = {}
    for group in spec.scope.groups:
        rows = mine.filter(pc.equal(mine["group"], group))
        clients = max((c or 0 for c in rows["clients"].to_pylist()), default=0)
        models = set(rows["message_model"].to_pylist())
        if "BROADCASTING" in models and len(rows):
            out[group] = await _client_file_path(reader, group, client_offset_dirs)
            continue
        path = choose_reset_path(
            brokers,
            consumers_online=clients,
            broadcasting="BROADCASTING" in models,
            per_queue=per_queue,
        )
        if isinstance(spec.strategy, ToGroup) and rows["committed"].null_count == len(rows):
            path = replace(
                path,
                reason=f"{group} has no offsets yet: this plan creates them from "
                f"{spec.strategy.group}'s (the group is created, not moved); " + path.reason,
            )
        out[group] = path
    return out


async def _client_file_path(
    reader: ClusterReader, group: str, client_offset_dirs: Sequence[str]
) -> ResetPath:
    """The way to reset a BROADCASTING group whose rows came from its client's file."""
    # The file and who is online; the brokers' min and max were read with the snapshot.
    found = await asyncio.to_thread(find_store_files, client_offset_dirs, group)
    if len(found) != 1 or found[0].error is not None:
        return choose_reset_path((), consumers_online=0, broadcasting=True, per_queue=True)
    (store,) = found
    offsets = await reader.group_offsets(group)
    online = {c.client_id for c in offsets.clients}
    running = store.client_id in online if offsets.clients_known else None
    return client_file_path(str(store.path), store.client_id, running=running)


async def refuse_client_local(
    reader: ClusterReader, spec: ResetSpec, table: pa.Table, client_offset_dirs: Sequence[str]
) -> None:
    """A BROADCASTING group has no offsets on the brokers, so no snapshot holds a row of
    it: rather than "no offsets", say where its offsets are and how they are reset."""
    present = set(table["group"].to_pylist())
    missing = [(i, g) for i, g in enumerate(spec.scope.groups) if g not in present]
    if not missing:
        return
    read = await asyncio.gather(
        *(reader.group_offsets(g) for _, g in missing), return_exceptions=True
    )
    for (i, _), offsets in zip(missing, read, strict=True):
        if isinstance(offsets, GroupOffsets) and offsets.client_local:
            found = await with_client_stores(reader, offsets, client_offset_dirs)
            raise SpecError(f"scope.groups[{i}]", client_local_refusal(found, client_offset_dirs))


def client_local_refusal(offsets: GroupOffsets, dirs: Sequence[str]) -> str:
    """Why a BROADCASTING group cannot be planned from this host, and what to do instead."""
    group = offsets.group
    head = f"{group!r} is a BROADCASTING group: its offsets live in each client's offsets.json"
    stores = offsets.client_stores
    if not stores:
        where = ", ".join(dirs) or "no directory (client_offset_dirs is empty)"
        return (
            f"{head}, and none of {group} was found here (looked in {where}). On the consumer "
            f"host, stop the client and edit ~/.rocketmq_offsets/<clientId>/{group}/offsets.json "
            "(or run the console there; list other places in client_offset_dirs)"
        )
    unreadable = [s for s in stores if s.error is not None]
    if unreadable:
        return f"{head}; cannot read {unreadable[0].error}"
    clients = ", ".join(s.client_id for s in stores)
    return (
        f"{head}; {len(stores)} clients keep one here ({clients}): plan each client on its own "
        "(name one directory in client_offset_dirs)"
    )
