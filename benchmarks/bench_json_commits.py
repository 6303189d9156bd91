"""Snapshot load from JSON commits only (no checkpoint): pydelta vs deltalake.

A 100-column table partitioned by an int column; 5 commits, three of which each
add `--files` files with full stats (numRecords/minValues/maxValues/nullCount
on `--stats-columns` columns). Also times a 1-action commit: parsing it, and
`Snapshot.update()` on the loaded table after it.

Usage: python -m benchmarks.bench_json_commits [--files 100000] [--stats-columns 100] [--dir /tmp/pydelta-bench-json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
import uuid

from benchmarks.common import report, timed

N_COLUMNS = 100
N_PARTS = 50


def _schema() -> str:
    fields = [{"name": "part", "type": "integer", "nullable": True, "metadata": {}}]
    fields += [{"name": f"c{i:02d}", "type": "long", "nullable": True, "metadata": {}} for i in range(N_COLUMNS - 1)]
    return json.dumps({"type": "struct", "fields": fields})


def _stats_template(n_stats: int) -> str:
    cols = [f"c{i:02d}" for i in range(min(n_stats, N_COLUMNS - 1))]
    mins = ",".join(f'"{c}":{{lo{j}}}' for j, c in enumerate(cols))
    maxs = ",".join(f'"{c}":{{hi{j}}}' for j, c in enumerate(cols))
    nulls = ",".join(f'"{c}":0' for c in cols)
    body = ('{{"numRecords":1000,"minValues":{{' + mins + '}},"maxValues":{{' + maxs
            + '}},"nullCount":{{' + nulls + "}}}}")
    return body


def _add_lines(start: int, count: int, n_stats: int) -> str:
    template = _stats_template(n_stats)
    n = min(n_stats, N_COLUMNS - 1)
    out = []
    for i in range(start, start + count):
        base = i * 1000
        stats = template.format(**{f"lo{j}": base + j for j in range(n)},
                                **{f"hi{j}": base + j + 999 for j in range(n)})
        part = i % N_PARTS
        out.append(json.dumps({"add": {
            "path": f"part={part}/part-{i:07d}-{uuid.UUID(int=i)}.c000.snappy.parquet",
            "partitionValues": {"part": str(part)}, "size": 40_000 + i % 1000,
            "modificationTime": 1_700_000_000_000 + i, "dataChange": True, "stats": stats,
        }}, separators=(",", ":")))
    return "\n".join(out) + "\n"


def _info(v: int, op: str) -> str:
    return json.dumps({"commitInfo": {"timestamp": 1_700_000_000_000 + v, "operation": op,
                                      "operationParameters": {"mode": "Append", "partitionBy": "[\"part\"]"},
                                      "isBlindAppend": True}}) + "\n"


def generate(root: str, n_files: int, n_stats: int) -> None:
    shutil.rmtree(root, ignore_errors=True)
    log = os.path.join(root, "_delta_log")
    os.makedirs(log)
    with open(os.path.join(log, f"{0:020d}.json"), "w") as f:
        f.write(_info(0, "CREATE TABLE"))
        f.write(json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}) + "\n")
        f.write(json.dumps({"metaData": {"id": str(uuid.uuid4()), "format": {"provider": "parquet", "options": {}},
                                         "schemaString": _schema(), "partitionColumns": ["part"], "configuration": {},
                                         "createdTime": 1_700_000_000_000}}) + "\n")
    next_id = 0
    for v in (1, 2, 3):
        with open(os.path.join(log, f"{v:020d}.json"), "w") as f:
            f.write(_info(v, "WRITE"))
            f.write(_add_lines(next_id, n_files, n_stats))
        next_id += n_files
    with open(os.path.join(log, f"{4:020d}.json"), "w") as f:  # a small delete-ish commit
        f.write(_info(4, "DELETE"))
        for i in range(10):
            path = f"part={i % N_PARTS}/part-{i:07d}-{uuid.UUID(int=i)}.c000.snappy.parquet"
            f.write(json.dumps({"remove": {"path": path, "deletionTimestamp": 1_700_000_000_000 + 4,
                                           "dataChange": True, "partitionValues": {"part": str(i % N_PARTS)}}}) + "\n")


def _small_commit(root: str, version: int) -> None:
    path = os.path.join(root, "_delta_log", f"{version:020d}.json")
    i = 10_000_000 + version
    with open(path, "w") as f:
        f.write(_add_lines(i, 1, 100))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--stats-columns", type=int, default=100)
    ap.add_argument("--dir", default="/tmp/pydelta-bench-json")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    root = os.path.join(args.dir, f"t{args.files}_s{args.stats_columns}")
    if not os.path.isfile(os.path.join(root, "_delta_log", f"{4:020d}.json")):
        t = time.perf_counter()
        generate(root, args.files, args.stats_columns)
        print(f"generated {root} in {time.perf_counter() - t:.1f}s")
    log_dir = os.path.join(root, "_delta_log")
    log_bytes = sum(os.path.getsize(os.path.join(log_dir, f)) for f in os.listdir(log_dir))
    expected = 3 * args.files - 10

    import deltalake

    import pydelta

    def ours():
        snap = pydelta.load_snapshot(root, version=4)
        files = snap.files()
        assert files.num_rows == expected, files.num_rows

    def theirs():
        dt = deltalake.DeltaTable(root, version=4)
        n = len(dt.file_uris())
        assert n == expected, n

    t_ours = timed(ours, repeats=args.repeats)
    t_theirs = timed(theirs, repeats=args.repeats)
    report("snapshot_load_json_commits", t_ours, t_theirs, "deltalake", files_per_commit=args.files,
           stats_columns=args.stats_columns, log_mb=round(log_bytes / 1e6, 1))

    # One small commit on top of the loaded table: Snapshot.update() and a fresh load of a 1-action file.
    from pydelta.log import replay

    parse_commit = getattr(replay, "parse_commit", replay.parse_actions)

    snap = pydelta.load_snapshot(root, version=4)
    update_times = []
    for k in range(5):
        version = 5 + k
        _small_commit(root, version)
        t = time.perf_counter()
        snap = snap.update()
        update_times.append(time.perf_counter() - t)
        assert snap.version == version and snap.num_files == expected + k + 1
    small_path = os.path.join(root, "_delta_log", f"{5:020d}.json")
    with open(small_path, "rb") as f:
        data = f.read()
    parse_times = []
    for _ in range(200):
        t = time.perf_counter()
        parse_commit(data, 5, small_path)
        parse_times.append(time.perf_counter() - t)
    for k in range(5):
        os.remove(os.path.join(root, "_delta_log", f"{5 + k:020d}.json"))
    update_times.sort()
    parse_times.sort()
    print(json.dumps({"benchmark": "snapshot_update_one_small_commit", "median_s": round(update_times[2], 5),
                      "max_s": round(update_times[-1], 5), "table_files": expected,
                      "parse_1_action_median_s": round(parse_times[100], 6)}))


if __name__ == "__main__":
    main()
