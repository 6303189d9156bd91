"""DeltaTable: the delta-spark Python API, served by pydelta."""

from __future__ import annotations

import os
from typing import Any

from pydelta.errors import DeltaError, DeltaTableNotFoundError
from pydelta.log.snapshot import Snapshot, load_snapshot


class DeltaTable:
    """A Delta table at a path, with the methods of delta-spark's `DeltaTable`."""

    def __init__(self, spark: Any, path: str, alias: str | None = None) -> None:
        from pydelta.spark.session import enable

        self._spark = enable(spark)
        self._path = path
        self._alias = alias
        self._snapshot: Snapshot | None = None

    # ---- construction --------------------------------------------------------------
    @classmethod
    def forPath(cls, sparkSession: Any, path: str, hadoopConf: dict[str, str] | None = None) -> "DeltaTable":
        table = cls(sparkSession, path)
        table.snapshot()  # fails now, as delta-spark does, when there is no table
        return table

    @classmethod
    def isDeltaTable(cls, sparkSession: Any, identifier: str) -> bool:
        log_dir = os.path.join(identifier, "_delta_log")
        if not os.path.isdir(log_dir):
            return False
        try:
            load_snapshot(identifier, check_protocol=False)
            return True
        except DeltaTableNotFoundError:
            return False
        except DeltaError:
            return True  # it is a Delta table, even if pydelta cannot read it

    # ---- state -----------------------------------------------------------------------
    @property
    def path(self) -> str:
        return self._path

    def snapshot(self) -> Snapshot:
        """The latest snapshot, updated incrementally on each call."""
        if self._snapshot is None:
            self._snapshot = load_snapshot(self._path)
        else:
            self._snapshot = self._snapshot.update()
        return self._snapshot

    def toDF(self) -> Any:
        from pydelta.spark.read import read_snapshot

        df = read_snapshot(self._spark, self.snapshot())
        return df.alias(self._alias) if self._alias else df

    def alias(self, aliasName: str) -> "DeltaTable":
        table = DeltaTable(self._spark, self._path, aliasName)
        table._snapshot = self._snapshot
        return table
