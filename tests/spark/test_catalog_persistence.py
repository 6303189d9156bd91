"""Tables named in one Spark process are there for the next: the Hive metastore (embedded Derby)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CREATE = textwrap.dedent('''
    import sys
    from pydelta import DeltaTable
    from pydelta.spark.session import local_session
    spark = local_session("writer", catalog_dir=sys.argv[1])
    spark.sql("CREATE DATABASE shop")
    spark.sql("CREATE TABLE shop.orders (id INT, amount DOUBLE) USING DELTA PARTITIONED BY (id)")
    spark.sql("INSERT INTO shop.orders VALUES (1, 9.5), (2, 20.0)")
    DeltaTable.create(spark).tableName("built").location(sys.argv[2]).addColumn("x", "STRING").execute()
    spark.range(4).write.format("delta").saveAsTable("saved")
    spark.stop()
''')

READ = textwrap.dedent('''
    import json, sys
    from pydelta import DeltaTable
    from pydelta.spark.session import local_session
    spark = local_session("reader", catalog_dir=sys.argv[1])
    out = {
        "tables": sorted(t.name for db in ("default", "shop") for t in spark.catalog.listTables(db)),
        "orders": sorted(tuple(r) for r in spark.sql("SELECT * FROM shop.orders").collect()),
        "built": DeltaTable.forName(spark, "built").path,
        "saved": spark.table("saved").count(),
        "history": [r.operation for r in spark.sql("DESCRIBE HISTORY shop.orders").collect()],
    }
    spark.sql("INSERT INTO saved SELECT 10")
    out["saved_after"] = spark.sql("SELECT count(*) FROM saved").first()[0]
    print("RESULT" + json.dumps(out))
    spark.stop()
''')


def _run(script: str, *args: str) -> str:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


def test_second_process_sees_every_table(tmp_path):
    catalog_dir, built = str(tmp_path / "catalog"), str(tmp_path / "built")
    _run(CREATE, catalog_dir, built)
    assert os.path.isdir(os.path.join(catalog_dir, "metastore_db"))
    out = json.loads(_run(READ, catalog_dir, built).split("RESULT", 1)[1])
    assert out["tables"] == ["built", "orders", "saved"]
    assert out["orders"] == [[1, 9.5], [2, 20.0]]
    assert out["built"] == built
    assert out["saved"] == 4 and out["saved_after"] == 5
    assert out["history"] == ["WRITE", "CREATE TABLE"]
