"""Spark schemas of snapshots and plan rows, derived from the column lists in console.domain."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql.types import (
    ArrayType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from console.domain.plan import PLAN_COLUMNS, SNAPSHOT_COLUMNS

_TYPES: dict[str, DataType] = {
    "string": StringType(),
    "int": IntegerType(),
    "bigint": LongType(),
    "double": DoubleType(),
    "array<string>": ArrayType(StringType(), containsNull=False),
}


def struct(columns: Sequence[tuple[str, str]]) -> StructType:
    # All nullable: Parquet read back by Spark is nullable anyway, and schemas must compare equal.
    return StructType([StructField(name, _TYPES[kind], nullable=True) for name, kind in columns])


SNAPSHOT_SCHEMA = struct(SNAPSHOT_COLUMNS)
PLAN_SCHEMA = struct(PLAN_COLUMNS)
SNAPSHOT_NAMES = tuple(name for name, _ in SNAPSHOT_COLUMNS)
PLAN_NAMES = tuple(name for name, _ in PLAN_COLUMNS)
