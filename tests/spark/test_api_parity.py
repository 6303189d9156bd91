"""delta-spark parity of exceptions (pyspark classes + error classes) and argument checks."""

from __future__ import annotations

import pytest
from pyspark.errors import AnalysisException, IllegalArgumentException, UnsupportedOperationException

from pydelta import errors as E
from pydelta.spark.base.spark_errors import to_pyspark
from pydelta.tables import DeltaTable


def test_conversion_keeps_pydelta_class_and_adds_pyspark():
    e = to_pyspark(E.DeltaTableNotFoundError("/x is not a Delta table"))
    assert isinstance(e, E.DeltaTableNotFoundError) and isinstance(e, AnalysisException)
    assert e.getCondition() == "DELTA_MISSING_DELTA_TABLE" and e.getSqlState() == "42P01"
    assert str(e) == "[DELTA_MISSING_DELTA_TABLE] /x is not a Delta table"
    e = to_pyspark(E.TableAlreadyExistsError("[TABLE_OR_VIEW_ALREADY_EXISTS] Table t already exists"))
    assert e.getCondition() == "TABLE_OR_VIEW_ALREADY_EXISTS" and str(e).count("[TABLE_OR_VIEW") == 1
    # The error class travels on the exception (given where it is raised, or the message's [CLASS]);
    # it decides the pyspark class where delta-spark raises another than the type's.
    assert E.DeltaAnalysisError("[DELTA_X_Y] text").error_class == "DELTA_X_Y"
    assert E.DeltaAnalysisError("no class").error_class is None
    e = to_pyspark(E.DeltaAnalysisError("p is a partition column. Z-Ordering can only be performed on data columns",
                                        error_class="DELTA_ZORDERING_ON_PARTITION_COLUMN"))
    assert isinstance(e, IllegalArgumentException) and e.getCondition() == "DELTA_ZORDERING_ON_PARTITION_COLUMN"
    assert not isinstance(e, AnalysisException)
    e = to_pyspark(E.VersionNotFoundError("timestamp x is after the latest version 3",
                                          error_class="DELTA_TIMESTAMP_GREATER_THAN_COMMIT"))
    assert e.getCondition() == "DELTA_TIMESTAMP_GREATER_THAN_COMMIT" and isinstance(e, AnalysisException)
    assert to_pyspark(E.VersionNotFoundError("version 9 does not exist")).getCondition() == "DELTA_VERSION_NOT_FOUND"
    e = to_pyspark(E.InvariantViolationError("NOT NULL constraint violated for column: a",
                                             error_class="DELTA_NOT_NULL_CONSTRAINT_VIOLATED"))
    assert e.getCondition() == "DELTA_NOT_NULL_CONSTRAINT_VIOLATED"
    e = to_pyspark(E.DeltaNotImplementedError("nope"))
    assert isinstance(e, UnsupportedOperationException) and isinstance(e, NotImplementedError)
    other = ValueError("x")
    assert to_pyspark(other) is other


def test_table_not_found_at_the_api(spark, tmp_path):
    with pytest.raises(AnalysisException) as info:
        DeltaTable.forPath(spark, str(tmp_path / "none"))
    assert isinstance(info.value, E.DeltaTableNotFoundError)
    assert info.value.getCondition() == "DELTA_MISSING_DELTA_TABLE"
    with pytest.raises(AnalysisException) as info:
        spark.read.format("delta").load(str(tmp_path / "none"))
    assert isinstance(info.value, E.DeltaTableNotFoundError)


def test_builder_and_table_argument_checks(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    t = DeltaTable.forPath(spark, path)
    with pytest.raises(AnalysisException) as info:
        DeltaTable.create(spark).location(path).addColumn("id", "long").execute()
    assert info.value.getCondition() == "DELTA_TABLE_ALREADY_EXISTS"
    assert isinstance(info.value, E.TableAlreadyExistsError)
    b = DeltaTable.create(spark)
    for call in (lambda: b.tableName(1), lambda: b.location(1), lambda: b.comment(1),
                 lambda: b.addColumn(1, "int"), lambda: b.addColumn("a", 1),
                 lambda: b.addColumn("a", "int", nullable=1),
                 lambda: b.addColumn("a", "int", generatedAlwaysAs=1), lambda: b.addColumn("a", "int", comment=1),
                 lambda: b.addColumns(1), lambda: b.addColumns([1]), lambda: b.partitionedBy(1),
                 lambda: b.property("k", 1)):
        with pytest.raises(TypeError):
            call()
    with pytest.raises(ValueError, match="readerVersion"):
        t.upgradeTableProtocol("abc", 3)
    with pytest.raises(TypeError, match="must be DataFrame"):
        t.merge(5, "true")
    with pytest.raises(ValueError, match="timestamp needs to be a string"):
        t.restoreToTimestamp(5)
    with pytest.raises(AnalysisException, match="cannot be converted to a valid timestamp"):
        t.restoreToTimestamp("not a time")
    with pytest.raises(TypeError, match="Z-order column must be str"):
        t.optimize().executeZOrderBy(1)
    before = t.history().count()
    t.upgradeTableProtocol(1, 1)  # lower than the table's: no-op
    assert t.history().count() == before


def test_sql_errors_are_pyspark(spark, tmp_path):
    path = str(tmp_path / "s")
    spark.range(3).write.format("delta").save(path)
    with pytest.raises(AnalysisException) as info:
        spark.sql(f"CREATE TABLE delta.`{path}` (id long) USING delta")
    assert isinstance(info.value, E.DeltaError) and info.value.getCondition() is not None


def test_builder_details_and_errors(spark, tmp_path):
    location = str(tmp_path / "built")
    table = (DeltaTable.create(spark).tableName("parity_built").location(location).comment("table comment")
             .addColumn("id", "INT", nullable=False, comment="the id")
             .addColumn("v", "STRING", comment="a value")
             .addColumn("g", "INT", generatedAlwaysAs="id * 2")
             .partitionedBy("v").property("k", "x").execute())
    try:
        fields = {f.name: f for f in table.toDF().schema.fields}
        assert fields["id"].metadata["comment"] == "the id" and not fields["id"].nullable
        assert fields["g"].metadata == {}  # delta-spark shows readers no generation expression ...
        from tests.helpers import last_commit_actions

        logged = next(a["metaData"] for a in last_commit_actions(location) if "metaData" in a)
        assert '"delta.generationExpression":"id * 2"' in logged["schemaString"]  # ... the log keeps it
        detail = table.detail().first()
        assert detail.description == "table comment" and detail.partitionColumns == ["v"]
        assert detail.properties == {"k": "x"}
        described = {r.col_name: r.comment for r in spark.sql("DESCRIBE TABLE parity_built").collect()}
        assert described["id"] == "the id" and described["v"] == "a value"
        extended = {r.col_name: r.data_type for r in spark.sql("DESCRIBE TABLE EXTENDED parity_built").collect()}
        assert extended["Comment"] == "table comment"
        props = {r.key: r.value for r in spark.sql("SHOW TBLPROPERTIES parity_built").collect()}
        assert props["k"] == "x"
        with pytest.raises(AnalysisException) as exists:
            DeltaTable.create(spark).tableName("parity_built").addColumn("id", "INT").execute()
        assert isinstance(exists.value, E.TableAlreadyExistsError)
    finally:
        spark.sql("DROP TABLE IF EXISTS parity_built")
    with pytest.raises(AnalysisException) as missing:
        DeltaTable.replace(spark).tableName("parity_never_made").addColumn("id", "INT").execute()
    assert missing.value.getCondition() == "TABLE_OR_VIEW_NOT_FOUND"  # Spark's AtomicReplaceTableExec
    bad = str(tmp_path / "bad")
    with pytest.raises(AnalysisException) as part:
        DeltaTable.create(spark).location(bad).addColumn("id", "INT").partitionedBy("zz").execute()
    assert part.value.getCondition() == "DELTA_PARTITION_COLUMN_NOT_FOUND"
    assert not DeltaTable.isDeltaTable(spark, bad)
