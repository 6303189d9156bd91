"""`pydelta` command line: metadata work on a table without starting Spark.

    pydelta describe PATH [--version N | --timestamp TS]
    pydelta history PATH [--limit N]
    pydelta files PATH [--version N]
    pydelta checkpoint PATH [--parts N] [--v2]
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone

from pydelta.errors import DeltaError


def _ts(ms: int | None) -> str | None:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat() if ms is not None else None


def _snapshot(args: argparse.Namespace):
    from pydelta.log.snapshot import load_snapshot

    return load_snapshot(args.path, version=getattr(args, "version", None), timestamp=getattr(args, "timestamp", None))


def cmd_describe(args: argparse.Namespace) -> dict:
    snap = _snapshot(args)
    files = snap.files()
    return {
        "path": snap.table_root,
        "version": snap.version,
        "timestamp": _ts(snap.timestamp),
        "id": snap.metadata.id,
        "partitionColumns": snap.partition_columns,
        "schema": json.loads(snap.metadata.schema_string),
        "configuration": snap.configuration,
        "protocol": snap.protocol.to_dict(),
        "numFiles": files.num_rows,
        "sizeInBytes": int(sum(files.column("size").to_pylist())) if files.num_rows else 0,
        "numRecords": int(sum(x or 0 for x in files.column("num_records").to_pylist())),
    }


def cmd_history(args: argparse.Namespace) -> list:
    from pydelta.log.history import history

    return [{"version": e.version, "timestamp": _ts(e.timestamp), **{k: v for k, v in e.commit_info.items() if k != "timestamp"}}
            for e in history(_snapshot(args), args.limit)]


def cmd_files(args: argparse.Namespace) -> list:
    files = _snapshot(args).files().select(["path", "size", "partition_values", "num_records"])
    return [{**r, "partition_values": dict(r["partition_values"] or [])} for r in files.to_pylist()]


def cmd_checkpoint(args: argparse.Namespace) -> dict:
    from pydelta.log.checkpoint_writer import write_checkpoint

    snap = _snapshot(args)
    write_checkpoint(snap, parts=args.parts, v2=True if args.v2 else None)
    return {"checkpointed_version": snap.version, "parts": args.parts or 1, "v2": bool(args.v2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="pydelta", description="Inspect Delta tables without Spark.")
    sub = ap.add_subparsers(dest="command", required=True)
    for name, fn in (("describe", cmd_describe), ("history", cmd_history), ("files", cmd_files), ("checkpoint", cmd_checkpoint)):
        p = sub.add_parser(name)
        p.add_argument("path")
        if name in ("describe", "files"):
            p.add_argument("--version", type=int)
            p.add_argument("--timestamp")
        if name == "history":
            p.add_argument("--limit", type=int)
        if name == "checkpoint":
            p.add_argument("--parts", type=int, help="write a multi-part checkpoint with this many parts")
            p.add_argument("--v2", action="store_true", help="write a V2 checkpoint (table needs v2Checkpoint)")
        p.set_defaults(fn=fn)
    args = ap.parse_args(argv)
    try:
        out = args.fn(args)
    except DeltaError as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    json.dump(out, sys.stdout, indent=2, default=str)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
