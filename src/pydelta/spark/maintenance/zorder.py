"""Z-ordering for OPTIMIZE ... ZORDER BY and liquid clustering (delta-spark's ZOrderClustering).

Resolves the Z-order columns against the data schema with delta-spark's checks, and
range-partitions a bin's rows by the interleaved bits of each column's range id, so rows
close on every column land in the same files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pydelta.errors import DeltaAnalysisError
from pydelta.log.snapshot import Snapshot
from pydelta.protocol import geospatial
from pydelta.protocol.schema import quote_path, split_identifier
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.base.conf import conf_bool

ZORDER_STATS_CHECK_CONF = "spark.databricks.delta.optimize.zorder.checkStatsCollection.enabled"


def validate_zorder_columns(spark: SparkSession, snapshot: Snapshot, columns: Sequence[str]) -> list[list[str]]:
    """Each Z-order column resolved to its logical path in the data schema (delta-spark's checks)."""
    from pydelta.protocol.schema import StructType as DeltaStruct
    from pydelta.protocol.stats import indexed_schema

    schema = snapshot.schema
    partition_columns = snapshot.partition_columns
    case_sensitive = conf_bool(spark, "spark.sql.caseSensitive", False)

    def same(a: str, b: str) -> bool:
        return a == b if case_sensitive else a.lower() == b.lower()

    conf = snapshot.metadata.configuration
    try:
        num_indexed = int(conf.get("delta.dataSkippingNumIndexedCols", "32"))
    except ValueError:
        num_indexed = 32
    stats_schema = indexed_schema(
        schema, num_indexed, conf.get("delta.dataSkippingStatsColumns"), partition_columns
    )
    check_stats = conf_bool(spark, ZORDER_STATS_CHECK_CONF, True)
    resolved: list[list[str]] = []
    without_stats: list[str] = []

    def find(struct: Any, parts: list[str]) -> list[str] | None:
        path: list[str] = []
        current = struct
        for p in parts:
            if not isinstance(current, DeltaStruct):
                return None
            match = [f for f in current.fields if same(f.name, p)]
            if not match:
                return None
            path.append(match[0].name)
            current = match[0].type
        return path

    for col in columns:
        parts = split_identifier(col)
        if len(parts) == 1 and any(same(parts[0], c) for c in partition_columns):
            raise DeltaAnalysisError(
                f"{col} is a partition column. Z-Ordering can only be performed on data columns",
                error_class="DELTA_ZORDERING_ON_PARTITION_COLUMN",
            )
        data_schema = DeltaStruct(tuple(f for f in schema.fields if f.name not in partition_columns))
        path = find(data_schema, parts)
        if path is None:
            raise DeltaAnalysisError(f"Z-Ordering column {col} does not exist in data schema.")
        geospatial.fail_if_geospatial_column(col, _type_at(data_schema, path), "Z-ORDER")
        if check_stats and find(stats_schema, path) is None:
            without_stats.append(col)
        resolved.append(path)
    if without_stats:
        raise DeltaAnalysisError(
            f"Z-Ordering on [{', '.join(without_stats)}] will be ineffective, because we currently do not collect "
            "stats for these columns. Please refer to the Delta documentation on data skipping and Z-order for "
            "more information. You can disable this check by setting: "
            f"'SET {ZORDER_STATS_CHECK_CONF} = false'"
        )
    return resolved


def _type_at(struct: Any, path: list[str]) -> Any:
    """The type of the column at a resolved (possibly nested) path."""
    dt = struct
    for name in path:
        dt = dt.field(name).type
    return dt


_NUMERIC = {"byte", "short", "integer", "long", "float", "double"}


def _proxy_sql(col_sql: str, type_name: str) -> str:
    """A double that orders like the column (ties allowed): what the range ids are computed on.

    Dates and timestamps become day / microsecond counts; strings and binaries their first
    7 bytes read as a big-endian number (values sharing that prefix share a range).
    """
    if type_name in _NUMERIC or type_name.startswith("decimal"):
        return f"cast({col_sql} as double)"
    if type_name == "date":
        return f"cast(unix_date({col_sql}) as double)"
    if type_name == "timestamp":
        return f"cast(unix_micros({col_sql}) as double)"
    if type_name == "timestamp_ntz":  # wall-clock micros, independent of any time zone
        return (
            f"cast(unix_date(cast({col_sql} as date)) * 86400000000L + hour({col_sql}) * 3600000000L"
            f" + minute({col_sql}) * 60000000L + cast(date_part('SECOND', {col_sql}) * 1000000 as bigint) as double)"
        )
    if type_name == "boolean":
        return f"cast(cast({col_sql} as int) as double)"
    if type_name in ("string", "binary"):
        raw = f"cast({col_sql} as binary)" if type_name == "string" else col_sql
        return f"cast(conv(rpad(hex(substring({raw}, 1, 7)), 14, '0'), 16, 10) as double)"
    raise DeltaAnalysisError(f"Z-Ordering is not supported on columns of type {type_name}")


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and v != v


def _boundaries(values: list[Any], num_ranges: int) -> list[float]:
    """Up to num_ranges-1 increasing split points of the (non-null, finite) sample.

    Range 0 holds the values below the first split point, range i those in
    [b[i-1], b[i]); the sample's minimum is never a split point (range 0 would stay empty).
    """
    vals = sorted(v for v in values if v is not None and not _is_nan(v) and not math.isinf(v))
    if not vals or num_ranges <= 1:
        return []
    out: list[float] = []
    n = len(vals)
    for i in range(1, num_ranges):
        v = vals[min(n - 1, (i * n) // num_ranges)]
        if v > vals[0] and (not out or v > out[-1]):
            out.append(v)
    return out


def zorder_dataframe(df: DataFrame, paths: list[list[str]], num_files: int, *, num_ranges: int = 1000,
                     add_noise: bool = True, total_rows: int | None = None) -> Any:
    """`df` range-partitioned into `num_files` partitions by the z-value of the columns.

    Each column is mapped to a range id (ranges of about equal row counts from a sample,
    nulls first, NaN last; Spark ML's Bucketizer does the binary search), scaled so every
    column spans the same number of bits, and the ids' bits are interleaved, most
    significant first, into a bit string whose order is the Z-order curve: delta-spark's
    range_partition_id + interleave_bits.
    """
    from pyspark.ml.feature import Bucketizer
    from pyspark.sql import functions as F

    proxies = []
    for path in paths:
        col_sql = quote_path(path)
        dtype = df.select(F.expr(col_sql)).schema.fields[0].dataType.typeName()
        proxies.append(_proxy_sql(col_sql, dtype))
    names = [f"__pydelta_zp{i}" for i in range(len(paths))]
    sample_df = df.select(*[F.expr(p).alias(n) for p, n in zip(proxies, names, strict=True)])
    target = max(20 * num_ranges, 1000)
    if total_rows is not None and total_rows > target:
        sample_df = sample_df.sample(False, min(1.0, 1.5 * target / total_rows), seed=7)
    rows = sample_df.collect()
    bounds = [_boundaries([r[i] for r in rows], num_ranges) for i in range(len(paths))]
    bits = max(1, max(len(b) for b in bounds).bit_length())

    out = df.select("*", *[F.expr(p).alias(n) for p, n in zip(proxies, names, strict=True)])
    ids_in = [(n, b) for n, b in zip(names, bounds, strict=True) if b]
    id_names = {n: f"{n}_id" for n, _ in ids_in}
    if ids_in:
        inf = float("inf")
        out = Bucketizer(
            splitsArray=[[-inf, *b, inf] for _, b in ids_in],
            inputCols=[n for n, _ in ids_in],
            outputCols=[id_names[n] for n, _ in ids_in],
            handleInvalid="keep",  # NaN: one more range after all others (folded into the last below)
        ).transform(out)
    padded = []
    for n, b in zip(names, bounds, strict=True):
        if not b:
            rid = F.lit(0).cast("long")
        else:
            rid = F.least(F.coalesce(F.col(id_names[n]).cast("long"), F.lit(0).cast("long")), F.lit(len(b)))
        # ids 0..len(b) spread over 0..2^bits-1, so every column weighs the same in the curve
        scaled = F.floor(rid * F.lit(1 << bits) / F.lit(len(b) + 1)).cast("long")
        padded.append(F.lpad(F.bin(scaled), bits, "0"))
    pieces = [F.substring(p, pos, 1) for pos in range(1, bits + 1) for p in padded]
    key = "__pydelta_zvalue"
    out = out.withColumn(key, F.concat(*pieces))
    out = out.drop(*names, *id_names.values())
    if add_noise:
        noise = "__pydelta_znoise"
        out = out.withColumn(noise, (F.rand(11) * 255 - 128).cast("byte"))
        out = out.repartitionByRange(max(1, num_files), F.col(key), F.col(noise)).drop(noise)
    else:
        out = out.repartitionByRange(max(1, num_files), F.col(key))
    return out.drop(key)
