"""A snapshot's rows as the planner reads them before Spark is involved, with Arrow: the cells
the spec's scope covers, and rows for groups that have never committed."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from console.domain.checks import ScopeCell
from console.domain.spec import ResetSpec
from console.rocketmq.topics import RETRY_PREFIX


def scope_cells(table: pa.Table, spec: ResetSpec) -> list[ScopeCell]:
    """jobs.plan.scope_cells for a snapshot in memory, with Arrow instead of Spark."""
    ids = list(spec.scope.queue_ids)
    n = table.num_rows
    qid = table["queue_id"]
    selected = pc.is_in(qid, pa.array(ids, pa.int32())) if ids else pa.array([True] * n)
    none = pa.scalar(None, pa.int64())
    up = pc.if_else(selected, pc.subtract(table["max_offset"], table["committed"]), none)
    down = pc.if_else(selected, pc.subtract(table["committed"], table["min_offset"]), none)
    # Typed nulls: a distinct over Arrow's null type crashes pyarrow 26.
    no_id = pa.scalar(None, pa.int32())
    sel_id = pc.if_else(selected, qid, no_id) if ids else pa.nulls(n, pa.int32())
    cells = pa.table(
        {
            "group": table["group"],
            "topic": table["topic"],
            "broker": table["broker"],
            "sel_id": sel_id,
            "up": up,
            "down": down,
        }
    ).group_by(["group", "topic", "broker"])
    agg = cells.aggregate(
        [
            ("sel_id", "distinct", pc.CountOptions(mode="only_valid")),
            ("up", "max"),
            ("down", "max"),
        ]
    )
    return [
        ScopeCell(
            group=r["group"],
            topic=r["topic"],
            broker=r["broker"],
            queue_ids=tuple(sorted(i for i in r["sel_id_distinct"] if i is not None)),
            room_up=r["up_max"],
            room_down=r["down_max"],
        )
        for r in agg.to_pylist()
    ]


def unborn_rows(table: pa.Table, source: str, groups: Sequence[str]) -> pa.Table:
    """`table` with rows for `groups`, which have never committed: the source group's queues
    (not its own retry topic), each with nothing committed, no client and no rate."""
    theirs = table.filter(
        pc.and_(
            pc.equal(table["group"], source),
            pc.invert(pc.starts_with(table["topic"], RETRY_PREFIX)),
        )
    )
    n = theirs.num_rows
    added = []
    for group in groups:
        columns = {name: theirs[name] for name in table.column_names}
        columns["group"] = pa.array([group] * n, table.schema.field("group").type)
        for name in ("committed", "last_timestamp"):
            columns[name] = pa.nulls(n, table.schema.field(name).type)
        columns["clients"] = pa.array([0] * n, table.schema.field("clients").type)
        columns["consume_tps"] = pa.array([0.0] * n, table.schema.field("consume_tps").type)
        added.append(pa.table(columns, schema=table.schema))
    return pa.concat_tables([table, *added])
