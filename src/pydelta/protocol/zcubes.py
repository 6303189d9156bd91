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
from typing import Any, Iterable, Mapping, Sequence

ZCUBE_ID_TAG = "ZCUBE_ID"
ZORDER_BY_TAG = "ZCUBE_ZORDER_BY"
CLUSTERING_PROVIDER = "liquid"

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


def _by_cube(files: Iterable[FileRow]) -> list[list[FileRow]]:
    """Runs of files: each unclustered file alone, each ZCube's files together (input sorted by cube)."""
    runs: list[list[FileRow]] = []
    current_id: str | None = None
    for row in files:
        cube = cube_of(row)
        if cube is None:
            runs.append([row])
            current_id = None
        elif cube[0] == current_id:
            runs[-1].append(row)
        else:
            runs.append([row])
            current_id = cube[0]
    return runs


def clustering_candidates(files: Sequence[FileRow], columns: Sequence[str], *, full: bool,
                          min_cube_size: int) -> list[FileRow]:
    """The files one clustering OPTIMIZE rewrites, unclustered files first, then by ZCube ID."""
    ordered = sorted(files, key=lambda r: ("" if cube_of(r) is None else "~" + cube_of(r)[0], r["path"]))
    candidates, skipped = [], []
    for row in ordered:
        provider_ok = row.get("clustering_provider") in (None, CLUSTERING_PROVIDER)
        cube = cube_of(row)
        (candidates if provider_ok and (cube is None or cube[1] == list(columns)) else skipped).append(row)
    runs = _by_cube(candidates)
    small = [run for run in runs
             if cube_of(run[0]) is None or sum(logical_size(r) for r in run) < min_cube_size]
    if full and skipped:
        return [r for run in small for r in run] + skipped
    if len(small) == 1 and cube_of(small[0][0]) is not None:
        return []  # one partial ZCube and nothing new: already as clustered as it gets
    return [r for run in small for r in run]


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
