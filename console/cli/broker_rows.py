"""What `rmq-console brokers` prints of each address: its broker id and role, where it is
reached, whether it answers, and in controller mode what the controller says of it (the
replica's epoch, whether it is in the SyncStateSet), with the controller and each set's epochs
under the table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from console.cli.render import table
from console.rocketmq.models import ClusterInfo
from console.rocketmq.reach import Reach
from console.services.read.replication import Replication, replica_set_lines
from console.services.read.routes import BrokerHealth, ReplicaFacts


def broker_rows(
    health: Sequence[BrokerHealth], info: ClusterInfo, reach: Reach
) -> list[dict[str, Any]]:
    return [
        {
            "broker": h.name,
            "broker_id": h.broker_id,
            "role": h.role,
            "cluster": info.brokers[h.name].cluster if h.name in info.brokers else None,
            # What the broker registered (what mqadmin shows), and where it is reached.
            "addr": h.addr or None,
            "reached_addr": reach.target(h.addr) if h.addr else None,
            "status": "UP" if h.up else "DOWN",
            "version": h.version,
            "error": h.error,
            "replication": _replication(h.replica),
        }
        for h in health
    ]


def _replication(facts: ReplicaFacts | None) -> dict[str, Any] | None:
    if facts is None:
        return None
    return {
        "controller": facts.controller,
        "controller_id": facts.controller_id,
        "alive": facts.alive,
        "in_sync": facts.in_sync,
        "master_epoch": facts.master_epoch,
        "sync_state_set_epoch": facts.sync_state_set_epoch,
        "epoch": facts.epoch,
        "unknown": facts.unknown,
    }


def print_broker_rows(
    rows: Sequence[dict[str, Any]], health: Sequence[BrokerHealth], replication: Replication
) -> None:
    head = ["BROKER", "ID", "ROLE", "CLUSTER", "ADDRESS", "STATUS", "VERSION"]
    if not replication.controller_mode:
        table(head, [_cells(r) for r in rows])
        return
    table(
        [*head, "EPOCH", "SYNC-STATE-SET"],
        [[*_cells(r), _epoch(r["replication"]), _in_sync(r["replication"])] for r in rows],
    )
    line = replication.controller_line()
    if line is not None:
        print(line)
    for line in replica_set_lines(health):
        print(f"  {line}")


def _cells(row: dict[str, Any]) -> list[Any]:
    return [
        row["broker"],
        row["broker_id"] if row["broker_id"] >= 0 else "-",
        row["role"],
        row["cluster"],
        _reached(row),
        row["status"],
        row["version"],
    ]


def _reached(row: dict[str, Any]) -> str:
    """A broker's registered address, and the one it is reached at beside it when mapped."""
    addr, reached = row["addr"], row["reached_addr"]
    if not addr:
        return "-"
    return addr if reached == addr else f"{addr} → {reached}"


def _epoch(facts: dict[str, Any] | None) -> str:
    if facts is None or facts["epoch"] is None:
        return "-"
    return str(facts["epoch"])


def _in_sync(facts: dict[str, Any] | None) -> str:
    """IN, OUT (behind its master: not electable), or unknown (the controller did not say)."""
    if facts is None:
        return "-"
    if facts["in_sync"] is None:
        return "unknown"
    state = "IN" if facts["in_sync"] else "OUT"
    return state if facts["alive"] is not False else f"{state} (no heartbeat)"
