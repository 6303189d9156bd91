"""`pydelta` command line: metadata work on a table without starting Spark.

    pydelta describe PATH [--version N | --timestamp TS]
    pydelta history PATH [--limit N]
    pydelta files PATH [--version N | --timestamp TS]
    pydelta checkpoint PATH [--parts N] [--v2]

Every command prints JSON on stdout. Errors print one `error: ...` line on
stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime, timezone
from typing import Any, Callable

from pydelta.errors import DeltaError

DESCRIPTION = (
    "Inspect and maintain Delta tables from the transaction log alone (no Spark, no JVM): "
    "describe, history, files, checkpoint. Output is JSON."
)


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


def _non_negative_int(text: str) -> int:
    """argparse type for --limit: a negative limit would silently drop the oldest entries."""
    n = int(text)
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {n}")
    return n


def _add_version_options(p: argparse.ArgumentParser) -> None:
    """--version / --timestamp (mutually exclusive) for commands that read one snapshot."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--version", type=int, metavar="N", help="read the table as of this version (default: latest)")
    g.add_argument("--timestamp", metavar="TS",
                   help="read the table as of this ISO date/time, e.g. 2024-01-31 or 2024-01-31T12:00:00Z; "
                        "without a zone it is local time (default: latest)")


COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], Any], str, str]] = {
    "describe": (cmd_describe, "show schema, protocol, configuration and size",
                 "Print the table's version, schema, partition columns, configuration, protocol "
                 "and file/byte/record totals as JSON."),
    "history": (cmd_history, "list commits, newest first",
                "Print one JSON object per commit (version, timestamp and the commitInfo fields), "
                "newest first, for commits whose log file still exists."),
    "files": (cmd_files, "list a snapshot's live data files",
              "Print the data files live in a snapshot (path, size, partition values, record count) as JSON."),
    "checkpoint": (cmd_checkpoint, "checkpoint the latest version (writes to _delta_log)",
                   "Write a checkpoint for the table's latest version into _delta_log and update "
                   "_last_checkpoint. This is the only command that writes."),
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser: one subcommand per entry of COMMANDS."""
    ap = argparse.ArgumentParser(prog="pydelta", description=DESCRIPTION)
    sub = ap.add_subparsers(dest="command", required=True)
    for name, (fn, short, long) in COMMANDS.items():
        p = sub.add_parser(name, help=short, description=long)
        p.add_argument("path", help="table root directory (the one that contains _delta_log)")
        if name in ("describe", "files"):
            _add_version_options(p)
        if name == "history":
            p.add_argument("--limit", type=_non_negative_int, metavar="N",
                           help="show at most N commits, newest first (default: all)")
        if name == "checkpoint":
            p.add_argument("--parts", type=int, metavar="N",
                           help="write a multi-part checkpoint with N parts, or N sidecar files for a V2 checkpoint "
                                "(default: one file)")
            p.add_argument("--v2", action="store_true",
                           help="write a V2 checkpoint; the table needs the v2Checkpoint feature "
                                "(default: V2 only if the table's delta.checkpointPolicy is v2)")
        p.set_defaults(fn=fn)
    return ap


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit status (0 ok, 1 stdout closed early, 2 error)."""
    args = build_parser().parse_args(argv)
    try:
        out = args.fn(args)
    except (DeltaError, OSError) as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    try:
        json.dump(out, sys.stdout, indent=2, default=str)
        print()
        sys.stdout.flush()  # inside the try, so a closed pipe is caught here and not at interpreter exit
    except BrokenPipeError:
        # The reader went away (e.g. `pydelta files PATH | head -1`). The idiom from the Python
        # docs (library/signal.html, "Note on SIGPIPE"): point stdout at devnull so the final
        # flush at exit does not raise again, and exit 1 without a traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
