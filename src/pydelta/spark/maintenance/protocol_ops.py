"""Explicit protocol changes: `upgradeTableProtocol(reader, writer)` and `addFeatureSupport(name)`.

Both commit a protocol action only (operation "UPGRADE PROTOCOL") through
`OptimisticTransaction.update_protocol`, which refuses anything that would drop a feature.

* upgradeTableProtocol: the versions may only go up; lower requested versions than the
  table's are kept at the table's (a no-op when both are lower, as in delta-spark). Below table features (writer < 7)
  the result is that legacy protocol; at writer 7 (and reader 3) every feature the table
  supported, implicitly through its old versions or explicitly, is listed.
* addFeatureSupport: the feature (and the features it requires) is added explicitly; a
  table without table features moves to writer 7, and to reader 3 as well when the
  feature is a reader-writer one, as delta-spark does. Unknown names are refused.
"""

from __future__ import annotations

from typing import Any

from pydelta.errors import DeltaIllegalArgumentError, DeltaProtocolError
from pydelta.protocol.actions import Protocol
from pydelta.protocol.features import TABLE_FEATURES_READER, TABLE_FEATURES_WRITER, feature_spec
from pydelta.txn import protocol_upgrade as pu
from pydelta.txn.commit_info import Operation


def upgraded_protocol(current: Protocol, reader: int, writer: int) -> Protocol:
    """The protocol `upgradeTableProtocol(reader, writer)` produces from `current`."""
    for name, value, limit in (("reader", reader, TABLE_FEATURES_READER), ("writer", writer, TABLE_FEATURES_WRITER)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
            raise DeltaIllegalArgumentError(
                f"The {name} version must be an integer between 1 and {limit}, got {value!r}")
    if reader >= TABLE_FEATURES_READER and writer < TABLE_FEATURES_WRITER:
        raise DeltaProtocolError(
            f"Reader version {reader} (table features) requires writer version {TABLE_FEATURES_WRITER}, got {writer}"
        )
    # delta-spark merges the requested versions into the current protocol: asking for lower
    # versions than the table has keeps the current ones (a no-op, not an error).
    reader = max(reader, current.min_reader_version)
    writer = max(writer, current.min_writer_version)
    if reader >= TABLE_FEATURES_READER and writer < TABLE_FEATURES_WRITER:
        writer = TABLE_FEATURES_WRITER  # a table-features reader keeps its table-features writer
    if writer < TABLE_FEATURES_WRITER:
        return pu.legacy_protocol(reader, writer)
    names = pu.all_features(current)
    needed_reader = pu.min_versions(names, current)[0]
    return pu.features_protocol(max(reader, needed_reader), names, current)


def protocol_with_feature(current: Protocol, feature: str) -> Protocol:
    """`current` plus `feature` (and what it requires), as explicit table features."""
    requested = pu.requested_features({f"{pu.FEATURE_PROP_PREFIX}{feature}": "supported"})  # validates the name
    names = set(pu.all_features(current))
    todo = list(requested)
    while todo:  # the feature and everything it requires
        name = todo.pop()
        names.add(name)
        todo.extend(r for r in feature_spec(name).requires if r not in names)
    reader = current.min_reader_version
    if any(feature_spec(n).reader_writer for n in names - set(pu.all_features(current))) or (
        reader >= TABLE_FEATURES_READER
    ):
        reader = TABLE_FEATURES_READER
    elif any(feature_spec(n).reader_writer for n in names):
        # a legacy reader-writer feature (columnMapping at reader 2) keeps its legacy reader version
        reader = max(reader, pu.min_versions(names, current)[0])
    return pu.features_protocol(reader, names, current)


def _commit_protocol(table: Any, compute: Any) -> int | None:
    from pydelta.spark.base.transactions import open_transaction

    snapshot = table.snapshot()
    new = compute(snapshot.protocol)
    if new == snapshot.protocol:
        return None  # delta-spark: "Table ... is already at protocol version ..."
    txn = open_transaction(table._spark, snapshot)
    txn.update_protocol(new)
    committed = txn.protocol
    assert committed is not None
    return txn.commit([], Operation.upgrade_protocol(committed))


def upgrade_table_protocol(table: Any, readerVersion: int, writerVersion: int) -> None:
    _commit_protocol(table, lambda current: upgraded_protocol(current, readerVersion, writerVersion))


def add_feature_support(table: Any, featureName: str) -> None:
    if not isinstance(featureName, str) or not featureName.strip():
        raise DeltaIllegalArgumentError(f"a table feature name is required, got {featureName!r}")

    def compute(current: Protocol) -> Protocol:
        if featureName in pu.all_features(current) or featureName.lower() in {
            n.lower() for n in pu.all_features(current)
        }:
            return current
        return protocol_with_feature(current, featureName)

    _commit_protocol(table, compute)
