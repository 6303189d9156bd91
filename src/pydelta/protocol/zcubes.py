"""ZCubes: the bookkeeping behind incremental liquid clustering (delta-spark's ZCube, ZCubeInfo
and ClusteringStrategy).

Every file one clustering job writes is tagged with the job's `ZCUBE_ID` (a UUID) and
`ZCUBE_ZORDER_BY` (the clustering columns as a JSON list of logical names). The next OPTIMIZE
then leaves alone the ZCubes that are already big enough (`minCubeSize` and more) and reclusters
the new, unclustered files together with the partial ZCubes; a lone ZCube with nothing new
beside it is not touched again. Files clustered on other columns are skipped unless the run
is OPTIMIZE ... FULL. This module only chooses and groups files; the engine rewrites them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydelta.protocol.clustering import PROVIDER

ZCUBE_ID_TAG = "ZCUBE_ID"
ZORDER_BY_TAG = "ZCUBE_ZORDER_BY"

MIN_CUBE_SIZE_CONF = "spark.databricks.delta.optimize.clustering.mergeStrategy.minCubeSize.threshold"
TARGET_CUBE_SIZE_CONF = "spark.databricks.delta.optimize.clustering.mergeStrategy.minCubeSize.targetCubeSize"
DEFAULT_MIN_CUBE_SIZE = 100 * 1024**3  # 100 x the default maximum file size (1 GiB)
DEFAULT_TARGET_CUBE_SIZE = DEFAULT_MIN_CUBE_SIZE * 3 // 2

FileRow = Mapping[str, Any]  # a row of Snapshot.files()


def tags_of(row: FileRow) -> dict[str, str]:
    tags = row.get("tags") or {}
    return dict(tags) if not isinstance(tags, dict) else tags


def cube_of(row: FileRow) -> tuple[str, list[str]] | None:
    """(ZCube ID, clustering columns) of a file a clustering job wrote, else None."""
    tags = tags_of(row)
    cube_id, columns = tags.get(ZCUBE_ID_TAG), tags.get(ZORDER_BY_TAG)
    if cube_id is None or columns is None:
        return None
    return cube_id, list(json.loads(columns))


def new_cube_tags(columns: Sequence[str]) -> dict[str, str]:
    """Tags for the files of one new ZCube."""
    return {ZCUBE_ID_TAG: str(uuid.uuid4()), ZORDER_BY_TAG: json.dumps(list(columns), separators=(",", ":"))}


def logical_size(row: FileRow) -> int:
    """delta-spark's estLogicalFileSize: the file's size less the share its deletion vector removes."""
    size = int(row["size"])
    dv, records = row.get("deletion_vector"), row.get("num_records")
    if dv and records:
        return int(size * (records - (dv.get("cardinality") or 0)) / records)
    return size


def _by_cube(files: Iterable[tuple[FileRow, Any]]) -> list[list[tuple[FileRow, Any]]]:
    """Runs of (file, cube): each unclustered file alone, each ZCube's files together (input sorted by cube)."""
    runs: list[list[tuple[FileRow, Any]]] = []
    current_id: str | None = None
    for row, cube in files:
        if cube is None:
            runs.append([(row, cube)])
            current_id = None
        elif cube[0] == current_id:
            runs[-1].append((row, cube))
        else:
            runs.append([(row, cube)])
            current_id = cube[0]
    return runs


def clustering_candidates(files: Sequence[FileRow], columns: Sequence[str], *, full: bool,
                          min_cube_size: int) -> list[FileRow]:
    """The files one clustering OPTIMIZE rewrites, unclustered files first, then by ZCube ID."""
    with_cubes = sorted(((row, cube_of(row)) for row in files),
                        key=lambda rc: ("" if rc[1] is None else "~" + rc[1][0], rc[0]["path"]))
    candidates: list[tuple[FileRow, tuple[str, list[str]] | None]] = []
    skipped: list[tuple[FileRow, tuple[str, list[str]] | None]] = []
    for row, cube in with_cubes:
        provider_ok = row.get("clustering_provider") in (None, PROVIDER)
        same_columns = cube is None or cube[1] == list(columns)
        (candidates if provider_ok and same_columns else skipped).append((row, cube))
    small = [run for run in _by_cube(candidates)
             if run[0][1] is None or sum(logical_size(r) for r, _ in run) < min_cube_size]
    chosen = [row for run in small for row, _ in run]
    if full and skipped:
        return chosen + [row for row, _ in skipped]
    if len(small) == 1 and small[0][0][1] is not None:
        return []  # one partial ZCube and nothing new: already as clustered as it gets
    return chosen


def group_into_cubes(files: Sequence[FileRow], max_cube_size: int) -> list[list[FileRow]]:
    """Consecutive files up to `max_cube_size` bytes each: one new ZCube (one rewrite job) per group."""
    groups: list[list[FileRow]] = []
    size = 0
    for row in files:
        if groups and size + int(row["size"]) <= max_cube_size:
            groups[-1].append(row)
            size += int(row["size"])
        else:
            groups.append([row])
            size = int(row["size"])
    return groups
