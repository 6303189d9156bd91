"""Column DEFAULT values (allowColumnDefaults): DDL, ALTER COLUMN SET/DROP DEFAULT, INSERT.

delta-spark's rules: the feature must be enabled explicitly; ADD COLUMNS cannot carry a
default; INSERT fills the columns it does not name and the DEFAULT keyword from the
metadata (`CURRENT_DEFAULT`, the SQL text); a default must be a constant of the column type.
"""

from __future__ import annotations

import json

import pytest

import pydelta
from pydelta import errors

pytestmark = pytest.mark.spark

FEATURE = "TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')"


def _fields(path: str) -> dict:
    return {f["name"]: f for f in json.loads(pydelta.load_snapshot(path).metadata.schema_string)["fields"]}


def _rows(spark, path: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())


def test_defaults_fill_inserts(spark, tmp_path):
    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, status STRING DEFAULT 'new', n INT DEFAULT 40 + 2, d DATE) USING delta "
              f"{FEATURE}")
    assert _fields(path)["status"]["metadata"] == {"CURRENT_DEFAULT": "'new'"}
    assert _fields(path)["n"]["metadata"] == {"CURRENT_DEFAULT": "40 + 2"}
    assert pydelta.load_snapshot(path).protocol.has_feature("allowColumnDefaults")
    spark.sql(f"INSERT INTO {t} (id) VALUES (1)")
    spark.sql(f"INSERT INTO {t} VALUES (2, DEFAULT, 7, DEFAULT)")
    spark.sql(f"INSERT INTO {t} (id, n) VALUES (3, DEFAULT), (4, 5)")
    assert _rows(spark, path) == [(1, "new", 42, None), (2, "new", 7, None), (3, "new", 42, None),
                                  (4, "new", 5, None)]
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN status SET DEFAULT 'open'")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN n DROP DEFAULT")
    spark.sql(f"INSERT INTO {t} (id) VALUES (5)")
    assert _rows(spark, path)[-1] == (5, "open", None, None)
    spark.createDataFrame([(6,)], "id BIGINT").write.format("delta").mode("append").save(path)
    assert _rows(spark, path)[-1] == (6, None, None, None)  # DataFrame writes do not apply defaults
    import deltalake

    assert deltalake.DeltaTable(path).to_pyarrow_table().num_rows == 6


def test_default_refusals(spark, tmp_path):
    path = str(tmp_path / "t")
    with pytest.raises(errors.DeltaAnalysisError, match="WRONG_COLUMN_DEFAULTS_FOR_DELTA_FEATURE_NOT_ENABLED"):
        spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, s STRING DEFAULT 'x') USING delta")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, s STRING) USING delta {FEATURE}")
    before = pydelta.load_snapshot(path).version
    with pytest.raises(errors.DeltaAnalysisError, match="INVALID_DEFAULT_VALUE"):
        spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN s SET DEFAULT id + 1")  # not a constant
    with pytest.raises(errors.DeltaAnalysisError, match="WRONG_COLUMN_DEFAULTS_FOR_DELTA_ALTER_TABLE_ADD_COLUMN"):
        spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (x INT DEFAULT 1)")
    assert pydelta.load_snapshot(path).version == before


def test_defaults_in_merge_and_update(spark, tmp_path):
    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, status STRING DEFAULT 'new', n INT DEFAULT 42, d DATE) USING delta "
              f"{FEATURE}")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'old', 1, DATE'2024-01-01')")
    spark.createDataFrame([(1, 10), (2, 20), (3, 30)], "id BIGINT, n INT").createOrReplaceTempView("src_defaults")
    spark.sql(f"""MERGE INTO {t} t USING src_defaults s ON t.id = s.id
                  WHEN MATCHED THEN UPDATE SET status = DEFAULT, n = s.n
                  WHEN NOT MATCHED AND s.id = 2 THEN INSERT (id) VALUES (s.id)
                  WHEN NOT MATCHED THEN INSERT (id, status, n, d) VALUES (s.id, 'given', DEFAULT, DEFAULT)""")
    assert _rows(spark, path) == [
        (1, "new", 10, __import__("datetime").date(2024, 1, 1)),  # SET status = DEFAULT
        (2, "new", 42, None),  # unnamed columns take their defaults (NULL without one)
        (3, "given", 42, None),  # DEFAULT keyword in VALUES
    ]
    spark.sql(f"UPDATE {t} SET n = DEFAULT WHERE id = 1")
    assert _rows(spark, path)[0][2] == 42
    # The Python API fills unassigned insert columns the same way.
    from pydelta import DeltaTable

    source = spark.createDataFrame([(4,)], "id BIGINT")
    (DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenNotMatchedInsert(values={"id": "s.id"}).execute())
    assert _rows(spark, path)[-1] == (4, "new", 42, None)
    import deltalake

    assert deltalake.DeltaTable(path).to_pyarrow_table().num_rows == 4
