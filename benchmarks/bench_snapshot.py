"""Snapshot load of a 300k-file table (checkpoint + 100 commits): pydelta vs deltalake.

Usage: python -m benchmarks.bench_snapshot [--files 300000] [--dir /tmp/pydelta-bench-snapshot]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import uuid

from benchmarks.common import report, timed

SCHEMA = json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "value", "type": "double", "nullable": True, "metadata": {}},
    {"name": "part", "type": "string", "nullable": True, "metadata": {}},
]})


def _add(i: int) -> dict:
    part = f"p{i % 100}"
    stats = {"numRecords": 1000, "minValues": {"id": i * 1000, "value": 0.5},
             "maxValues": {"id": i * 1000 + 999, "value": 99.5}, "nullCount": {"id": 0, "value": 0}}
    return {"add": {"path": f"part={part}/part-{i:06d}-{uuid.UUID(int=i)}.c000.snappy.parquet",
                    "partitionValues": {"part": part}, "size": 40_000 + i % 1000,
                    "modificationTime": 1_700_000_000_000 + i, "dataChange": True,
                    "stats": json.dumps(stats, separators=(",", ":"))}}


def generate(root: str, n_files: int, n_commits: int = 100, checkpoint: bool = True) -> None:
    """Version 0 adds `n_files` files (checkpointed when `checkpoint`); then `n_commits` commits
    of 10 adds and one remove each."""
    import pydelta
    from pydelta.log.checkpoint_writer import write_checkpoint

    shutil.rmtree(root, ignore_errors=True)
    log = os.path.join(root, "_delta_log")
    os.makedirs(log)
    with open(os.path.join(log, f"{0:020d}.json"), "w") as f:
        f.write(json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}) + "\n")
        f.write(json.dumps({"metaData": {"id": str(uuid.uuid4()), "format": {"provider": "parquet", "options": {}},
                                         "schemaString": SCHEMA, "partitionColumns": ["part"], "configuration": {},
                                         "createdTime": 1_700_000_000_000}}) + "\n")
        for i in range(n_files):
            f.write(json.dumps(_add(i)) + "\n")
    if checkpoint:
        write_checkpoint(pydelta.load_snapshot(root))
    next_id = n_files
    for v in range(1, n_commits + 1):
        with open(os.path.join(log, f"{v:020d}.json"), "w") as f:
            f.write(json.dumps({"commitInfo": {"timestamp": 1_700_000_000_000 + v, "operation": "WRITE"}}) + "\n")
            for _ in range(10):
                f.write(json.dumps(_add(next_id)) + "\n")
                next_id += 1
            gone = _add(v)["add"]
            f.write(json.dumps({"remove": {"path": gone["path"], "deletionTimestamp": 1_700_000_000_000 + v,
                                           "dataChange": True}}) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=300_000)
    ap.add_argument("--dir", default="/tmp/pydelta-bench-snapshot")
    args = ap.parse_args()
    root = os.path.join(args.dir, f"t{args.files}")
    if not os.path.isdir(os.path.join(root, "_delta_log")):
        generate(root, args.files)

    import deltalake

    import pydelta

    def ours():
        snap = pydelta.load_snapshot(root)
        files = snap.files()
        assert files.num_rows == args.files + 1000 - 100

    def theirs():
        dt = deltalake.DeltaTable(root)
        n = len(dt.file_uris())
        assert n == args.files + 1000 - 100

    t_ours = timed(ours, repeats=5)
    t_theirs = timed(theirs, repeats=5)
    report("snapshot_load_300k_files", t_ours, t_theirs, "deltalake", files=args.files, commits_after_checkpoint=100)


if __name__ == "__main__":
    main()
