"""DROP FEATURE on Spark: the protocol rules live in pydelta.txn.drop_feature; this module
gives them Spark's half (purging deletion vectors, rewriting files written before a type change,
rewriting every file with logical column names to remove column mapping)."""

from __future__ import annotations

from typing import Any

from pydelta.protocol.actions import Metadata
from pydelta.txn.drop_feature import drop_feature


class SparkRewriter:
    """pydelta.txn.drop_feature.DataRewriter on a DeltaTable."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def purge_deletion_vectors(self) -> None:
        from pydelta.spark.maintenance.optimize import optimize

        optimize(self._table, purge=True)

    def rewrite_files(self, paths: list[str]) -> None:
        from pydelta.spark.maintenance.optimize import optimize

        optimize(self._table, rewrite_paths=paths)

    def remove_column_mapping(self, metadata: Metadata) -> None:
        """One commit: the metadata without column mapping, every file rewritten with logical names
        and no field ids (row IDs kept), the old files removed (delta-spark's REMOVE COLUMN MAPPING)."""
        from pydelta.spark.ddl.remove_column_mapping import rewrite_and_commit

        rewrite_and_commit(self._table._spark, self._table.snapshot(), metadata)


def drop_feature_support(table: Any, feature_name: str, truncate_history: bool = False) -> int:
    """`DeltaTable.dropFeatureSupport` / `ALTER TABLE ... DROP FEATURE`; returns the drop commit's version."""
    from pydelta.spark.base.transactions import engine_info

    snapshot = table.snapshot()
    return drop_feature(snapshot.table_root, feature_name, truncate_history, engine_info=engine_info(table._spark),
                        rewriter=SparkRewriter(table), storage=snapshot.storage)
