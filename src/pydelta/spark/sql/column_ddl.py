"""Columns as Spark's SHOW CREATE TABLE prints them, from the log's schema with no JVM.

Spark prints a column with StructField.toDDL and a type with DataType.sql; a Spark Connect
client has neither, so both sessions print from PySpark's types here. Char and varchar
columns keep the type they were declared with (Spark's raw type metadata); Spark 4.2+ names a
string's collation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydelta.protocol.column_names import quote_if_needed
from pydelta.protocol.internal_metadata import GENERATION_EXPRESSION_KEY
from pydelta.protocol.schema import CURRENT_DEFAULT_KEY

if TYPE_CHECKING:
    from pyspark.sql.types import DataType

RAW_TYPE = "__CHAR_VARCHAR_TYPE_STRING"  # Spark's field metadata key: a char/varchar column's declared type


def escape_single_quoted(text: str) -> str:
    """Spark's QuotingUtils.escapeSingleQuotedString: each ' as \\'."""
    return text.replace("'", "\\'")


def type_sql(data_type: DataType) -> str:
    """DataType.sql of a PySpark type."""
    from pyspark.sql.types import ArrayType, DecimalType, MapType, StringType, StructType

    from pydelta.spark.base.pyspark_compat import pyspark_before

    if isinstance(data_type, StringType):
        collation = getattr(data_type, "collation", None) or "UTF8_BINARY"
        if pyspark_before(4, 2) and collation == "UTF8_BINARY":
            return "STRING"
        return f"STRING COLLATE {collation}"
    if isinstance(data_type, DecimalType):
        return f"DECIMAL({data_type.precision},{data_type.scale})"
    if isinstance(data_type, ArrayType):
        return f"ARRAY<{type_sql(data_type.elementType)}>"
    if isinstance(data_type, MapType):
        return f"MAP<{type_sql(data_type.keyType)}, {type_sql(data_type.valueType)}>"
    if isinstance(data_type, StructType):
        return "STRUCT<" + ", ".join(_nested_field_sql(f) for f in data_type.fields) + ">"
    return data_type.simpleString().upper()


def _comment_sql(field: Any) -> str:
    comment = field.metadata.get("comment")
    return "" if comment is None else f" COMMENT '{escape_single_quoted(comment)}'"


def _nested_field_sql(field: Any) -> str:
    """StructField.sql: a struct member inside a type."""
    return f"{quote_if_needed(field.name)}: {type_sql(field.dataType)}{'' if field.nullable else ' NOT NULL'}" \
        + _comment_sql(field)


def column_ddl(field: Any) -> str:
    """StructField.toDDL as ShowCreateTableExec prints a top-level column, GENERATED ALWAYS AS added."""
    metadata = field.metadata
    declared = metadata.get(RAW_TYPE)
    ddl = f"{quote_if_needed(field.name)} {declared.upper() if declared else type_sql(field.dataType)}"
    if not field.nullable:
        ddl += " NOT NULL"
    if CURRENT_DEFAULT_KEY in metadata:
        ddl += f" DEFAULT {metadata[CURRENT_DEFAULT_KEY]}"
    if GENERATION_EXPRESSION_KEY in metadata:
        ddl += f" GENERATED ALWAYS AS ({metadata[GENERATION_EXPRESSION_KEY]})"
    return ddl + _comment_sql(field)
