"""Table features and the legacy protocol versions they map to.

A client may read a table only if it implements every reader feature the
table's protocol names (explicitly for reader version 3, implicitly through
the legacy version for 1 and 2); likewise for writers.
"""

from __future__ import annotations

# Features implied by each legacy version (seed 003 / PROTOCOL.md).
LEGACY_READER_FEATURES: dict[int, frozenset[str]] = {
    1: frozenset(),
    2: frozenset({"columnMapping"}),
}
LEGACY_WRITER_FEATURES: dict[int, frozenset[str]] = {
    1: frozenset(),
    2: frozenset({"appendOnly", "invariants"}),
    3: frozenset({"appendOnly", "invariants", "checkConstraints"}),
    4: frozenset({"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns"}),
    5: frozenset(
        {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping"}
    ),
    6: frozenset(
        {
            "appendOnly",
            "invariants",
            "checkConstraints",
            "changeDataFeed",
            "generatedColumns",
            "columnMapping",
            "identityColumns",
        }
    ),
}

# Features that change how data must be read: they appear in readerFeatures too.
READER_WRITER_FEATURES = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "typeWidening",
        "typeWidening-preview",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "variantType",
        "variantType-preview",
        "variantShredding-preview",
        "catalogOwned-preview",
        "catalogManaged",
        "geospatial",
        "geospatial-dev",
    }
)

# Catalog-managed tables (the successor of managed commits): readable up to their
# published version, writable only through the catalog's committer (which pydelta lacks).
CATALOG_MANAGED_FEATURES = frozenset({"catalogManaged", "catalogOwned-preview"})

# What pydelta's reader implements.
SUPPORTED_READER_FEATURES = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "typeWidening",
        "typeWidening-preview",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "variantType",
        "variantType-preview",
        "catalogManaged",
        "catalogOwned-preview",
        "geospatial",
        "geospatial-dev",
    }
)

# What pydelta's writer implements (grows with the write path).
SUPPORTED_WRITER_FEATURES = frozenset(
    {
        "appendOnly",
        "invariants",
        "checkConstraints",
        "generatedColumns",
        "columnMapping",
        "changeDataFeed",
        "deletionVectors",
        "timestampNtz",
        "inCommitTimestamp",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "domainMetadata",
        "checkpointProtection",
        "managedCommit",
        "typeWidening",
        "typeWidening-preview",
        "identityColumns",
        "allowColumnDefaults",
        "rowTracking",
        "clustering",
        "geospatial",
        "geospatial-dev",
    }
)

MAX_READER_VERSION = 3
MAX_WRITER_VERSION = 7
