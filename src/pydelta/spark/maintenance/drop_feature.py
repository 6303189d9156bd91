"""DROP FEATURE on Spark: the protocol rules live in pydelta.txn.drop_feature; this module
gives them Spark's half (purging deletion vectors, rewriting files written before a type change,
rewriting every file with logical column names to remove column mapping)."""

from __future__ import annotations

import time
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
        (row IDs kept), the old files removed (delta-spark's REMOVE COLUMN MAPPING)."""
        from pydelta.spark.data_writer import file_rows_to_adds, remove_action, write_data_files
        from pydelta.spark.dml.common import materialized_names, materializes_row_ids
        from pydelta.spark.read import ROW_ID_COL, ROW_VERSION_COL, build_dataframe
        from pydelta.spark.write import engine_info
        from pydelta.txn.commit_info import Operation
        from pydelta.txn.transaction import OptimisticTransaction

        spark = self._table._spark
        snapshot = self._table.snapshot()
        files = snapshot.files()
        keep_ids = materializes_row_ids(snapshot.metadata)
        hidden = materialized_names(snapshot.metadata) if keep_ids else []
        df = build_dataframe(spark, snapshot, files, row_ids=keep_ids)
        if keep_ids:
            df = df.withColumnRenamed(ROW_ID_COL, hidden[0]).withColumnRenamed(ROW_VERSION_COL, hidden[1])
        adds = write_data_files(df, snapshot.table_root, metadata, data_change=False,
                                session_time_zone=spark.conf.get("spark.sql.session.timeZone", "UTC"),
                                hidden=hidden)
        now = int(time.time() * 1000)
        removes = [remove_action(a, data_change=False, timestamp_ms=now) for a in file_rows_to_adds(files)]
        txn = OptimisticTransaction(snapshot.table_root, snapshot, engine_info=engine_info(spark))
        txn.read_whole_table()
        txn.update_metadata(metadata)
        actions = [{"remove": r} for r in removes] + [{"add": a} for a in adds]
        txn.commit(actions, Operation("REMOVE COLUMN MAPPING", {}), data_change=False)


def drop_feature_support(table: Any, feature_name: str, truncate_history: bool = False) -> int:
    """`DeltaTable.dropFeatureSupport` / `ALTER TABLE ... DROP FEATURE`; returns the drop commit's version."""
    from pydelta.spark.write import engine_info

    root = table.snapshot().table_root
    return drop_feature(root, feature_name, truncate_history, engine_info=engine_info(table._spark),
                        rewriter=SparkRewriter(table))
