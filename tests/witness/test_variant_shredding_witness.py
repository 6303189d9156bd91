"""Variant shredding across clients (issue 43, part 2).

delta-spark (in its own process) writes tables whose variants are shredded; pydelta reads the
same rows at every version. pydelta writes shredded variants into a table that enables
shredding (and only then), delta-spark reads them back, and the variant values compare equal
as JSON and by path. Spark does the shredding itself (4.1+): pydelta only decides, per table,
whether it may."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.golden_paths import DELTA_RS
from tests.witness._compare import (
    commits,
    delta_spark_writes_then_pydelta_reads,
    features,
    pydelta_writes_then_delta_spark_reads,
    read,
    same_at_every_version,
    version,
)

pytestmark = [pytest.mark.spark, pytest.mark.witness]

SHREDDING = "'delta.enableVariantShredding' = 'true'"
ROW = ("parse_json(concat('{\"a\": ', id, ', \"b\": \"x', id, '\"}')), "
       "named_struct('inner', parse_json(concat('{\"k\": ', id * 10, '}')))")


def _templated(sql: str) -> str:
    """`sql` as a statement template of the _compare helpers (which fill in `{t}`)."""
    return sql.replace("{", "{{").replace("}", "}}")


def _shredded(path: str, v: int) -> dict[str, bool]:
    """Each data file added at version `v`: whether its `v` column is shredded (has typed_value)."""
    out = {}
    for action in commits(path)[v]:
        if "add" in action:
            variant = pq.read_schema(Path(path) / action["add"]["path"]).field("v").type
            out[action["add"]["path"]] = "typed_value" in {variant[i].name for i in range(variant.num_fields)}
    return out


def _as_json(ds, path: str) -> list[list]:
    rows = ds.sql(f"SELECT id, to_json(v), v:a::int, to_json(s.inner) FROM delta.`{path}`")["rows"]
    return sorted(rows, key=lambda r: r[0])


def _ours_as_json(spark, path: str) -> list[list]:
    rows = spark.sql(f"SELECT id, to_json(v) AS j, v:a::int AS a, to_json(s.inner) AS i FROM delta.`{path}` "
                     "ORDER BY id").collect()
    return [[r.id, r.j, r.a, r.i] for r in rows]


def test_pydelta_reads_and_extends_delta_sparks_shredded_table(spark, delta_spark, tmp_path):
    path = str(tmp_path / "t")
    delta_spark.sql(f"CREATE TABLE delta.`{path}` (id INT, v VARIANT, s STRUCT<inner: VARIANT>) USING delta "
                    f"TBLPROPERTIES ({SHREDDING})", collect=False)
    delta_spark_writes_then_pydelta_reads(
        spark, delta_spark, path,
        "INSERT INTO {t} SELECT CAST(id AS INT), " + _templated(ROW) + " FROM range(0, 8)",
        "UPDATE {t} SET v = parse_json('{{\"a\": -1, \"b\": [true]}}') WHERE id = 3",
        "DELETE FROM {t} WHERE id = 5")
    assert {"variantShredding-preview", "variantType"} <= features(delta_spark, path)
    assert all(_shredded(path, 1).values()), "delta-spark shredded nothing: the test would prove nothing"
    same_at_every_version(spark, delta_spark, path)

    # pydelta writes into it: its new files are shredded too, and delta-spark reads them.
    before = version(path)
    latest = pydelta_writes_then_delta_spark_reads(
        spark, delta_spark, path,
        "INSERT INTO {t} SELECT CAST(id AS INT), " + _templated(ROW) + " FROM range(10, 14)",
        "UPDATE {t} SET v = parse_json('{{\"a\": 99, \"b\": \"upd\"}}') WHERE id IN (0, 10)",
        "MERGE INTO {t} AS t USING (SELECT 11 AS id UNION ALL SELECT 20) AS s ON t.id = s.id "
        "WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT (id, v, s) "
        "VALUES (s.id, parse_json('{{\"a\": 20, \"b\": \"new\"}}'), NULL)")
    for v in range(before + 1, latest + 1):
        written = _shredded(path, v)
        assert written and all(written.values()), f"pydelta's files at version {v} are not shredded: {written}"
    assert _as_json(delta_spark, path) == _ours_as_json(spark, path)
    assert [r[:3] for r in _as_json(delta_spark, path) if r[0] in (0, 10, 20)] == [
        [0, '{"a":99,"b":"upd"}', 99], [10, '{"a":99,"b":"upd"}', 99], [20, '{"a":20,"b":"new"}', 20]]


def test_pydelta_enables_shredding_as_delta_spark_does(spark, delta_spark, tmp_path):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    create = "CREATE TABLE delta.`{p}` (id INT, v VARIANT, s STRUCT<inner: VARIANT>) USING delta"
    spark.sql(create.format(p=ours) + f" TBLPROPERTIES ({SHREDDING})")
    delta_spark.sql(create.format(p=theirs) + f" TBLPROPERTIES ({SHREDDING})", collect=False)
    assert delta_spark.protocol(ours) == delta_spark.protocol(theirs)

    # A table without shredding gets unshredded variants (Spark 4.1+ would shred them) ...
    plain = str(tmp_path / "plain")
    spark.sql(create.format(p=plain))
    spark.sql(f"INSERT INTO delta.`{plain}` SELECT CAST(id AS INT), {ROW} FROM range(0, 4)")
    assert _shredded(plain, 1) and not any(_shredded(plain, 1).values())
    # ... until the property is set: the protocol gains the feature, new files are shredded.
    spark.sql(f"ALTER TABLE delta.`{plain}` SET TBLPROPERTIES ({SHREDDING})")
    assert "variantShredding-preview" in features(delta_spark, plain)
    spark.sql(f"INSERT INTO delta.`{plain}` SELECT CAST(id AS INT), {ROW} FROM range(4, 8)")
    assert all(_shredded(plain, 3).values())
    # Supported but no longer enabled: new files are unshredded again (PROTOCOL.md), old ones stay readable.
    spark.sql(f"ALTER TABLE delta.`{plain}` SET TBLPROPERTIES ('delta.enableVariantShredding' = 'false')")
    spark.sql(f"INSERT INTO delta.`{plain}` SELECT CAST(id AS INT), {ROW} FROM range(8, 10)")
    assert not any(_shredded(plain, 5).values())
    same_at_every_version(spark, delta_spark, plain)
    assert _as_json(delta_spark, plain) == _ours_as_json(spark, plain)

    # The stable feature on request, as delta-spark gives it.
    stable = str(tmp_path / "stable")
    spark.sql(create.format(p=stable) + f" TBLPROPERTIES ({SHREDDING}, 'delta.feature.variantShredding' = 'supported')")
    assert {"variantShredding", "variantType"} <= features(delta_spark, stable)
    assert "variantShredding-preview" not in features(delta_spark, stable)
    spark.sql(f"INSERT INTO delta.`{stable}` SELECT CAST(id AS INT), {ROW} FROM range(0, 3)")
    assert all(_shredded(stable, 1).values())
    assert _as_json(delta_spark, stable) == _ours_as_json(spark, stable)


def test_the_golden_preview_table_reads_as_delta_spark_reads_it(spark, delta_spark):
    """delta-rs's `spark-shredded-variant-preview-delta` (variantShredding-preview, variants in
    arrays, structs and maps), which deltalake refuses: delta-spark is the witness."""
    path = str(DELTA_RS / "spark-shredded-variant-preview-delta")
    assert read(spark, path) == delta_spark.rows(path)
