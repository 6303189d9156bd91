"""GENERATE symlink_format_manifest (delta-spark's GenerateSymlinkManifest, full mode).

Writes `<table>/_symlink_format_manifest/[<partition dirs>/]manifest`: one file per
partition listing, one per line, the absolute paths (`file:/...`) of the partition's live
data files, for Presto/Trino/Athena/Hive external tables. Manifests of partitions that no
longer exist are deleted. Tables with column mapping or with deletion vectors in use are
refused, as delta-spark refuses them (external readers would return wrong data).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from pydelta.errors import DeltaIllegalArgumentError, ManifestGenerationError
from pydelta.log.replay import canonical_path
from pydelta.log.snapshot import Snapshot
from pydelta.protocol.partition_values import hive_partition_path
from pydelta.protocol.schema import column_mapping_mode
from pydelta.spark.base.transactions import PostCommitHook

MANIFEST_LOCATION = "_symlink_format_manifest"
MODES = ("symlink_format_manifest",)


def generate(table: Any, mode: str) -> None:
    """DeltaTable.generate(mode): only "symlink_format_manifest" exists (case-insensitive)."""
    if not isinstance(mode, str) or mode.strip().lower() not in MODES:
        raise DeltaIllegalArgumentError(
            f"Specified mode '{mode}' is not supported. Supported modes are: {', '.join(MODES)}"
        )
    generate_full_manifest(table.snapshot())


def _check_supported(snapshot: Snapshot) -> None:
    if column_mapping_mode(snapshot.configuration) != "none":
        raise ManifestGenerationError(
            "Manifest generation is not supported for tables that leverage column mapping, as external "
            "readers cannot read these Delta tables. See Delta documentation for more details."
        )
    dvs = snapshot.files().column("deletion_vector")
    if dvs.null_count < len(dvs):
        raise ManifestGenerationError(
            "The 'GENERATE symlink_format_manifest' command is not supported on table versions with deletion "
            "vectors. In order to produce a version of the table without deletion vectors, run "
            "'REORG TABLE table APPLY (PURGE)'. Then re-run the 'GENERATE' command. Make sure that no concurrent "
            "transactions are adding deletion vectors again between REORG and GENERATE. If you need to generate "
            "manifests regularly, or you cannot prevent concurrent transactions, consider disabling deletion "
            "vectors on this table using 'ALTER TABLE table SET TBLPROPERTIES (delta.enableDeletionVectors = false)'."
        )


def _write(path: str, lines: list[str]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = os.path.join(os.path.dirname(path), f".manifest.{uuid.uuid4().hex}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
    os.replace(tmp, path)


def manifest_contents(snapshot: Snapshot) -> dict[str, list[str]]:
    """Relative partition directory ('' when unpartitioned) -> absolute data file URIs."""
    root = snapshot.table_root
    partition_columns = snapshot.partition_columns
    out: dict[str, list[str]] = {}
    files = snapshot.files()
    for path, pv in zip(files.column("path").to_pylist(), files.column("partition_values").to_pylist(), strict=True):
        rel = hive_partition_path(dict(pv or []), partition_columns) if partition_columns else ""
        out.setdefault(rel, []).append("file:" + canonical_path(path, root))
    if not partition_columns and not out:
        out[""] = []  # an empty table still gets an (empty) manifest
    for lines in out.values():
        lines.sort()
    return out


def _existing_partitions(manifest_root: str) -> set[str]:
    found = set()
    for dirpath, _dirs, names in os.walk(manifest_root):
        if "manifest" in names:
            rel = os.path.relpath(dirpath, manifest_root)
            if rel != ".":
                found.add(rel.replace(os.sep, "/"))
    return found


def generate_full_manifest(snapshot: Snapshot) -> set[str]:
    """Write every partition's manifest and delete stale ones; returns the partitions written."""
    _check_supported(snapshot)
    manifest_root = os.path.join(snapshot.table_root, MANIFEST_LOCATION)
    contents = manifest_contents(snapshot)
    for rel, lines in contents.items():
        _write(os.path.join(manifest_root, rel, "manifest") if rel else os.path.join(manifest_root, "manifest"), lines)
    written = {rel for rel in contents if rel}
    for rel in _existing_partitions(manifest_root) - written:
        shutil.rmtree(os.path.join(manifest_root, rel), ignore_errors=True)
        # drop now-empty parent directories of a multi-level partition path
        parent = os.path.dirname(os.path.join(manifest_root, rel))
        while parent.startswith(manifest_root) and parent != manifest_root:
            try:
                os.rmdir(parent)
            except OSError:
                break
            parent = os.path.dirname(parent)
    if snapshot.partition_columns:
        stale_root = os.path.join(manifest_root, "manifest")
        if os.path.exists(stale_root):
            os.unlink(stale_root)
    return written


ENABLED_PROPERTY = "delta.compatibility.symlinkFormatManifest.enabled"
HOOK_NAME = "Generate Symlink Format Manifest"


def after_commit(spark: Any, txn: Any, version: int, actions: Sequence[Mapping[str, Any]]) -> None:
    """The post-commit hook of a table with `delta.compatibility.symlinkFormatManifest.enabled`:
    a commit that adds or removes files brings the manifests up to date (delta-spark's
    GenerateSymlinkManifest; pydelta rewrites them all, delta-spark those of the touched partitions)."""
    configuration = (txn.metadata.configuration if txn.metadata is not None else {}) or {}
    if str(configuration.get(ENABLED_PROPERTY, "false")).strip().lower() != "true":
        return
    if not any("add" in a or "remove" in a for a in actions):
        return
    generate_full_manifest(txn.post_commit_snapshot())


#: The post-commit hook (spark/session.py lists it).
SYMLINK_MANIFEST = PostCommitHook(HOOK_NAME, after_commit)
