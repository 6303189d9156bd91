"""`pydelta` command line: metadata work on a table without starting Spark.

    pydelta describe PATH [--version N | --timestamp TS]
    pydelta history PATH [--limit N]
    pydelta files PATH [--version N | --timestamp TS]
    pydelta vacuum PATH --dry-run [--retention-hours H]
    pydelta checkpoint PATH [--parts N] [--v2]

On a terminal every command prints human-readable tables; piped (or with
`--json`) it prints JSON, for scripts. `--table` forces tables. Errors print
one `error: ...` line on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pydelta.errors import DeltaError

DESCRIPTION = (
    "Inspect and maintain Delta tables from the transaction log alone (no Spark, no JVM): "
    "describe, history, files, vacuum --dry-run, checkpoint. Tables on a terminal, JSON when piped or with --json."
)


def _ts(ms: int | None) -> str | None:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat() if ms is not None else None


def _snapshot(args: argparse.Namespace):
    from pydelta.log.snapshot import load_snapshot

    return load_snapshot(args.path, version=getattr(args, "version", None), timestamp=getattr(args, "timestamp", None))


def _deleted_rows(dvs: list[dict | None]) -> list[int]:
    """Rows each file's deletion vector (a `deletion_vector` column value) marks deleted (0 without one)."""
    return [int(dv["cardinality"] or 0) if dv else 0 for dv in dvs]


def _features(protocol: Any) -> list[str]:
    """Every table feature the protocol enables, legacy versions' implied features included."""
    return sorted(protocol.effective_reader_features | protocol.effective_writer_features)


def cmd_describe(args: argparse.Namespace) -> dict:
    snap = _snapshot(args)
    files = snap.files()
    physical = int(sum(x or 0 for x in files.column("num_records").to_pylist()))
    dvs = files.column("deletion_vector").to_pylist()
    deleted = sum(_deleted_rows(dvs))
    return {
        "path": snap.table_root,
        "version": snap.version,
        "timestamp": _ts(snap.timestamp),
        "id": snap.metadata.id,
        "partitionColumns": snap.partition_columns,
        "schema": json.loads(snap.metadata.schema_string),
        "configuration": snap.configuration,
        "protocol": snap.protocol.to_dict(),
        "tableFeatures": _features(snap.protocol),
        "numFiles": files.num_rows,
        "sizeInBytes": snap.size_in_bytes,
        "numRecords": physical - deleted,  # live rows: what a query of the table returns
        "numDeletedRecords": deleted,  # rows hidden by deletion vectors, still in the files
        "numFilesWithDeletionVectors": sum(1 for dv in dvs if dv),
        **_uniform(snap),
    }


def _uniform(snap: Any) -> dict[str, Any]:
    """Where a UniForm table's Iceberg metadata is and which Delta version it stands at: a table
    at a path has no catalog to say so (the Iceberg readers take the metadata file)."""
    from pydelta.protocol.iceberg_compat import uniform_iceberg_enabled

    if not uniform_iceberg_enabled(snap.configuration):
        return {}
    from pydelta.uniform.iceberg_converter import converted_version, latest_metadata_location

    location = latest_metadata_location(snap.storage, snap.table_root)
    return {"icebergMetadataLocation": location,
            "icebergConvertedVersion": converted_version(snap.storage, location) if location else None}


def cmd_history(args: argparse.Namespace) -> list:
    from pydelta.log.history import history

    return [{"version": e.version, "timestamp": _ts(e.timestamp),
             **{k: v for k, v in e.commit_info.items() if k != "timestamp"}}
            for e in history(_snapshot(args), args.limit)]


def cmd_files(args: argparse.Namespace) -> list:
    files = _snapshot(args).files()
    rows = files.select(["path", "size", "partition_values", "num_records"]).to_pylist()
    out = []
    for row, deleted in zip(rows, _deleted_rows(files.column("deletion_vector").to_pylist()), strict=True):
        records = row["num_records"]
        out.append({**row, "partition_values": dict(row["partition_values"] or []),
                    "deleted_records": deleted,  # the file's deletion vector cardinality
                    "live_records": None if records is None else records - deleted})
    return out


def cmd_vacuum(args: argparse.Namespace) -> dict:
    from pydelta.log.vacuum_plan import plan_vacuum

    snap = _snapshot(args)
    if not args.dry_run:
        raise DeltaError(
            f"the CLI only plans VACUUM of {snap.table_root} (add --dry-run); delete with Spark: "
            "DeltaTable.forPath(spark, path).vacuum() or VACUUM delta.`path`"
        )
    plan = plan_vacuum(snap, args.retention_hours, check_enabled=not args.no_retention_check)
    return {
        "path": snap.table_root,
        "deleteBefore": _ts(plan.delete_before_ms),
        "numFilesToDelete": len(plan.files),
        "sizeOfDataToDelete": plan.size_to_delete,
        "files": [{"path": f.path, "size": f.size, "modified": _ts(f.modification_time)} for f in plan.files],
        "directories": list(plan.dirs),
    }


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


def _add_output_options(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--json", dest="output", action="store_const", const="json",
                   help="print JSON (the default when stdout is not a terminal)")
    g.add_argument("--table", dest="output", action="store_const", const="table",
                   help="print human-readable tables (the default on a terminal)")


COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], Any], str, str]] = {
    "describe": (cmd_describe, "show schema, protocol, features, configuration and size",
                 "Show the table's version, schema, partition columns, configuration, protocol and "
                 "table features, and file/byte totals; numRecords counts live rows (rows that "
                 "deletion vectors mark deleted are in numDeletedRecords)."),
    "history": (cmd_history, "list commits, newest first",
                "Show one entry per commit (version, timestamp and the commitInfo fields), "
                "newest first, for commits whose log file still exists."),
    "files": (cmd_files, "list a snapshot's live data files",
              "Show the data files live in a snapshot: path, size, partition values, records in "
              "the file, records its deletion vector deletes, and live records."),
    "vacuum": (cmd_vacuum, "list what VACUUM would delete (--dry-run)",
               "With --dry-run, list the files VACUUM would delete (untracked files and expired "
               "tombstones older than the retention), as delta-spark's VACUUM ... DRY RUN. "
               "Deleting needs Spark (DeltaTable.vacuum)."),
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
        _add_output_options(p)
        if name in ("describe", "files"):
            _add_version_options(p)
        if name == "history":
            p.add_argument("--limit", type=_non_negative_int, metavar="N",
                           help="show at most N commits, newest first (default: all)")
        if name == "vacuum":
            p.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
            p.add_argument("--retention-hours", type=float, metavar="H",
                           help="retention in hours (default: the table's delta.deletedFileRetentionDuration, 7 days)")
            p.add_argument("--no-retention-check", action="store_true",
                           help="allow a retention shorter than the table's (as "
                                "spark.databricks.delta.retentionDurationCheck.enabled=false)")
        if name == "checkpoint":
            p.add_argument("--parts", type=int, metavar="N",
                           help="write a multi-part checkpoint with N parts, or N sidecar files for a V2 checkpoint "
                                "(default: one file)")
            p.add_argument("--v2", action="store_true",
                           help="write a V2 checkpoint; the table needs the v2Checkpoint feature "
                                "(default: V2 only if the table's delta.checkpointPolicy is v2)")
        p.set_defaults(fn=fn)
    return ap


def _print(command: str, out: Any, output: str | None) -> None:
    """JSON for scripts, rich tables on a terminal (see cli_tables)."""
    if (output or ("table" if sys.stdout.isatty() else "json")) == "json":
        json.dump(out, sys.stdout, indent=2, default=str)
        print()
    else:
        from pydelta.cli_tables import render

        render(command, out)
    sys.stdout.flush()  # inside the caller's try, so a closed pipe is caught there


class _WithoutPandas:
    """An import hook that makes `import pandas` fail, for the CLI's own process only.

    pyarrow imports pandas (0.2-0.27 s) on the first Arrow array built from Python objects
    when pandas is installed, as it is beside PySpark; the CLI never converts to or from
    pandas, so told that pandas is missing, pyarrow skips it and the command starts sooner."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError("the pydelta command line does not use pandas", name=name)
        return None


def console() -> int:
    """The `pydelta` command's entry point: `main` in a process that never loads pandas."""
    if "pandas" not in sys.modules:
        sys.meta_path.insert(0, _WithoutPandas())
    return main()


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit status (0 ok, 1 stdout closed early, 2 error)."""
    args = build_parser().parse_args(argv)
    try:
        out = args.fn(args)
    except (DeltaError, OSError) as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    try:
        _print(args.command, out, args.output)
    except BrokenPipeError:
        # The reader went away (e.g. `pydelta files PATH | head -1`). The idiom from the Python
        # docs (library/signal.html, "Note on SIGPIPE"): point stdout at devnull so the final
        # flush at exit does not raise again, and exit 1 without a traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(console())
