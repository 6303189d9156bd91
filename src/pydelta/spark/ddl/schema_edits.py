"""Editing a table's schema and metadata: the column specs of ALTER TABLE, finding and replacing
fields at any depth, delta-spark's operation parameters, the one metadata-only commit.

Shared by ALTER TABLE (alter.py), column mapping (alter_mapping.py), REPLACE COLUMNS
(alter_replace.py) and identity columns (identity.py)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, overload

from pydelta.errors import DeltaAnalysisError
from pydelta.log.snapshot import Snapshot
from pydelta.protocol.actions import Metadata
from pydelta.protocol.schema import ArrayType, DataType, MapType, StructField, StructType, quote_path, walk_fields
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.conf import conf_bool
from pydelta.txn.commit_info import Operation

_INVALID_NAME_CHARS = frozenset(" ,;{}()\n\t=")


@dataclass(frozen=True)
class Position:
    """Where a column goes in its struct: FIRST (after=None) or AFTER a sibling."""

    after: str | None = None

    def __str__(self) -> str:  # Spark's ColumnPosition.toString, as delta-spark logs it
        return "FIRST" if self.after is None else f"AFTER {self.after}"


@dataclass(frozen=True)
class NewColumn:
    """One column of ADD COLUMNS: its name parts (parents first), type, comment, position."""

    name: tuple[str, ...]
    data_type: DataType
    nullable: bool = True
    comment: str | None = None
    position: Position | None = None


@dataclass(frozen=True)
class ColumnChange:
    """One ALTER COLUMN spec; None (or False) leaves that aspect as it is."""

    name: tuple[str, ...]
    data_type: DataType | None = None
    nullable: bool | None = None
    comment: str | None = None
    drop_comment: bool = False
    drop_default: bool = False
    position: Position | None = None
    default: str | None = None  # SET DEFAULT <sql>


def change_operation(logged: list[tuple[list[str], StructField, Position | None]]) -> Operation:
    """CHANGE COLUMN for one spec, CHANGE COLUMNS for several (delta-spark's operation parameters)."""
    if len(logged) == 1:
        parent, field, position = logged[0]
        params: dict[str, object] = {"column": _json(_field_map(parent, field))}
        if position is not None:
            params["position"] = str(position)
        return Operation("CHANGE COLUMN", params)
    entries = []
    for parent, field, position in logged:
        entry: dict[str, object] = dict(_field_map(parent, field))
        if position is not None:
            entry["position"] = str(position)
        entries.append(entry)
    return Operation("CHANGE COLUMNS", {"columns": _json(entries)})


def _case_sensitive(spark: SparkSession) -> bool:
    return conf_bool(spark, "spark.sql.caseSensitive", False)


def _find(struct: StructType, name: str, case_sensitive: bool) -> StructField | None:
    for f in struct.fields:
        if f.name == name:
            return f
    if not case_sensitive:
        for f in struct.fields:
            if f.name.lower() == name.lower():
                return f
    return None


def _resolve(schema: StructType, parts: Sequence[str], case_sensitive: bool) -> tuple[list[str], DataType]:
    """The table's own names along `parts` and the type they lead to (array `element`, map `key`/`value`)."""
    resolved: list[str] = []
    dt: DataType = schema
    for part in parts:
        if isinstance(dt, StructType):
            f = _find(dt, part, case_sensitive)
            if f is None:
                raise _not_found(parts, schema)
            resolved.append(f.name)
            dt = f.type
        elif isinstance(dt, ArrayType) and part.lower() == "element":
            resolved.append("element")
            dt = dt.element_type
        elif isinstance(dt, MapType) and part.lower() in ("key", "value"):
            resolved.append(part.lower())
            dt = dt.key_type if part.lower() == "key" else dt.value_type
        else:
            raise DeltaAnalysisError(f"[INVALID_FIELD_NAME] Field name {quote_path(parts)} is invalid: "
                                     f"{quote_path(resolved)} is not a struct.")
    return resolved, dt


def _not_found(parts: Sequence[str], schema: StructType) -> DeltaAnalysisError:
    from pydelta.spark.read.scan import spark_schema

    return DeltaAnalysisError(f"[DELTA_COLUMN_NOT_FOUND_IN_SCHEMA] Couldn't find column {_attribute_name(parts)} "
                              f"in:\n{spark_schema(schema).treeString()}")


@overload
def _replace_at(dt: StructType, path: Sequence[str], fn: Callable[[StructType], StructType]) -> StructType: ...
@overload
def _replace_at(dt: DataType, path: Sequence[str], fn: Callable[[StructType], StructType]) -> DataType: ...
def _replace_at(dt: DataType, path: Sequence[str], fn: Callable[[StructType], StructType]) -> DataType:
    """`dt` with the struct at the (resolved) `path` replaced by fn(struct); a struct stays a struct."""
    if not path:
        return fn(dt)  # type: ignore[arg-type]
    head, rest = path[0], path[1:]
    if isinstance(dt, StructType):
        return StructType(tuple(f.with_type(_replace_at(f.type, rest, fn)) if f.name == head else f
                                for f in dt.fields))
    if isinstance(dt, ArrayType):
        return ArrayType(_replace_at(dt.element_type, rest, fn), dt.contains_null)
    assert isinstance(dt, MapType)
    if head == "key":
        return MapType(_replace_at(dt.key_type, rest, fn), dt.value_type, dt.value_contains_null)
    return MapType(dt.key_type, _replace_at(dt.value_type, rest, fn), dt.value_contains_null)


def _check_name_characters(field: StructField) -> None:
    bad = [f.name for f in (field, *walk_fields(field.type)) if _INVALID_NAME_CHARS & set(f.name)]
    if bad:
        raise DeltaAnalysisError(
            "[DELTA_INVALID_CHARACTERS_IN_COLUMN_NAMES] Found invalid character(s) among ' ,;{}()\\n\\t=' in the "
            f"column names of your schema. Invalid column names: {', '.join(bad)}. Please use other characters and "
            "try again. Alternatively, enable Column Mapping to keep using these characters.")


def _type_sql(dt: DataType) -> str:
    from pydelta.spark.read.scan import spark_schema

    return spark_schema(StructType((StructField("c", dt),))).fields[0].dataType.simpleString().upper()


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _display(path: str, display: str | None) -> str:
    return display if display is not None else f"delta.`{path}`"


def _attribute_name(parts: Sequence[str]) -> str:
    """Spark's UnresolvedAttribute.name: parts joined by dots, a part holding a dot in backticks."""
    return ".".join(f"`{p}`" if "." in p else p for p in parts)


def _field_map(parent: Sequence[str], field: StructField) -> dict[str, object]:
    """delta-spark's structFieldToMap, as ADD COLUMNS / CHANGE COLUMN(S) log a column."""
    return {"name": _attribute_name([*parent, field.name]), "type": field.type.name,
            "nullable": field.nullable, "metadata": json.loads(json.dumps(field.metadata))}


def commit_metadata(spark: SparkSession, snapshot: Snapshot, metadata: Metadata, operation: Operation, *,
            read_all: bool = False) -> int:
    """One metadata-only commit; the protocol follows what the new metadata needs."""
    from pydelta.spark.base.transactions import open_transaction

    txn = open_transaction(spark, snapshot)
    if read_all:  # the data was checked: a concurrent append must conflict
        txn.read_whole_table()
    txn.update_metadata(metadata)
    return txn.commit([], operation)
