"""ALTER TABLE t ALTER COLUMN c SYNC IDENTITY: an identity column's high-water mark moved past its data."""

from __future__ import annotations

from pydelta.errors import DeltaAnalysisError
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.engine import table_snapshot

ALLOW_LOWERING_CONF = "spark.databricks.delta.identity.allowSyncIdentityToLowerHighWaterMark.enabled"


def sync_identity(spark: SparkSession, path: str, column: str, *, display: str | None = None) -> int:
    """ALTER TABLE t ALTER COLUMN c SYNC IDENTITY: move the mark to the column's furthest value.

    Needed after explicit inserts into a BY DEFAULT column: generated values then continue
    after the data. Reads the whole table, so a concurrent append conflicts.
    """
    from pyspark.sql import functions as F

    from pydelta.protocol.identity import HIGH_WATER_MARK, spec_of, synced_high_water_mark
    from pydelta.protocol.schema import StructField, StructType
    from pydelta.spark.ddl.schema_edits import change_operation, commit_metadata
    from pydelta.spark.read.scan import read_snapshot

    snapshot = table_snapshot(spark, path)
    schema = snapshot.metadata.schema
    field = next((f for f in schema.fields if f.name.lower() == column.lower()), None)
    if field is None:
        raise DeltaAnalysisError(f"[DELTA_COLUMN_NOT_FOUND] Unable to find the column `{column}` of "
                                 f"{display or path}; the table's columns: {[f.name for f in schema.fields]}")
    spec = spec_of(field)
    if spec is None:
        raise DeltaAnalysisError("[DELTA_IDENTITY_COLUMNS_ALTER_NON_IDENTITY_COLUMN] ALTER TABLE ALTER COLUMN SYNC "
                                 f"IDENTITY cannot be called on non IDENTITY columns (`{field.name}`).")
    aggregate = F.max if spec.step > 0 else F.min
    furthest = read_snapshot(spark, snapshot).agg(aggregate(F.col(f"`{field.name}`"))).collect()[0][0]
    metadata = dict(field.metadata)
    if furthest is not None:
        lowering = str(spark.conf.get(ALLOW_LOWERING_CONF, "false")).lower() == "true"
        metadata[HIGH_WATER_MARK] = synced_high_water_mark(spec, int(furthest), lowering)
    new_field = StructField(field.name, field.type, field.nullable, metadata)
    new_schema = StructType(tuple(new_field if f is field else f for f in schema.fields))
    from dataclasses import replace

    new_metadata = replace(snapshot.metadata, schema_string=new_schema.to_json())
    return commit_metadata(spark, snapshot, new_metadata, change_operation([([], new_field, None)]), read_all=True)
