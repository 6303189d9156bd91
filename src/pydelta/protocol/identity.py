"""Identity columns (PROTOCOL.md "Identity Columns", writer version 6 / `identityColumns`).

The column's metadata holds `delta.identity.start`, `.step` (non-zero), `.allowExplicitInsert`
(false: GENERATED ALWAYS, true: BY DEFAULT) and, once values were generated,
`.highWaterMark`: the last generated value (largest for a positive step, smallest for a
negative one). A write generating n values hands out `hwm + step * (1 + i)` for distinct
i >= 0 (hwm = start - step before the first), so every value is `start + k * step`, beyond
the mark, and unique; the commit records the new mark. Two writers generating from the same
mark both change the metadata, so the second fails with MetadataChangedException (as in
delta-spark) instead of committing duplicates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pydelta.errors import DeltaAnalysisError, DeltaNotImplementedError
from pydelta.protocol.actions import Metadata
from pydelta.protocol.schema import PrimitiveType, StructField, StructType

START = "delta.identity.start"
STEP = "delta.identity.step"
HIGH_WATER_MARK = "delta.identity.highWaterMark"
ALLOW_EXPLICIT_INSERT = "delta.identity.allowExplicitInsert"
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class IdentitySpec:
    """One identity column as its metadata describes it."""

    name: str
    start: int
    step: int
    allow_explicit_insert: bool
    high_water_mark: int | None

    @property
    def base(self) -> int:
        """The value generation counts from: the mark, or one step before `start`."""
        return self.high_water_mark if self.high_water_mark is not None else self.start - self.step

    def beyond(self, a: int, b: int) -> int:
        """The further of two values in the step's direction."""
        return max(a, b) if self.step > 0 else min(a, b)


def column_metadata(start: int, step: int, allow_explicit_insert: bool) -> dict[str, Any]:
    """The metadata of a new identity column (delta-spark's keys)."""
    if step == 0:
        raise DeltaAnalysisError("[DELTA_IDENTITY_COLUMNS_ILLEGAL_STEP] IDENTITY column step cannot be 0.")
    return {START: int(start), STEP: int(step), ALLOW_EXPLICIT_INSERT: bool(allow_explicit_insert)}


def spec_of(field: StructField) -> IdentitySpec | None:
    md = field.metadata
    keys = (START in md, STEP in md, ALLOW_EXPLICIT_INSERT in md)
    if not any(keys):
        return None
    if not all(keys):
        raise DeltaAnalysisError(f"[DELTA_IDENTITY_COLUMN_INCONSISTENT_METADATA] Inconsistent IDENTITY metadata for "
                                 f"column {field.name} detected: {keys[0]}, {keys[1]}, {keys[2]}")
    hwm = md.get(HIGH_WATER_MARK)
    return IdentitySpec(field.name, int(md[START]), int(md[STEP]), _bool(md[ALLOW_EXPLICIT_INSERT]),
                        None if hwm is None else int(hwm))


def _bool(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).strip().lower() == "true"


def identity_columns(schema: StructType) -> list[IdentitySpec]:
    """The table's identity columns (top-level only, as Delta allows)."""
    return [s for s in (spec_of(f) for f in schema.fields) if s is not None]


def validate(schema: StructType, partition_columns: tuple[str, ...] | list[str]) -> None:
    """delta-spark's checks on a schema with identity columns: BIGINT, not partitioned, not generated."""
    partitions = {c.lower() for c in partition_columns}
    for f in schema.fields:
        spec = spec_of(f)
        if spec is None:
            continue
        if spec.step == 0:
            raise DeltaAnalysisError("[DELTA_IDENTITY_COLUMNS_ILLEGAL_STEP] IDENTITY column step cannot be 0.")
        if not (isinstance(f.type, PrimitiveType) and f.type.name == "long"):
            # delta-spark: a DeltaUnsupportedOperationException (DeltaErrors.identityColumnDataTypeNotSupported)
            raise DeltaNotImplementedError(f"[DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE] DataType "
                                     f"{getattr(f.type, 'name', f.type)} is not supported for IDENTITY columns.")
        if f.name.lower() in partitions:
            raise DeltaAnalysisError(f"[DELTA_IDENTITY_COLUMNS_PARTITION_NOT_SUPPORTED] PARTITIONED BY IDENTITY "
                                     f"column {f.name} is not supported.")
        if "delta.generationExpression" in f.metadata:
            raise DeltaAnalysisError("[DELTA_IDENTITY_COLUMNS_WITH_GENERATED_EXPRESSION] IDENTITY column cannot be "
                                     "specified with a generated column expression.")


def with_high_water_marks(metadata: Metadata, marks: Mapping[str, int]) -> Metadata:
    """`metadata` with each named identity column's mark moved to `marks[name]` (never backwards)."""
    if not marks:
        return metadata
    fields = []
    for f in metadata.schema.fields:
        spec = spec_of(f)
        if spec is not None and f.name in marks:
            mark = marks[f.name] if spec.high_water_mark is None else spec.beyond(spec.high_water_mark, marks[f.name])
            f = StructField(f.name, f.type, f.nullable, {**dict(f.metadata), HIGH_WATER_MARK: int(mark)})
        fields.append(f)
    return replace(metadata, schema_string=StructType(tuple(fields)).to_json())


def synced_high_water_mark(spec: IdentitySpec, furthest: int, allow_lowering: bool = False) -> int:
    """ALTER COLUMN ... SYNC IDENTITY: the mark after seeing `furthest` (max for a positive step, min else).

    The value is rounded to the next `start + n * step` (so generated values keep the
    column's sequence); the mark only moves forward unless lowering is allowed.
    """
    offset = furthest - spec.start
    n = -((-offset) // spec.step)  # ceil(offset / step) for either sign of step
    rounded = spec.start + n * spec.step
    if allow_lowering or spec.high_water_mark is None:
        return rounded
    return spec.beyond(spec.high_water_mark, rounded)
