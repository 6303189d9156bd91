"""Log replay as a Spark job, for logs too large for one driver.

delta-spark reconstructs a snapshot's state with Spark: the checkpoint's Parquet and the
commits' JSON are read as one DataFrame of actions, and the newest action per file key
(path, deletion vector) decides whether the file is live. This module does the same for
the file actions; the small actions (protocol, metadata, txn, domain metadata, commit
info) are collected to the driver and replayed by the log core's own rules, so both
paths give the same `TableState`.

A `SparkEngine` gives its snapshots `spark_replayer(spark)`, which uses it for logs larger than
`spark.pydelta.logReplay.sparkMinBytes` (checkpoint plus commit bytes; default 4 GiB,
about 10M files: on small machines the driver's vectorized replay is faster, see
benchmarks/bench_spark_replay.py). The reconciled state is collected to the driver as Arrow
(pydelta's snapshots live there), so `spark.driver.maxResultSize` must exceed it (about
400 bytes per file with statistics).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pydelta.log.arrow_actions import ADD_TYPE, REMOVE_TYPE, conform
from pydelta.log.checkpoint_reader import sidecar_files, stats_from_parsed_stats, with_stats
from pydelta.log.commits import CommitActions, parse_actions
from pydelta.log.file_info import FileInfo, InlineCommit
from pydelta.log.replay import TableState, apply_commits
from pydelta.log.segment import LogSegment
from pydelta.log.snapshot import Replayer
from pydelta.log.storage import Storage
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.base.parquet_files import reader_paths

MIN_BYTES_CONF = "spark.pydelta.logReplay.sparkMinBytes"
DEFAULT_MIN_BYTES = 4 << 30

_DV = ("STRUCT<storageType: STRING, pathOrInlineDv: STRING, offset: INT, sizeInBytes: INT, cardinality: BIGINT, "
       "maxRowIndex: BIGINT>")
_ADD = (f"STRUCT<path: STRING, partitionValues: MAP<STRING, STRING>, size: BIGINT, modificationTime: BIGINT, "
        f"dataChange: BOOLEAN, stats: STRING, tags: MAP<STRING, STRING>, deletionVector: {_DV}, baseRowId: BIGINT, "
        f"defaultRowCommitVersion: BIGINT, clusteringProvider: STRING>")
_REMOVE = (f"STRUCT<path: STRING, deletionTimestamp: BIGINT, dataChange: BOOLEAN, extendedFileMetadata: BOOLEAN, "
           f"partitionValues: MAP<STRING, STRING>, size: BIGINT, stats: STRING, tags: MAP<STRING, STRING>, "
           f"deletionVector: {_DV}, baseRowId: BIGINT, defaultRowCommitVersion: BIGINT>")
# The small actions are kept as raw JSON text (only their presence matters to Spark).
_SMALL = ("protocol", "metaData", "txn", "domainMetadata", "commitInfo")


def _read_json(spark: SparkSession, paths: list[str]) -> DataFrame:
    """Log files in JSON read with the commit schema, each path naming exactly one file."""
    strings, glob = reader_paths(paths)
    return spark.read.schema(_commit_schema()).option("__globPaths__", glob).json(strings)


def _commit_schema() -> str:
    small = ", ".join(f"`{name}` STRING" for name in _SMALL)
    return f"add {_ADD}, remove {_REMOVE}, {small}"


def replay_segment_on_spark(spark: SparkSession, storage: Storage, table_root: str, segment: LogSegment,
                            sidecars: list[FileInfo] | None = None) -> TableState:
    """The state at `segment.version`, with file actions reconciled by a Spark job.

    `sidecars`: the V2 checkpoint's sidecar files when the caller has listed them already.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if sidecars is None:
        sidecars = _sidecars(storage, segment)
    frames = _checkpoint_frames(spark, segment, sidecars) if segment.checkpoint is not None else []
    if segment.commits:
        commits = _read_json(spark, [info.path for _, info in segment.commits])
        version = F.regexp_extract(F.input_file_name(), r"(\d{20})\.[^/]*json$", 1).cast("long")
        frames.append(commits.select(version.alias("version"), "add", "remove", *_SMALL))
    actions = frames[0]
    for frame in frames[1:]:
        actions = actions.unionByName(frame)
    actions = actions.persist()
    try:
        small_commits = _small_commits(actions, table_root)
        # About 64 MiB of log per shuffle partition, so huge logs sort in small pieces.
        partitions = max(int(str(spark.conf.get("spark.sql.shuffle.partitions", "200"))),
                         _log_bytes(segment, sidecars) >> 26)
        file_actions = actions.where("add IS NOT NULL OR remove IS NOT NULL").select(
            "version", "add", "remove", _file_key(table_root).alias("key")).repartition(partitions, "key")
        newest = F.row_number().over(Window.partitionBy("key").orderBy(F.col("version").desc()))
        latest = file_actions.withColumn("rank", newest).where("rank = 1")
        adds = _arrow_column(latest.where("add IS NOT NULL").select("add"), "add", ADD_TYPE)
        adds = _stats_from_checkpoint(storage, adds, segment, sidecars)
        removes = _arrow_column(latest.where("add IS NULL").select("remove"), "remove", REMOVE_TYPE)
    finally:
        actions.unpersist()
    state = apply_commits(None, small_commits, table_root, segment.version)
    state.adds, state.removes = adds, removes
    state.plain_add_paths = state.plain_remove_paths = None
    return state


def _sidecars(storage: Storage, segment: LogSegment) -> list[FileInfo]:
    checkpoint = segment.checkpoint
    if checkpoint is None or checkpoint.kind != "v2":
        return []
    return sidecar_files(storage, segment.log_dir, checkpoint)


def _checkpoint_frames(spark: SparkSession, segment: LogSegment, sidecars: list[FileInfo]) -> list[Any]:
    """The checkpoint's actions as (version, add, remove, small actions as JSON text) rows.

    Parquet files (classic, multi-part, a V2 top-level file and its sidecars) are read with
    the checkpoint schema (columns a file lacks, such as a sidecar's small actions, read as
    null); a V2 top-level JSON file is read like a commit.
    """
    from pyspark.sql import functions as F

    checkpoint = segment.checkpoint
    assert checkpoint is not None
    version = F.lit(checkpoint.version).cast("long").alias("version")
    parquet = _parquet_files(segment, sidecars)
    text = [f.path for f in checkpoint.files if f.name.endswith(".json")]
    small = [n for n in _SMALL if n != "commitInfo"]  # a checkpoint holds no commitInfo
    no_commit_info = F.lit(None).cast("string").alias("commitInfo")
    frames = []
    if parquet:
        strings, glob = reader_paths(parquet)
        frames.append(spark.read.schema(_checkpoint_schema()).option("__globPaths__", glob).parquet(*strings)
                      .select(version, "add", "remove", *[F.to_json(F.col(n)).alias(n) for n in small], no_commit_info))
    if text:
        frames.append(_read_json(spark, text)
                      .select(version, "add", "remove", *small, no_commit_info))
    return frames


def _parquet_files(segment: LogSegment, sidecars: list[FileInfo]) -> list[str]:
    """The checkpoint's Parquet files: classic or multi-part parts, a V2 top-level file, its sidecars."""
    assert segment.checkpoint is not None
    return [f.path for f in segment.checkpoint.files if not f.name.endswith(".json")] + [f.path for f in sidecars]


def _stats_from_checkpoint(storage: Storage, adds: pa.Array, segment: LogSegment,
                           sidecars: list[FileInfo]) -> pa.Array:
    """Fill `stats` of adds that have none from the checkpoint's `add.stats_parsed` (tables
    checkpointed with delta.checkpoint.writeStatsAsJson=false), as the driver replay does."""
    if segment.checkpoint is None or len(adds) == 0:
        return adds
    stats = pc.struct_field(adds, "stats")
    if stats.null_count == 0:
        return adds
    paths = pc.struct_field(adds, "path")
    wanted = set(pc.filter(paths, pc.is_null(stats)).to_pylist())
    found = stats_from_parsed_stats(storage, _parquet_files(segment, sidecars), wanted)
    if not found:
        return adds
    return with_stats(adds, [s if s is not None else found.get(p)
                             for s, p in zip(stats.to_pylist(), paths.to_pylist(), strict=True)])


def _checkpoint_schema() -> str:
    """Checkpoint rows: file actions as structs, small actions as the structs they are (read as JSON text)."""
    protocol = "STRUCT<minReaderVersion: INT, minWriterVersion: INT, readerFeatures: ARRAY<STRING>, " \
               "writerFeatures: ARRAY<STRING>>"
    metadata = ("STRUCT<id: STRING, name: STRING, description: STRING, format: STRUCT<provider: STRING, options: "
                "MAP<STRING, STRING>>, schemaString: STRING, partitionColumns: ARRAY<STRING>, configuration: "
                "MAP<STRING, STRING>, createdTime: BIGINT>")
    txn = "STRUCT<appId: STRING, version: BIGINT, lastUpdated: BIGINT>"
    domain = "STRUCT<domain: STRING, configuration: STRING, removed: BOOLEAN>"
    return (f"add {_ADD}, remove {_REMOVE}, protocol {protocol}, metaData {metadata}, txn {txn}, "
            f"domainMetadata {domain}")


def _file_key(table_root: str) -> Any:
    """The reconciliation key: the decoded absolute path, then the deletion vector's unique id."""
    from pyspark.sql import functions as F

    path = F.coalesce(F.col("add.path"), F.col("remove.path"))
    decoded = F.url_decode(F.replace(path, F.lit("+"), F.lit("%2B")))
    absolute = F.when(path.rlike(r"^(/|[A-Za-z][A-Za-z0-9+.-]*:)"),
                      F.regexp_replace(decoded, r"^file:(//)?", ""))
    canonical = absolute.otherwise(F.concat(F.lit(table_root.rstrip("/") + "/"), decoded))
    dv = F.coalesce(F.col("add.deletionVector"), F.col("remove.deletionVector"))
    uid = F.when(dv.isNull(), F.lit("")).otherwise(F.concat(
        dv.storageType, dv.pathOrInlineDv,
        F.when(dv.offset.isNull(), F.lit("")).otherwise(F.concat(F.lit("@"), dv.offset.cast("string")))))
    return F.concat(canonical, F.lit("\x00"), uid)


def _small_commits(actions: Any, table_root: str) -> list[CommitActions]:
    """The non-file actions, per version, parsed by the log core (as the driver replay would)."""
    from pyspark.sql import functions as F

    present = " OR ".join(f"`{n}` IS NOT NULL" for n in _SMALL)
    rows = actions.where(present).select("version", *[F.col(n) for n in _SMALL]).collect()
    lines: dict[int, list[str]] = defaultdict(list)
    for row in rows:
        for name in _SMALL:
            if row[name] is not None:
                lines[row["version"]].append(f'{{"{name}": {row[name]}}}')
    return [parse_actions("\n".join(lines[v]).encode(), v, f"version {v} (replayed on Spark)")
            for v in sorted(lines)]


def _arrow_column(df: DataFrame, name: str, target: pa.DataType) -> pa.Array:
    table = df.toArrow()
    column = table.column(name)
    if column.num_chunks == 0:
        return pa.array([], type=target)
    return conform(column.combine_chunks(), target)


def spark_replayer(spark: SparkSession) -> Replayer:
    """The replay a `SparkEngine` gives its snapshots: logs above
    `spark.pydelta.logReplay.sparkMinBytes` replay on this session, smaller ones on the driver."""

    def replayer(storage: Storage, table_root: str, segment: LogSegment) -> TableState | None:
        limit = int(str(spark.conf.get(MIN_BYTES_CONF, str(DEFAULT_MIN_BYTES))))
        if any(isinstance(info, InlineCommit) for _, info in segment.commits):
            return None  # a commit only the catalog holds has no file for Spark tasks to read
        sidecars = _sidecars(storage, segment)
        if _log_bytes(segment, sidecars) < limit:
            return None
        return replay_segment_on_spark(spark, storage, table_root, segment, sidecars)

    return replayer


def _log_bytes(segment: LogSegment, sidecars: list[FileInfo]) -> int:
    """Checkpoint (with a V2 checkpoint's sidecars) plus commit bytes."""
    checkpoint = sum(f.size for f in segment.checkpoint.files) if segment.checkpoint is not None else 0
    checkpoint += sum(f.size for f in sidecars)
    return checkpoint + sum(info.size for _, info in segment.commits)
