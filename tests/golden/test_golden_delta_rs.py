"""Every delta-rs golden table loads (or is refused with the right error), and its
rows equal what the independent `deltalake` package reads, where it can."""

from __future__ import annotations

from collections import Counter

import pytest

import pydelta
from pydelta import errors
from tests.golden_paths import DELTA_RS as GOLDEN_RS
from tests.helpers import canonical

TABLES = sorted(p.name for p in GOLDEN_RS.iterdir() if (p / "_delta_log").is_dir()) if GOLDEN_RS.is_dir() else []

# Tables pydelta must refuse, with the reason.
REFUSED = {
    "simple_table_features": (errors.UnsupportedFeatureError, "blahabl"),
}
# Tables where `deltalake` cannot serve as a witness, and why (checked by other tests instead).
NO_WITNESS = {
    "spark-shredded-variant-preview-delta":
        "deltalake refuses variantShredding-preview "
        "(tests/witness/test_variant_shredding_witness.py reads it with delta-spark)",
}


def _deltalake_rows(path: str):
    """All live rows as deltalake reads them (its SQL engine applies deletion vectors)."""
    import deltalake
    import pyarrow as pa
    from deltalake import QueryBuilder

    return pa.table(QueryBuilder().register("t", deltalake.DeltaTable(path)).execute("select * from t").read_all())


@pytest.mark.parametrize("name", TABLES)
def test_snapshot_loads_or_is_refused(name):
    path = str(GOLDEN_RS / name)
    if name in REFUSED:
        exc, text = REFUSED[name]
        with pytest.raises(exc, match=text):
            pydelta.load_snapshot(path)
        return
    snap = pydelta.load_snapshot(path)
    assert snap.version >= 0
    files = snap.files()
    assert files.num_rows == snap.num_files
    import deltalake

    dt = deltalake.DeltaTable(path)
    assert dt.version() == snap.version
    theirs = sorted(dt.get_add_actions(flatten=True).column("path").to_pylist())
    ours = sorted(files.column("path").to_pylist())
    assert [p.split("/")[-1] for p in ours] == [p.split("/")[-1] for p in theirs]


# Tables shipped without (some of) their data files: a read must fail clearly.
MISSING_DATA = {
    "checkpoint_with_partitions",
    "checkpoints",
    "checkpoints_vacuumed",
    "latest_not_checkpointed",
    "spark-variant-stable-feature-checkpoint",
    "table-with-domain-metadata",
    "with_checkpoint_no_last_checkpoint",
}


def _read_arrow(spark, path: str):
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    try:

        df = spark.read.format("delta").load(path)
        # Arrow export of VARIANT is not supported by PySpark: compare those as JSON text.
        variant = [f.name for f in df.schema.fields if "variant" in f.dataType.simpleString()]
        return df.drop(*variant).toArrow(), variant
    finally:
        spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")


@pytest.mark.spark
@pytest.mark.parametrize("name", sorted(MISSING_DATA))
def test_missing_data_files_fail_clearly(spark, name):
    with pytest.raises(errors.MissingDataFileError):
        spark.read.format("delta").load(str(GOLDEN_RS / name)).collect()


# deltalake reads these wrongly; the log's own per-file stats are the witness instead.
WITNESS_WRONG = {
    "table_with_edge_timestamps": "deltalake overflows INT96 timestamps in year 9999 (nanosecond cast)",
}


@pytest.mark.spark
@pytest.mark.parametrize("name", sorted(WITNESS_WRONG))
def test_rows_equal_single_row_file_stats(spark, name):
    """Every file holds one row, so its minValues are exactly that row."""
    import json
    from datetime import datetime

    path = str(GOLDEN_RS / name)
    files = pydelta.load_snapshot(path).files()
    expected = []
    for stats in files.column("stats").to_pylist():
        parsed = json.loads(stats)
        assert parsed["numRecords"] == 1
        row = {}
        for k, v in parsed["minValues"].items():
            row[k] = datetime.fromisoformat(v.replace("Z", "+00:00")) if isinstance(v, str) and "T" in v else v
        expected.append(canonical(tuple(sorted(row.items()))))
    actual, _ = _read_arrow(spark, path)
    ours = [canonical(tuple(sorted(r.items()))) for r in actual.to_pylist()]
    assert Counter(ours) == Counter(expected)


WITNESSED = [
    t for t in TABLES if t not in REFUSED and t not in MISSING_DATA and t not in WITNESS_WRONG and t not in NO_WITNESS
]


@pytest.mark.spark
@pytest.mark.parametrize("name", WITNESSED)
def test_rows_equal_deltalake(spark, name):
    path = str(GOLDEN_RS / name)
    expected = _deltalake_rows(path)
    actual, variant = _read_arrow(spark, path)
    expected = expected.drop_columns(variant)
    assert sorted(actual.column_names) == sorted(expected.column_names)
    actual = actual.select(expected.column_names)
    assert actual.num_rows == expected.num_rows
    ours = Counter(canonical(tuple(r.values())) for r in actual.to_pylist())
    theirs = Counter(canonical(tuple(r.values())) for r in expected.to_pylist())
    assert ours == theirs
