"""Generating identity column values in a Spark write (rules in pydelta.protocol.identity).

Row i of partition p (of n) gets `base + step * (1 + p + n * i)`, as delta-spark's
GenerateIdentityValues does: unique without a shuffle, every value `start + k * step`.
The arithmetic runs in DECIMAL(38,0) so a value past the BIGINT range fails the write
instead of wrapping around. After the files are written, the new high-water mark is the
furthest value, read from the files' statistics (or from the files when stats lack it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydelta.errors import DeltaAnalysisError
from pydelta.protocol.actions import Metadata
from pydelta.protocol.identity import LONG_MAX, LONG_MIN, IdentitySpec, identity_columns
from pydelta.protocol.schema import column_mapping_mode, physical_name
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.write.constraints import MARKER

_ROW_BITS = 33  # monotonically_increasing_id(): partition index << 33 | row within the partition


def columns_to_generate(df: DataFrame, metadata: Metadata) -> list[IdentitySpec]:
    """Identity columns `df` does not provide; providing a GENERATED ALWAYS one is an error."""
    given = {c.lower() for c in df.columns}
    out = []
    for spec in identity_columns(metadata.schema):
        if spec.name.lower() in given:
            if not spec.allow_explicit_insert:
                raise DeltaAnalysisError(f"[DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED] Providing values for "
                                         f"GENERATED ALWAYS AS IDENTITY column {spec.name} is not supported.")
            continue
        out.append(spec)
    return out


def with_identity_values(df: DataFrame, specs: Sequence[IdentitySpec]) -> DataFrame:
    """`df` plus a generated BIGINT column for each spec."""
    from pyspark.sql import functions as F

    if not specs:
        return df
    partitions = max(1, df.rdd.getNumPartitions())
    mid = F.monotonically_increasing_id()
    partition = F.shiftrightunsigned(mid, _ROW_BITS).cast("decimal(38,0)")
    row = mid.bitwiseAND(F.lit((1 << _ROW_BITS) - 1)).cast("decimal(38,0)")
    index = partition + F.lit(partitions).cast("decimal(38,0)") * row
    for spec in specs:
        wide = F.lit(spec.base).cast("decimal(38,0)") + F.lit(spec.step).cast("decimal(38,0)") * (index + F.lit(1))
        in_range = wide.between(F.lit(LONG_MIN).cast("decimal(38,0)"), F.lit(LONG_MAX).cast("decimal(38,0)"))
        message = (f"{MARKER}: [DELTA_IDENTITY_COLUMNS_VALUE_OVERFLOW] the values of IDENTITY column {spec.name} "
                   "overflowed BIGINT")
        checked = F.coalesce(F.assert_true(in_range, F.lit(message)).cast("decimal(38,0)"), wide)
        df = df.withColumn(spec.name, checked.cast("long"))
    return df


def high_water_marks(spark: SparkSession, metadata: Metadata, specs: Sequence[IdentitySpec],
                     adds: Sequence[Mapping[str, Any]], table_root: str) -> dict[str, int]:
    """The furthest generated value of each spec's column in the files just written."""
    if not specs or not adds:
        return {}
    mapped = column_mapping_mode(metadata.configuration) != "none"
    out: dict[str, int] = {}
    for spec in specs:
        key = physical_name(metadata.schema.field(spec.name)) if mapped else spec.name
        bound = "maxValues" if spec.step > 0 else "minValues"
        values: list[int] = []
        for add in adds:
            stats = json.loads(add["stats"]) if add.get("stats") else {}
            if stats.get("numRecords") == 0:
                continue
            value = (stats.get(bound) or {}).get(key)
            if value is None:  # a file without the stat: read the column back instead
                read_back = _read_back(spark, table_root, adds, key, spec.step > 0)
                values = [] if read_back is None else [read_back]
                break
            values.append(int(value))
        if values:
            out[spec.name] = max(values) if spec.step > 0 else min(values)
    return out


def _read_back(
    spark: SparkSession, table_root: str, adds: Sequence[Mapping[str, Any]], column: str, largest: bool
) -> int | None:
    """The column's max (min) read from the written files, when their stats do not have it."""
    from pyspark.sql import functions as F

    from pydelta.log.replay import canonical_path
    from pydelta.spark.base.parquet_files import read_parquet_files

    paths = [canonical_path(a["path"], table_root) for a in adds]
    agg = F.max(column) if largest else F.min(column)
    row = read_parquet_files(spark, None, paths).agg(agg).first()
    if row is None:
        raise AssertionError("an aggregate without grouping returns one row")
    value = row[0]
    return None if value is None else int(value)
