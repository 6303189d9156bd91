"""IcebergCompatV1/V2 (PROTOCOL.md): the metadata a writer sets for it and the commits it refuses,
with delta-spark's error classes."""

from __future__ import annotations

import json

import pytest

from pydelta import errors
from pydelta.protocol import iceberg_compat as ic
from pydelta.protocol.actions import Metadata, Protocol
from pydelta.protocol.column_mapping import COLUMN_MAPPING_NESTED_IDS_KEY
from pydelta.protocol.data_types import StructType, parse_schema

V2 = {"delta.enableIcebergCompatV2": "true"}
PROTOCOL = Protocol(2, 7, None, frozenset({"columnMapping", "icebergCompatV2"}))


def _schema(*fields: tuple[str, object]) -> str:
    return json.dumps({"type": "struct", "fields": [
        {"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields]})


def _md(schema: str, conf: dict[str, str], partitions: tuple[str, ...] = ()) -> Metadata:
    return Metadata(id="t", schema_string=schema, partition_columns=partitions, configuration=conf)


def test_creation_gets_column_mapping_and_nested_ids():
    schema = _schema(("id", "long"), ("tags", {"type": "array", "elementType": "string", "containsNull": True}),
                     ("m", {"type": "map", "keyType": "string",
                            "valueType": {"type": "array", "elementType": "integer", "containsNull": True},
                            "valueContainsNull": True}))
    md = ic.with_requirements(_md(schema, V2), previous=None)
    assert md.configuration["delta.columnMapping.mode"] == "name"
    assert md.configuration[ic.ATOMIC_CONVERSION_KEY] == "true"
    fields = {f.name: f.metadata for f in md.schema.fields}
    assert [fields[n]["delta.columnMapping.id"] for n in ("id", "tags", "m")] == [1, 2, 3]
    # nested ids follow the column ids, in pre-order, keyed by physical name; every field has the key
    tags, m = fields["tags"], fields["m"]
    assert fields["id"][COLUMN_MAPPING_NESTED_IDS_KEY] == {}
    assert tags[COLUMN_MAPPING_NESTED_IDS_KEY] == {f"{tags['delta.columnMapping.physicalName']}.element": 4}
    pm = m["delta.columnMapping.physicalName"]
    assert m[COLUMN_MAPPING_NESTED_IDS_KEY] == {f"{pm}.key": 5, f"{pm}.value": 6, f"{pm}.value.element": 7}
    assert md.configuration["delta.columnMapping.maxColumnId"] == "7"
    # idempotent: a second pass keeps every id
    assert ic.with_requirements(md, previous=md) == md


def test_existing_table_needs_column_mapping_set():
    plain = _md(_schema(("id", "long")), {})
    with pytest.raises(errors.IcebergCompatViolationError, match=r"requires table property "
                       r"'delta\.columnMapping\.mode' to be set to 'name'\. Current value: 'none'") as e:
        ic.with_requirements(_md(_schema(("id", "long")), V2), previous=plain)
    assert e.value.error_class == "DELTA_ICEBERG_COMPAT_VIOLATION.WRONG_REQUIRED_TABLE_PROPERTY"
    with pytest.raises(errors.IcebergCompatViolationError, match="Current value: 'none'"):
        ic.with_requirements(_md(_schema(("id", "long")), {**V2, "delta.columnMapping.mode": "none"}), None)


def test_v3_is_refused_by_name():
    with pytest.raises(errors.DeltaNotImplementedError, match="IcebergCompatV3"):
        ic.with_requirements(_md(_schema(("id", "long")), {"delta.enableIcebergCompatV3": "true"}), None)


def _ready(schema: str, conf: dict[str, str] = V2, partitions: tuple[str, ...] = ()) -> Metadata:
    return ic.with_requirements(_md(schema, conf, partitions), previous=None)


def _violation(sub: str, md: Metadata, protocol: Protocol = PROTOCOL, previous: Metadata | None = None,
               adds: list[dict] | None = None, previous_protocol: Protocol | None = None) -> None:
    with pytest.raises(errors.IcebergCompatViolationError) as e:
        ic.check_commit(md, protocol, previous, previous_protocol or protocol, adds or [])
    assert e.value.error_class == f"DELTA_ICEBERG_COMPAT_VIOLATION.{sub}"


def test_commit_checks():
    good = _ready(_schema(("id", "long"), ("p", "string")), partitions=("p",))
    ic.check_commit(good, PROTOCOL, None, None, [{"path": "a", "stats": '{"numRecords": 3}'}])
    # only one version
    _violation("VERSION_MUTUAL_EXCLUSIVE", _ready(_schema(("id", "long")),
                                                  {**V2, "delta.enableIcebergCompatV1": "true"}))
    # every add carries numRecords
    with pytest.raises(errors.IcebergCompatViolationError, match="requires all AddFiles to contain the numRecords"):
        ic.check_commit(good, PROTOCOL, None, None, [{"path": "a", "stats": '{"minValues": {}}'}])
    with pytest.raises(errors.IcebergCompatViolationError, match="AddFile b is missing"):
        ic.check_commit(good, PROTOCOL, None, None, [{"path": "b"}])
    # V1 has no arrays or maps; V2 has no variant, and no struct partition column
    array = _schema(("id", "long"), ("a", {"type": "array", "elementType": "long", "containsNull": True}))
    _violation("UNSUPPORTED_DATA_TYPE", _ready(array, {"delta.enableIcebergCompatV1": "true"}))
    ic.check_commit(_ready(array), PROTOCOL, None, None, [])
    _violation("UNSUPPORTED_DATA_TYPE", _ready(_schema(("id", "long"), ("v", "variant"))))
    # partitioned differently than before
    other = _ready(_schema(("id", "long"), ("q", "string")), partitions=("q",))
    _violation("REPLACE_TABLE_CHANGE_PARTITION_NAMES", other, previous=good)
    # deletion vectors writable now or before
    dv = Protocol(3, 7, frozenset({"columnMapping", "deletionVectors"}),
                  frozenset({"columnMapping", "icebergCompatV2", "deletionVectors"}))
    with_dvs = _ready(_schema(("id", "long")), {**V2, "delta.enableDeletionVectors": "true"})
    _violation("DELETION_VECTORS_SHOULD_BE_DISABLED", with_dvs, dv)
    _violation("DELETION_VECTORS_SHOULD_BE_DISABLED", good, dv, previous=with_dvs)
    ic.check_commit(good, dv, good, dv, [])  # supported but off: fine


def test_type_widening_iceberg_cannot_follow():
    widened = {"type": "struct", "fields": [{"name": "x", "type": "double", "nullable": True, "metadata": {
        "delta.typeChanges": [{"fromType": "integer", "toType": "double"}]}}]}
    md = _ready(json.dumps(widened))
    tw = Protocol(3, 7, frozenset({"columnMapping", "typeWidening"}),
                  frozenset({"columnMapping", "icebergCompatV2", "typeWidening"}))
    _violation("UNSUPPORTED_TYPE_WIDENING", md, tw)
    ok = json.loads(json.dumps(widened))
    ok["fields"][0]["type"] = "long"
    ok["fields"][0]["metadata"]["delta.typeChanges"] = [{"fromType": "integer", "toType": "long"}]
    ic.check_commit(_ready(json.dumps(ok)), tw, None, None, [])


def test_schema_parse_roundtrip_keeps_nested_ids():
    md = _ready(_schema(("a", {"type": "array", "elementType": "long", "containsNull": True})))
    again = parse_schema(md.schema.to_json())
    assert isinstance(again, StructType) and again == md.schema
