"""How an apply moves each group, decided the same way when it is planned, checked, re-checked
after the confirmation and resumed (`reset_path_now`): the brokers' reset path
(console.domain.reset_paths.choose_reset_path) from the brokers' settings and who consumes the
group now (console/services/read/online.py), or a BROADCASTING client's own offsets file; and
the refusal of a broadcasting group whose offsets are not on this host."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc

from console.domain.offsets import GroupOffsets
from console.domain.reset_paths import (
    BrokerFacts,
    ResetPath,
    choose_reset_path,
    client_file_path,
)
from console.domain.spec import ResetSpec, SpecError, ToGroup
from console.services.read.broker_facts import broker_facts
from console.services.read.client_offset_files import find_store_files, with_client_stores
from console.services.read.online import Consumers, consumers_of
from console.services.read.reader import ClusterReader


async def reset_path_now(
    reader: ClusterReader,
    group: str,
    brokers: Mapping[str, str],
    topics: Iterable[str],
    facts: Sequence[BrokerFacts],
    *,
    broadcasting: bool,
    per_queue: bool,
    client_file: tuple[str, str] | None = None,
) -> tuple[ResetPath, Consumers]:
    """The way an apply would move `group` now, and who consumes it: asked of `brokers` (those
    holding its queues, by name) and the cluster's proxies. `facts`: those brokers' reset
    settings; `client_file`: the offsets file and client id of a BROADCASTING client on this
    host, which is rewritten instead. When who is online is unknown, the path says what it
    would be with nobody online, and is blocked."""
    who = await consumers_of(reader, group, brokers, topics)
    if client_file is not None:
        file, client_id = client_file
        running = None if who.unknown else client_id in who.clients
        return client_file_path(file, client_id, running=running), who
    path = choose_reset_path(
        facts,
        consumers_online=who.online,
        broadcasting=broadcasting,
        per_queue=per_queue,
        pop=who.pop,
    )
    if who.unknown is not None and path.blocker is None:
        path = replace(
            path,
            reason=f"if no consumer is online: {path.reason}",
            blocker=f"could not tell who is online: {who.unknown}",
        )
    return path, who


async def paths_for(
    reader: ClusterReader, spec: ResetSpec, table: pa.Table, client_offset_dirs: Sequence[str]
) -> dict[str, ResetPath]:
    """Per group of the spec, the way an apply would move its offsets, from the snapshot's rows
    (`table`: where its queues are), the brokers' reset settings and who consumes it now."""
    admin = reader.admin
    mine = table.filter(pc.is_in(table["group"], pa.array(list(spec.scope.groups))))
    addrs = dict(zip(mine["broker"].to_pylist(), mine["broker_addr"].to_pylist(), strict=True))

    facts = await broker_facts(admin, addrs)
    per_queue = not spec.one_time_per_topic
    out: dict[str, ResetPath] = {}
    for group in spec.scope.groups:
        rows = mine.filter(pc.equal(mine["group"], group))
        models = set(rows["message_model"].to_pylist())
        held = dict(zip(rows["broker"].to_pylist(), rows["broker_addr"].to_pylist(), strict=True))
        topics = set(rows["topic"].to_pylist())
        if "BROADCASTING" in models and len(rows):
            out[group] = await _client_file_path(reader, group, held, topics, client_offset_dirs)
            continue
        path, _ = await reset_path_now(
            reader,
            group,
            held,
            topics,
            [facts[b] for b in sorted(held)],
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
    reader: ClusterReader,
    group: str,
    brokers: Mapping[str, str],
    topics: Iterable[str],
    client_offset_dirs: Sequence[str],
) -> ResetPath:
    """The way to reset a BROADCASTING group whose rows came from its client's file."""
    # The file and who is online; the brokers' min and max were read with the snapshot.
    found = await asyncio.to_thread(find_store_files, client_offset_dirs, group)
    if len(found) != 1 or found[0].error is not None:
        return choose_reset_path((), consumers_online=0, broadcasting=True, per_queue=True)
    (store,) = found
    path, _ = await reset_path_now(
        reader,
        group,
        brokers,
        topics,
        (),
        broadcasting=True,
        per_queue=True,
        client_file=(str(store.path), store.client_id),
    )
    return path


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
