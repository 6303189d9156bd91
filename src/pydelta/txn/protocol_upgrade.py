"""The protocol a table needs for its metadata: table features, legacy versions, upgrades.

Follows delta-spark (TableFeature.scala, `Protocol.forNewTable`,
`upgradeProtocolFromMetadataForExistingTable`): the features a metadata needs
are collected (table properties, schema, explicit `delta.feature.*` and
`delta.minReader/WriterVersion` requests, the current protocol's features,
plus dependencies), then expressed as the weakest protocol that supports them.

Two ways of expressing a feature set exist. By default a set made only of
legacy features becomes the smallest legacy version covering it (the
behaviour of delta-spark 2.x/3.0-3.2 and of the table-features blog walk-through:
CDF gives (1,4)). With ``legacy_preferred=False`` the newest delta-spark
normalization is used instead: a legacy version only when the set matches it
exactly, e.g. CDF gives (1,7) with [appendOnly, invariants, changeDataFeed].
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import replace
from typing import Any

from pydelta.errors import DeltaAnalysisError, DeltaIllegalArgumentError, DeltaProtocolError
from pydelta.protocol import geospatial, variant_shredding
from pydelta.protocol import properties as P
from pydelta.protocol.actions import Metadata, Protocol
from pydelta.protocol.features import FEATURES, TABLE_FEATURES_READER, TABLE_FEATURES_WRITER, known_feature
from pydelta.protocol.features import FeatureSpec as FeatureSpec  # re-exported for callers
from pydelta.protocol.features import feature_spec as feature_spec  # re-exported for callers
from pydelta.protocol.schema import CURRENT_DEFAULT_KEY, contains_geospatial, walk_fields

MIN_READER_VERSION_PROP = "delta.minReaderVersion"
MIN_WRITER_VERSION_PROP = "delta.minWriterVersion"
IGNORE_PROTOCOL_DEFAULTS_PROP = "delta.ignoreProtocolDefaults"
FEATURE_PROP_PREFIX = "delta.feature."
DEFAULT_PROTOCOL = (1, 2)  # delta-spark's session defaults for new tables


# ---- protocol algebra (delta-spark's TableFeatureSupport) ------------------------------


def supports_reader_features(p: Protocol) -> bool:
    return p.min_reader_version >= TABLE_FEATURES_READER


def supports_writer_features(p: Protocol) -> bool:
    return p.min_writer_version >= TABLE_FEATURES_WRITER


def explicit_features(p: Protocol) -> frozenset[str]:
    return (p.reader_features or frozenset()) | (p.writer_features or frozenset())


def implicit_features(p: Protocol) -> frozenset[str]:
    """Legacy features a legacy protocol supports through its version numbers."""
    if supports_reader_features(p) or supports_writer_features(p):
        return frozenset()
    return frozenset(
        f.name
        for f in FEATURES.values()
        if f.legacy and f.min_reader <= p.min_reader_version and f.min_writer <= p.min_writer_version
    )


def all_features(p: Protocol | None) -> frozenset[str]:
    """Every feature the protocol supports, implicitly or explicitly."""
    if p is None:
        return frozenset()
    return explicit_features(p) | implicit_features(p)


def _spec_of(name: str, p: Protocol | None = None) -> FeatureSpec:
    return feature_spec(name, bool(p and p.reader_features and name in p.reader_features))


def min_versions(names: Iterable[str], p: Protocol | None = None) -> tuple[int, int]:
    """Lowest (reader, writer) versions able to support these features."""
    specs = [_spec_of(n, p) for n in names]
    return max([1] + [s.min_reader for s in specs]), max([1] + [s.min_writer for s in specs])


def features_protocol(reader: int, names: Iterable[str], p: Protocol | None = None) -> Protocol:
    """A table-features protocol (writer 7) listing `names`; reader features only from reader 3 on."""
    names = set(names)
    readers = None
    if reader >= TABLE_FEATURES_READER:
        readers = frozenset(n for n in names if _spec_of(n, p).reader_writer)
    return Protocol(reader, TABLE_FEATURES_WRITER, readers, frozenset(names))


def legacy_protocol(reader: int, writer: int) -> Protocol:
    return Protocol(reader, writer, None, None)


def normalized(p: Protocol) -> Protocol:
    """delta-spark's weakest form: a legacy protocol when it supports exactly the same features."""
    if not supports_writer_features(p):
        return p
    names = explicit_features(p)
    reader, writer = min_versions(names, p)
    if writer < TABLE_FEATURES_WRITER:
        candidate = legacy_protocol(reader, writer)
        if all_features(candidate) == names:
            return candidate
    return features_protocol(reader, names, p)


def denormalized(p: Protocol) -> Protocol:
    """The table-features protocol equivalent to a legacy one."""
    if supports_writer_features(p):
        return p
    names = implicit_features(p)
    reader, _ = min_versions(names)
    return features_protocol(reader, names)


def merge(*protocols: Protocol) -> Protocol:
    """Highest versions plus every feature of all protocols, in the weakest form."""
    names: set[str] = set()
    reader_names: set[str] = set()
    for p in protocols:
        names |= all_features(p)
        reader_names |= p.reader_features or frozenset()
    reader = max(p.min_reader_version for p in protocols)
    writer = max(p.min_writer_version for p in protocols)
    if writer < TABLE_FEATURES_WRITER and reader < TABLE_FEATURES_READER:
        return normalized(denormalized(legacy_protocol(reader, writer)))
    hint = Protocol(TABLE_FEATURES_READER, TABLE_FEATURES_WRITER, frozenset(reader_names), frozenset(names))
    return normalized(features_protocol(max(reader, min_versions(names, hint)[0]), names, hint))


def can_upgrade(current: Protocol, new: Protocol) -> bool:
    """True when `new` supports every feature of `current` (delta-spark's canUpgradeTo)."""
    return all_features(current) <= all_features(new)


def added_features(new: Protocol, old: Protocol | None) -> frozenset[str]:
    return all_features(new) - all_features(old)


def removes_features(new: Protocol, old: Protocol | None) -> bool:
    return bool(all_features(old) - all_features(new))


# ---- features needed by a metadata ----------------------------------------------------




def _walk_types(dt: Any) -> Iterable[Any]:
    from pydelta.protocol.schema import ArrayType, MapType, StructType

    yield dt
    if isinstance(dt, StructType):
        for f in dt.fields:
            yield from _walk_types(f.type)
    elif isinstance(dt, ArrayType):
        yield from _walk_types(dt.element_type)
    elif isinstance(dt, MapType):
        yield from _walk_types(dt.key_type)
        yield from _walk_types(dt.value_type)


def metadata_features(metadata: Metadata, protocol: Protocol | None = None,
                      requested: Collection[str] = ()) -> set[str]:
    """Features the metadata actively uses (delta-spark's FeatureAutomaticallyEnabledByMetadata).

    Where a feature has a preview and a stable name, one the protocol supports (or the same
    commit `requested` by `delta.feature.<name>`) is kept rather than adding the other."""
    conf = metadata.configuration
    schema = metadata.schema
    fields = list(walk_fields(schema))
    type_names = {getattr(t, "name", "") for t in _walk_types(schema)}
    supported = set(all_features(protocol)) | set(requested)
    out: set[str] = set()
    if P.flag(conf, "delta.appendOnly"):
        out.add("appendOnly")
    if any("delta.invariants" in f.metadata for f in fields):
        out.add("invariants")
    if any(k.startswith("delta.constraints.") for k in conf):
        out.add("checkConstraints")
    if P.flag(conf, "delta.enableChangeDataFeed"):
        out.add("changeDataFeed")
    if any("delta.generationExpression" in f.metadata for f in fields):
        out.add("generatedColumns")
    if str(conf.get("delta.columnMapping.mode", "none")).strip().lower() in ("name", "id"):
        out.add("columnMapping")
    if any("delta.identity.start" in f.metadata and "delta.identity.step" in f.metadata for f in fields):
        out.add("identityColumns")
    if P.flag(conf, "delta.enableDeletionVectors"):
        out.add("deletionVectors")
    if "timestamp_ntz" in type_names:
        out.add("timestampNtz")
    widening = P.flag(conf, "delta.enableTypeWidening") or any("delta.typeChanges" in f.metadata for f in fields)
    if widening and "typeWidening-preview" not in supported:
        out.add("typeWidening")
    if str(conf.get("delta.checkpointPolicy", "classic")).strip().lower() == "v2":
        out.add("v2Checkpoint")
    if "variant" in type_names and "variantType-preview" not in supported:
        out.add("variantType")
    if variant_shredding.enabled(metadata) and not variant_shredding.FEATURES & supported:
        # delta-spark 4.4 attaches the preview name (its variantShredding.forceUsePreviewTableFeature
        # defaults to true), which older clients know too; `delta.feature.variantShredding` picks the stable one.
        out.add("variantShredding-preview")
    if contains_geospatial(schema) and geospatial.PREVIEW_FEATURE not in supported:
        out.add(geospatial.FEATURE)  # not over the preview feature, which old clients may only know
    if P.flag(conf, "delta.enableInCommitTimestamps"):
        out.add("inCommitTimestamp")
    if conf.get("delta.managedCommit.commitOwner") is not None:
        out.add("managedCommit")  # seed 001: the owner property needs the managedCommit writer feature
    if conf.get("io.pydelta.catalog") is not None or conf.get("io.unitycatalog.tableId") is not None:
        out.add("catalogManaged")  # a table pydelta's catalog manages (PROTOCOL.md: catalog-managed tables)
    if P.flag(conf, "delta.enableRowTracking"):
        out.add("rowTracking")
    if P.flag(conf, "delta.enableMaterializePartitionColumnsFeature"):
        out.add("materializePartitionColumns")
    for v in ("V1", "V2", "V3"):
        if P.flag(conf, f"delta.enableIcebergCompat{v}"):
            out.add(f"icebergCompat{v}")
    return out


def requested_features(configuration: Mapping[str, str]) -> set[str]:
    """Features named by `delta.feature.<name>` = supported (or the deprecated 'enabled')."""
    out: set[str] = set()
    unknown: list[str] = []
    for key, value in configuration.items():
        if not key.startswith(FEATURE_PROP_PREFIX):
            continue
        name = key[len(FEATURE_PROP_PREFIX) :]
        status = str(value).strip().lower()
        if status not in ("supported", "enabled"):
            raise DeltaIllegalArgumentError(
                f'Expecting the status for table feature {name} to be "supported", but got "{value}".'
            )
        spec = known_feature(name)
        if spec is None:
            unknown.append(key)
        else:
            out.add(spec.name)
    if unknown:
        raise DeltaAnalysisError(
            "Table features configured in the following Delta table properties are not recognized "
            f"by this version of Delta Lake: {', '.join(sorted(unknown))}.",
            error_class="DELTA_UNSUPPORTED_FEATURES_IN_CONFIG",
        )
    return out


def _version_prop(conf: Mapping[str, str], key: str) -> int | None:
    raw = conf.get(key)
    if raw is None:
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise DeltaIllegalArgumentError(f"Protocol property {key} needs to be an integer. Found {raw}") from None
    limit = TABLE_FEATURES_READER if key == MIN_READER_VERSION_PROP else TABLE_FEATURES_WRITER
    if not 1 <= value <= limit:
        raise DeltaIllegalArgumentError(f"Protocol property {key} must be between 1 and {limit}. Found {raw}")
    return value


def requested_versions(configuration: Mapping[str, str]) -> tuple[int | None, int | None]:
    """`delta.minReaderVersion` / `delta.minWriterVersion` table properties, validated."""
    reader = _version_prop(configuration, MIN_READER_VERSION_PROP)
    writer = _version_prop(configuration, MIN_WRITER_VERSION_PROP)
    if reader is not None and reader >= TABLE_FEATURES_READER and writer is not None and writer < TABLE_FEATURES_WRITER:
        raise DeltaProtocolError(
            f"Reader version {reader} (table features) requires writer version {TABLE_FEATURES_WRITER}, got {writer}"
        )
    return reader, writer


def is_protocol_property(key: str) -> bool:
    return (
        key in (MIN_READER_VERSION_PROP, MIN_WRITER_VERSION_PROP, IGNORE_PROTOCOL_DEFAULTS_PROP)
        or key.startswith(FEATURE_PROP_PREFIX)
    )


def strip_protocol_properties(configuration: Mapping[str, str]) -> dict[str, str]:
    """The configuration without protocol requests: delta-spark never stores them."""
    return {k: v for k, v in configuration.items() if not is_protocol_property(k)}


def _closure(names: set[str]) -> set[str]:
    out = set(names)
    while True:
        more = {r for n in out for r in feature_spec(n).requires} - out
        if not more:
            return out
        out |= more


def _implicit_of_request(reader: int, writer: int) -> frozenset[str]:
    if writer >= TABLE_FEATURES_WRITER:
        return frozenset()
    return implicit_features(legacy_protocol(min(reader, 2), writer))



def _check_column_defaults(metadata: Metadata, features: set[str], new_table: bool) -> None:
    """Column DEFAULT values need `allowColumnDefaults`, which delta-spark never enables silently."""
    if "allowColumnDefaults" in features:
        return
    if any(CURRENT_DEFAULT_KEY in f.metadata for f in walk_fields(metadata.schema)):
        command = "CREATE TABLE" if new_table else "ALTER TABLE"
        raise DeltaAnalysisError(
            f"[WRONG_COLUMN_DEFAULTS_FOR_DELTA_FEATURE_NOT_ENABLED] Failed to execute {command} command because it "
            "assigned a column DEFAULT value, but the corresponding table feature was not enabled. Please retry the "
            "command again after executing ALTER TABLE tableName SET TBLPROPERTIES"
            "('delta.feature.allowColumnDefaults' = 'supported').")


def required_features(metadata: Metadata, current: Protocol | None) -> tuple[set[str], tuple[int, int]]:
    """All features the table must support after this metadata, and the explicitly requested versions.

    Raises when an existing table would need a feature that delta-spark refuses to add
    silently (e.g. a timestamp_ntz column needs `delta.feature.timestampNtz`).
    """
    conf = metadata.configuration
    req_reader, req_writer = requested_versions(conf)
    if current is None:
        ignore_defaults = P.flag(conf, IGNORE_PROTOCOL_DEFAULTS_PROP)
        default_reader, default_writer = (1, 1) if ignore_defaults else DEFAULT_PROTOCOL
        req_reader = req_reader if req_reader is not None else default_reader
        req_writer = req_writer if req_writer is not None else default_writer
    else:
        req_reader = req_reader if req_reader is not None else 0
        req_writer = req_writer if req_writer is not None else 0
    base = set(all_features(current))
    base |= _implicit_of_request(max(req_reader, 1), max(req_writer, 1)) if (req_reader or req_writer) else set()
    requested = requested_features(conf)
    _check_column_defaults(metadata, base | requested, current is None)
    geospatial.check_metadata(metadata.schema, metadata.partition_columns)
    from_metadata = metadata_features(metadata, current, requested)
    needed = _closure(base | requested | from_metadata)
    if current is not None:
        # Only features switched on by the metadata itself are checked, as in delta-spark;
        # their dependencies (e.g. domainMetadata for rowTracking) come along silently.
        manual = sorted(
            n for n in from_metadata - base - _closure(requested) if not feature_spec(n).auto_update
        )
        if manual:
            raise DeltaAnalysisError(
                f"Your table schema requires manually enablement of the following table feature(s): "
                f"{', '.join(manual)}. To do this, set the table property 'delta.feature.<feature_name>' "
                f"= 'supported' for each of them. Current supported feature(s): "
                f"{', '.join(sorted(base)) or 'none'}."
            )
    return needed, (req_reader, req_writer)


def required_protocol(
    metadata: Metadata, current: Protocol | None, *, legacy_preferred: bool = True
) -> Protocol:
    """The lowest protocol supporting everything `metadata` needs, never weaker than `current`.

    `current` None means a new table (delta-spark's defaults (1,2) apply). Protocol
    requests in the configuration (`delta.minReaderVersion`, `delta.minWriterVersion`,
    `delta.feature.<name>`) are honoured; strip them with `strip_protocol_properties`
    before storing the metadata.
    """
    needed, (req_reader, req_writer) = required_features(metadata, current)
    if not legacy_preferred:
        return _newest_style(needed, current)
    cur_reader = current.min_reader_version if current else 0
    cur_writer = current.min_writer_version if current else 0
    all_legacy = all(feature_spec(n).legacy for n in needed)
    uses_table_features = max(req_writer, cur_writer) >= TABLE_FEATURES_WRITER or max(
        req_reader, cur_reader
    ) >= TABLE_FEATURES_READER
    if all_legacy and not uses_table_features:
        reader, writer = min_versions(needed)
        return legacy_protocol(max(reader, req_reader, cur_reader), max(writer, req_writer, cur_writer))
    reader, _ = min_versions(needed, current)
    if current is not None and supports_reader_features(current):
        reader = max(reader, current.min_reader_version)
    reader = max(reader, req_reader)
    return features_protocol(reader, needed, current)


def _newest_style(needed: set[str], current: Protocol | None) -> Protocol:
    """delta-spark 3.3+ / 4.x: table features unless a legacy version matches exactly."""
    candidate = normalized(features_protocol(TABLE_FEATURES_READER, needed, current))
    if current is None:
        return candidate
    if can_upgrade(candidate, current) and can_upgrade(current, candidate):
        return current
    return merge(candidate, current)


def metadata_and_protocol(
    metadata: Metadata, current: Protocol | None, *, legacy_preferred: bool = True
) -> tuple[Metadata, Protocol]:
    """The metadata to store (protocol requests removed) and the protocol it needs."""
    protocol = required_protocol(metadata, current, legacy_preferred=legacy_preferred)
    stripped = strip_protocol_properties(metadata.configuration)
    if stripped != metadata.configuration:
        metadata = replace(metadata, configuration=stripped)
    return metadata, protocol


def check_upgrade(current: Protocol | None, new: Protocol) -> None:
    """Refuse a protocol change that would drop a supported feature or lower a version."""
    if new.min_reader_version < 1 or new.min_writer_version < 1:
        raise DeltaProtocolError("The reader and writer versions need to be greater than 0")
    if current is None:
        return
    if not can_upgrade(current, new):
        raise DeltaProtocolError(
            f"Protocol version cannot be downgraded from ({_fmt(current)}) to ({_fmt(new)})",
            error_class="DELTA_INVALID_PROTOCOL_DOWNGRADE",
        )


def _fmt(p: Protocol) -> str:
    text = f"{p.min_reader_version},{p.min_writer_version}"
    if p.reader_features is not None or p.writer_features is not None:
        text += f",[{', '.join(sorted(explicit_features(p)))}]"
    return text


def describe(p: Protocol) -> str:
    """Short human form, e.g. (3,7,[deletionVectors, appendOnly])."""
    return f"({_fmt(p)})"
