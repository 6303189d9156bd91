"""The non-file actions of the Delta log as small immutable objects.

File actions (add/remove) are kept as Arrow tables by the replay code, since
there can be millions of them; everything here is at most a few per version.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pydelta.errors import UnsupportedFeatureError, UnsupportedProtocolError
from pydelta.protocol import features as F

if TYPE_CHECKING:
    from pydelta.protocol.schema import StructType


@dataclass(frozen=True)
class Protocol:
    min_reader_version: int
    min_writer_version: int
    reader_features: frozenset[str] | None = None
    writer_features: frozenset[str] | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Protocol:
        rf = d.get("readerFeatures")
        wf = d.get("writerFeatures")
        return cls(
            int(d["minReaderVersion"]),
            int(d["minWriterVersion"]),
            frozenset(rf) if rf is not None else None,
            frozenset(wf) if wf is not None else None,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "minReaderVersion": self.min_reader_version,
            "minWriterVersion": self.min_writer_version,
        }
        if self.reader_features is not None:
            out["readerFeatures"] = sorted(self.reader_features)
        if self.writer_features is not None:
            out["writerFeatures"] = sorted(self.writer_features)
        return out

    @property
    def supports_reader_features(self) -> bool:
        return self.min_reader_version >= 3

    @property
    def supports_writer_features(self) -> bool:
        return self.min_writer_version >= 7

    @cached_property
    def effective_reader_features(self) -> frozenset[str]:
        """Reader features in force, from the explicit list or the legacy version."""
        if self.min_reader_version >= 3:
            return self.reader_features or frozenset()
        return F.LEGACY_READER_FEATURES.get(self.min_reader_version, frozenset())

    @cached_property
    def effective_writer_features(self) -> frozenset[str]:
        if self.min_writer_version >= 7:
            return self.writer_features or frozenset()
        return F.LEGACY_WRITER_FEATURES.get(self.min_writer_version, frozenset())

    def has_feature(self, name: str) -> bool:
        return name in self.effective_reader_features or name in self.effective_writer_features

    def check_readable(self) -> None:
        """Raise unless pydelta can read a table with this protocol."""
        unknown = (self.reader_features or frozenset()) - F.SUPPORTED_READER_FEATURES
        if unknown:
            raise UnsupportedFeatureError(
                f"table requires reader feature(s) not supported by pydelta: {', '.join(sorted(unknown))}",
                unknown,
            )
        if self.min_reader_version < 1 or self.min_reader_version > F.MAX_READER_VERSION:
            raise UnsupportedProtocolError(
                f"table requires reader version {self.min_reader_version}; "
                f"pydelta supports reader versions 1 to {F.MAX_READER_VERSION}"
            )
        missing = self.effective_reader_features - F.SUPPORTED_READER_FEATURES
        if missing:
            raise UnsupportedFeatureError(
                f"table requires reader feature(s) not supported by pydelta: {', '.join(sorted(missing))}",
                missing,
            )

    def check_writable(self) -> None:
        """Raise unless pydelta can write (and read) a table with this protocol."""
        self.check_readable()
        if self.min_writer_version < 1 or self.min_writer_version > F.MAX_WRITER_VERSION:
            raise UnsupportedProtocolError(
                f"table requires writer version {self.min_writer_version}; "
                f"pydelta supports writer versions 1 to {F.MAX_WRITER_VERSION}"
            )
        missing = self.effective_writer_features - F.SUPPORTED_WRITER_FEATURES
        # Reader features already checked are read-supported; writers also need write support.
        if missing:
            raise UnsupportedFeatureError(
                f"table requires writer feature(s) not supported by pydelta: {', '.join(sorted(missing))}",
                missing,
                error_class="DELTA_UNSUPPORTED_FEATURES_FOR_WRITE",
            )


@dataclass(frozen=True)
class Format:
    provider: str = "parquet"
    options: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Metadata:
    id: str
    schema_string: str
    partition_columns: tuple[str, ...]
    configuration: dict[str, str]
    format: Format = Format()
    name: str | None = None
    description: str | None = None
    created_time: int | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Metadata:
        fmt = d.get("format") or {}
        return cls(
            id=d["id"],
            # Some old writers (and test tables) omit it: an empty schema.
            schema_string=d.get("schemaString") or '{"type":"struct","fields":[]}',
            partition_columns=tuple(d.get("partitionColumns") or ()),
            configuration=dict(d.get("configuration") or {}),
            format=Format(fmt.get("provider") or "parquet", dict(fmt.get("options") or {})),
            name=d.get("name"),
            description=d.get("description"),
            created_time=d.get("createdTime"),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "format": {"provider": self.format.provider, "options": dict(self.format.options)},
            "schemaString": self.schema_string,
            "partitionColumns": list(self.partition_columns),
            "configuration": dict(self.configuration),
        }
        if self.name is not None:
            out["name"] = self.name
        if self.description is not None:
            out["description"] = self.description
        if self.created_time is not None:
            out["createdTime"] = self.created_time
        return out

    @cached_property
    def schema(self) -> StructType:
        from pydelta.protocol.schema import parse_schema

        return parse_schema(self.schema_string)

    def __hash__(self) -> int:  # dict field makes the default hash fail
        return hash((self.id, self.schema_string, self.partition_columns))


@dataclass(frozen=True)
class Txn:
    app_id: str
    version: int
    last_updated: int | None = None


@dataclass(frozen=True)
class DomainMetadata:
    domain: str
    configuration: str
    removed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"domain": self.domain, "configuration": self.configuration, "removed": self.removed}


def dumps_action(kind: str, body: dict[str, Any]) -> str:
    """One log line, compact as delta-spark writes it."""
    return json.dumps({kind: body}, separators=(",", ":"), ensure_ascii=False)
