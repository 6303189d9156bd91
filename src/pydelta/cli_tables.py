"""Human-readable output of the `pydelta` CLI: rich tables of what each command returns.

The commands build plain JSON-able data (pydelta.cli); this module only draws it, so the
JSON for scripts and the tables for people always show the same facts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table


def _size(n: int | None) -> str:
    if n is None:
        return ""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=str, separators=(",", ":")) if value else ""
    return str(value)


def _fields(schema: dict[str, Any]) -> str:
    return ", ".join(f"{f['name']} {_text(f['type'])}" + ("" if f.get("nullable", True) else " NOT NULL")
                     for f in schema.get("fields", []))


def _describe(out: dict[str, Any]) -> list[Table]:
    t = Table(title=f"Delta table {out['path']}", show_header=False)
    t.add_column("", style="bold")
    t.add_column("")
    proto = out["protocol"]
    rows = [
        ("version", out["version"]),
        ("timestamp", out["timestamp"]),
        ("id", out["id"]),
        ("schema", _fields(out["schema"])),
        ("partition columns", ", ".join(out["partitionColumns"]) or "(none)"),
        ("protocol", f"reader {proto.get('minReaderVersion')}, writer {proto.get('minWriterVersion')}"),
        ("table features", ", ".join(out["tableFeatures"]) or "(none)"),
        ("files", f"{out['numFiles']} ({out['numFilesWithDeletionVectors']} with deletion vectors)"),
        ("size", _size(out["sizeInBytes"])),
        ("rows", f"{out['numRecords']} live ({out['numDeletedRecords']} deleted by deletion vectors)"),
    ]
    if "icebergMetadataLocation" in out:
        rows.append(("iceberg (UniForm)", f"Delta version {out['icebergConvertedVersion']} at "
                                          f"{out['icebergMetadataLocation']}"))
    for key, value in sorted(out["configuration"].items()):
        rows.append((key, value))
    for key, value in rows:
        t.add_row(key, _text(value))
    return [t]


def _history(out: list[dict[str, Any]]) -> list[Table]:
    t = Table(title="History (newest first)")
    for col in ("version", "timestamp", "operation", "parameters", "metrics"):
        t.add_column(col, overflow="fold")
    for e in out:
        t.add_row(str(e["version"]), _text(e.get("timestamp")), _text(e.get("operation")),
                  _text(e.get("operationParameters")), _text(e.get("operationMetrics")))
    return [t]


def _files(out: list[dict[str, Any]]) -> list[Table]:
    t = Table(title=f"{len(out)} live data files")
    t.add_column("path", overflow="fold")
    t.add_column("partition")
    for col in ("size", "records", "deleted (DV)", "live"):
        t.add_column(col, justify="right")
    for f in out:
        part = ", ".join(f"{k}={v}" for k, v in f["partition_values"].items())
        t.add_row(f["path"], part, _size(f["size"]), _text(f["num_records"]), str(f["deleted_records"]),
                  _text(f["live_records"]))
    return [t]


def _vacuum(out: dict[str, Any]) -> list[Table]:
    t = Table(title=f"VACUUM DRY RUN: {out['numFilesToDelete']} files ({_size(out['sizeOfDataToDelete'])}) "
                    f"modified before {out['deleteBefore']}")
    t.add_column("path", overflow="fold")
    t.add_column("size", justify="right")
    t.add_column("modified")
    for f in out["files"]:
        t.add_row(f["path"], _size(f["size"]), f["modified"])
    for d in out["directories"]:
        t.add_row(d + "/", "", "(empty directory)")
    return [t]


def _checkpoint(out: dict[str, Any]) -> list[Table]:
    t = Table(title="Checkpoint written", show_header=False)
    t.add_column("", style="bold")
    t.add_column("")
    for key, value in out.items():
        t.add_row(key, _text(value))
    return [t]


RENDERERS: dict[str, Callable[[Any], list[Table]]] = {
    "describe": _describe,
    "history": _history,
    "files": _files,
    "vacuum": _vacuum,
    "checkpoint": _checkpoint,
}


def render(command: str, out: Any) -> None:
    """Print `out` (what `command` returned) as tables on stdout."""
    console = Console()
    for table in RENDERERS[command](out):
        console.print(table)
