"""Tables at paths with characters that URIs escape: space, `%`, `#`, `+`, `?`, unicode, a literal `%20`.

A table path is a file name, not a URI: pydelta hands Spark decoded paths (Hadoop escapes them
once, itself) and stores relative paths URI-encoded in the log, as delta-spark does. Each
character gets a write, a full and a filtered read (partitioned and not) checked against
deltalake; then one directory holding all of them at once (so an escape applied twice, or not at
all, names another directory) goes through every operation: time travel, CDF, streaming source
and sink, DML with and without deletion vectors, OPTIMIZE, RESTORE, CLONE, VACUUM, SQL on
``delta.`path` `` and on a table name whose LOCATION is such a path. deltalake reads every table
afterwards; tests/witness/test_odd_paths_witness.py has delta-spark do the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from pydelta import DeltaTable
from tests.spark.test_maintenance_support import deltalake_rows

pytestmark = pytest.mark.spark

CHARACTERS = {"space": "a b", "percent": "p%c", "hash": "h#x", "plus": "p+s", "question": "q?m",
              "unicode": "ü née", "literal_percent_20": "lit%20x"}
ALL = "sales 2024 %zz #h +p ?q ü lit%20"  # every character at once; `%zz` is no valid escape


def _rows(df: Any) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def _deltalake_rows(path: Path, *cols: str) -> list[tuple]:
    """deltalake's read of the table. deltalake 1.6 decodes a table path once too often (it opens
    `lit x` for `lit%20x`, given the path, its file URI or a symlink), so a table under a `%` is
    read from a byte-for-byte copy at a plain path: its log holds relative paths only."""
    import shutil
    import tempfile

    if "%" in str(path):
        copy = Path(tempfile.mkdtemp(prefix="pydelta-deltalake-")) / "t"
        shutil.copytree(path, copy)
        path = copy
    return deltalake_rows(path, list(cols))  # its SQL reader applies deletion vectors


def _write(spark: Any, path: Path, ids: range, *, partitioned: bool, mode: str = "append") -> None:
    df = spark.range(ids.start, ids.stop, 1, 2).selectExpr("id", "CAST(id % 3 AS STRING) AS part")
    writer = df.write.format("delta").mode(mode)
    if partitioned:
        writer = writer.partitionBy("part")
    writer.save(str(path))


def _adds(path: Path) -> list[str]:
    out = []
    for f in sorted((path / "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                out.append(action["add"]["path"])
    return out


@pytest.mark.parametrize("partitioned", [False, True], ids=["plain", "partitioned"])
@pytest.mark.parametrize("name", list(CHARACTERS.values()), ids=list(CHARACTERS))
def test_each_character_reads_back(spark, tmp_path, name, partitioned):
    path = tmp_path / name / "t"
    _write(spark, path, range(12), partitioned=partitioned)
    df = spark.read.format("delta").load(str(path))
    want = [(i, str(i % 3)) for i in range(12)]
    assert _rows(df) == want
    assert _rows(df.where("part = '1'")) == [r for r in want if r[1] == "1"]
    assert _rows(df.where("id >= 6")) == [r for r in want if r[0] >= 6]
    if partitioned:  # pruned to the one partition's files, each named once
        files = df.where("part = '1'").inputFiles()
        assert files and all("part=1" in f for f in files)
        assert len(files) == len(set(files))
    assert len(df.inputFiles()) == len(_adds(path))
    assert _deltalake_rows(path, "id", "part") == want
    assert all(not p.startswith(("/", "file:")) for p in _adds(path)), "relative paths in the log"


def _read(spark: Any, path: Path, **options: Any) -> list[tuple]:
    reader = spark.read.format("delta")
    for k, v in options.items():
        reader = reader.option(k, v)
    return _rows(reader.load(str(path)).select("id", "part"))


@pytest.mark.parametrize("partitioned", [False, True], ids=["plain", "partitioned"])
def test_every_operation_at_an_odd_path(spark, tmp_path, partitioned):
    root = tmp_path / ALL
    path = root / "t"
    t = f"delta.`{path}`"
    model = {i: str(i % 3) for i in range(10)}

    def same() -> None:
        want = sorted(model.items())
        assert _read(spark, path) == want
        assert _deltalake_rows(path, "id", "part") == want

    _write(spark, path, range(10), partitioned=partitioned)                           # v0
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")  # v1
    _write(spark, path, range(10, 20), partitioned=partitioned)                       # v2
    model.update({i: str(i % 3) for i in range(10, 20)})
    same()
    # time travel, by version and by SQL on the path
    assert _read(spark, path, versionAsOf=0) == [(i, str(i % 3)) for i in range(10)]
    assert _rows(spark.sql(f"SELECT id, part FROM {t} VERSION AS OF 0")) == [(i, str(i % 3)) for i in range(10)]
    assert _rows(spark.sql(f"SELECT id FROM {t} WHERE part = '2' AND id > 10")) == [(i,) for i in (11, 14, 17)]

    # DML without deletion vectors: copy-on-write rewrites files at the odd path
    spark.sql(f"UPDATE {t} SET part = 'u' WHERE id = 4")                                 # v3
    spark.sql(f"DELETE FROM {t} WHERE id = 5")                                          # v4
    source = spark.createDataFrame([(6, "m"), (100, "n")], "id BIGINT, part STRING")
    (DeltaTable.forPath(spark, str(path)).alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())                        # v5
    model.update({4: "u", 6: "m", 100: "n"})
    del model[5]
    same()

    # change data feed of the DML versions
    changes = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 3).load(str(path))
    kinds = _rows(changes.select("id", "_change_type", "_commit_version"))
    assert (4, "update_postimage", 3) in kinds and (5, "delete", 4) in kinds and (100, "insert", 5) in kinds

    # DML with deletion vectors
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")  # v6
    _write(spark, path, range(30, 60), partitioned=partitioned)                       # v7: files of many rows
    model.update({i: str(i % 3) for i in range(30, 60)})
    spark.sql(f"DELETE FROM {t} WHERE id = 33")                                         # v8
    spark.sql(f"UPDATE {t} SET part = 'w' WHERE id = 34")                               # v9
    del model[33]
    model[34] = "w"
    log_text = "".join(f.read_text() for f in sorted((path / "_delta_log").glob("*.json")))
    assert '"deletionVector":{' in log_text.replace(" ", "")
    same()
    assert _rows(spark.sql(f"SELECT id FROM {t} WHERE part = 'w'")) == [(34,)]

    # OPTIMIZE, then RESTORE to the version before it and back
    before_optimize = DeltaTable.forPath(spark, str(path)).history(1).collect()[0]["version"]
    spark.sql(f"OPTIMIZE {t}")
    same()
    spark.sql(f"RESTORE TABLE {t} TO VERSION AS OF {before_optimize}")
    same()
    spark.sql(f"RESTORE TABLE {t} TO VERSION AS OF 2")
    restored = {i: str(i % 3) for i in range(20)}
    assert _read(spark, path) == sorted(restored.items())
    spark.sql(f"RESTORE TABLE {t} TO VERSION AS OF {before_optimize + 1}")
    same()

    # CLONE to another odd path
    clone = root / "clone #2 %41"
    spark.sql(f"CREATE TABLE delta.`{clone}` SHALLOW CLONE {t}")
    assert _read(spark, clone) == sorted(model.items())
    assert _deltalake_rows(clone, "id", "part") == sorted(model.items())

    # a table name whose LOCATION is the odd path
    spark.sql(f"CREATE TABLE odd_location_{int(partitioned)} USING delta LOCATION '{path}'")
    try:
        name = f"odd_location_{int(partitioned)}"
        assert _rows(spark.sql(f"SELECT id, part FROM {name}")) == sorted(model.items())
        spark.sql(f"INSERT INTO {name} VALUES (200, 'x')")
        model[200] = "x"
        location = spark.sql(f"DESCRIBE DETAIL {name}").collect()[0]["location"]
        assert location.endswith("/t") and "sales" in location
        same()
    finally:
        spark.sql(f"DROP TABLE IF EXISTS odd_location_{int(partitioned)}")
    assert path.is_dir(), "dropping an external table keeps its files"

    # streaming: the odd table as source, another odd table as sink, the checkpoint at an odd path too
    sink = root / "sink ?x"
    query = (spark.readStream.format("delta").load(str(path)).select("id", "part").writeStream.format("delta")
             .option("checkpointLocation", str(root / "check #point")).trigger(availableNow=True).start(str(sink)))
    query.awaitTermination(300)
    assert query.exception() is None
    assert _read(spark, sink) == sorted(model.items())
    assert _deltalake_rows(sink, "id", "part") == sorted(model.items())

    # VACUUM removes the files no version needs, and the table still reads
    on_disk_before = {p for p in path.rglob("*.parquet") if "_delta_log" not in p.parts}
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        spark.sql(f"VACUUM {t} RETAIN 0 HOURS")
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    on_disk_after = {p for p in path.rglob("*.parquet") if "_delta_log" not in p.parts}
    assert on_disk_after < on_disk_before
    live = {path / Path(*unquote(a).split("/")) for a in _live_paths(path)}
    assert live <= on_disk_after
    same()


def _live_paths(path: Path) -> list[str]:
    """The table's current files as the log stores them (relative, URI-encoded)."""
    import pydelta

    snapshot = pydelta.load_snapshot(str(path))
    return snapshot.files().column("path").to_pylist()


def test_log_keeps_the_table_path_out_of_relative_file_paths(spark, tmp_path):
    """Files under the odd root are stored relative and escaped once: `%` as `%25`, a space as `%20`."""
    path = tmp_path / "x %20 y" / "t"
    _write(spark, path, range(3), partitioned=True)
    adds = _adds(path)
    assert adds and all(a.startswith("part=") and "%20" not in a.split("/")[0] for a in adds)
    assert (tmp_path / "x %20 y" / "t" / "part=0").is_dir()
