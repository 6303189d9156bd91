"""Table features: the one registry of what each feature is and what pydelta does with it.

A client may read a table only if it implements every reader feature the table's protocol
names (explicitly for reader version 3, implicitly through the legacy version for 1 and 2);
likewise for writers. Each feature is described once here (delta-spark's TableFeature.scala):
the protocol versions it needs, whether readers must know it, whether it is a legacy feature
implied by a protocol version, whether metadata that uses it may upgrade an existing table
silently, the features it requires, and whether pydelta reads and writes tables that have it.
The legacy-version maps and the supported sets below are derived from the registry.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_READER_VERSION = 3
MAX_WRITER_VERSION = 7
TABLE_FEATURES_READER = 3
TABLE_FEATURES_WRITER = 7


@dataclass(frozen=True)
class FeatureSpec:
    """What delta-spark knows about one table feature, and what pydelta supports of it."""

    name: str
    min_reader: int
    min_writer: int
    reader_writer: bool = False
    legacy: bool = False
    auto_update: bool = False  # may silently upgrade an existing table when metadata needs it
    requires: tuple[str, ...] = ()
    fail_concurrent_at_upgrade: bool = True  # a concurrent upgrade adding it aborts other writers
    reads: bool = False  # pydelta reads tables with this feature (reader-writer features only)
    writes: bool = False  # pydelta writes tables with this feature


def _legacy_w(name: str, writer: int, fail: bool = True, writes: bool = True) -> FeatureSpec:
    return FeatureSpec(name, 0, writer, legacy=True, auto_update=True, fail_concurrent_at_upgrade=fail, writes=writes)


def _writer(name: str, *, auto: bool = False, requires: tuple[str, ...] = (), fail: bool = True,
            writes: bool = False) -> FeatureSpec:
    return FeatureSpec(name, 0, TABLE_FEATURES_WRITER, auto_update=auto, requires=requires,
                       fail_concurrent_at_upgrade=fail, writes=writes)


def _rw(name: str, *, auto: bool = False, requires: tuple[str, ...] = (), fail: bool = True,
        reads: bool = False, writes: bool = False) -> FeatureSpec:
    return FeatureSpec(name, TABLE_FEATURES_READER, TABLE_FEATURES_WRITER, True, False, auto, requires, fail,
                       reads, writes)


FEATURES: dict[str, FeatureSpec] = {
    f.name: f
    for f in (
        _legacy_w("appendOnly", 2, fail=False),
        _legacy_w("invariants", 2),
        _legacy_w("checkConstraints", 3),
        _legacy_w("changeDataFeed", 4, fail=False),
        _legacy_w("generatedColumns", 4),
        FeatureSpec("columnMapping", 2, 5, True, True, True, (), False, reads=True, writes=True),
        _legacy_w("identityColumns", 6),
        _writer("inCommitTimestamp", auto=True, fail=False, writes=True),
        _writer("domainMetadata", fail=False, writes=True),
        _writer("rowTracking", auto=True, requires=("domainMetadata",), fail=False, writes=True),
        _writer("clustering", requires=("domainMetadata",), writes=True),
        _writer("checkpointProtection", writes=True),
        _writer("allowColumnDefaults", writes=True),
        _writer("materializePartitionColumns", auto=True, writes=True),  # spark/write/data_files.py
        # Enforced by protocol/iceberg_compat.py (V3 is refused there by name).
        _writer("icebergCompatV1", auto=True, requires=("columnMapping",), fail=False, writes=True),
        _writer("icebergCompatV2", auto=True, requires=("columnMapping",), fail=False, writes=True),
        _writer("icebergCompatV3", auto=True, requires=("columnMapping",), fail=False),
        _writer("managedCommit", auto=True, requires=("inCommitTimestamp",), fail=True, writes=True),
        _writer("coordinatedCommits-preview", auto=True, requires=("inCommitTimestamp", "vacuumProtocolCheck")),
        _writer("redirectWriterOnly-preview", auto=True),
        _rw("deletionVectors", auto=True, fail=False, reads=True, writes=True),
        _rw("timestampNtz", fail=False, reads=True, writes=True),
        _rw("typeWidening", auto=True, fail=False, reads=True, writes=True),
        _rw("typeWidening-preview", fail=False, reads=True, writes=True),
        _rw("v2Checkpoint", auto=True, fail=False, reads=True, writes=True),
        _rw("vacuumProtocolCheck", fail=False, reads=True, writes=True),
        _rw("variantType", auto=True, reads=True, writes=True),
        _rw("variantType-preview", auto=True, reads=True, writes=True),
        # Shredded files are Spark's to read and write (4.1+; protocol/variant_shredding.py says
        # when, spark/base/pyspark_compat.py refuses them before 4.1).
        _rw("variantShredding", auto=True, requires=("variantType",), reads=True, writes=True),
        _rw("variantShredding-preview", auto=True, reads=True, writes=True),
        # Catalog-managed tables (the successor of managed commits): readable up to their
        # published version, writable only through the catalog's committer.
        _rw("catalogManaged", requires=("inCommitTimestamp", "vacuumProtocolCheck"), fail=True, reads=True,
            writes=True),  # through pydelta's catalogs only (txn: io.pydelta.catalog)
        _rw("catalogOwned-preview", requires=("inCommitTimestamp", "vacuumProtocolCheck"), fail=False, reads=True),
        _rw("geospatial", auto=True, reads=True, writes=True),
        _rw("geospatial-dev", reads=True, writes=True),
        _rw("redirectReaderWriter-preview", auto=True),
        # Catalog-managed tables whose files are listed by Iceberg v4 manifests: known, refused.
        _rw("adaptiveMetadata-preview", requires=("catalogManaged", "rowTracking", "domainMetadata",
                                                  "deletionVectors", "columnMapping")),
    )
}
_BY_LOWER = {name.lower(): spec for name, spec in FEATURES.items()}


def feature_spec(name: str, in_reader_features: bool = False) -> FeatureSpec:
    """The spec of a feature; an unknown name (a newer client's) is treated as a plain table feature."""
    spec = FEATURES.get(name) or _BY_LOWER.get(name.lower())
    if spec is not None:
        return spec
    return _rw(name) if in_reader_features else _writer(name)


def known_feature(name: str) -> FeatureSpec | None:
    """The registry's spec of `name` (any case), or None for a feature pydelta has never heard of."""
    return FEATURES.get(name) or _BY_LOWER.get(name.lower())


# Features implied by each legacy version (seed 003 / PROTOCOL.md), from the registry.
LEGACY_READER_FEATURES: dict[int, frozenset[str]] = {
    v: frozenset(f.name for f in FEATURES.values() if f.legacy and f.reader_writer and f.min_reader <= v)
    for v in (1, 2)
}
LEGACY_WRITER_FEATURES: dict[int, frozenset[str]] = {
    v: frozenset(f.name for f in FEATURES.values() if f.legacy and f.min_writer <= v) for v in range(1, 7)
}

CATALOG_MANAGED_FEATURES = frozenset({"catalogManaged", "catalogOwned-preview"})

#: What pydelta's reader implements (the reader-writer features it reads).
SUPPORTED_READER_FEATURES = frozenset(f.name for f in FEATURES.values() if f.reader_writer and f.reads)
#: What pydelta's writer implements.
SUPPORTED_WRITER_FEATURES = frozenset(f.name for f in FEATURES.values() if f.writes)
