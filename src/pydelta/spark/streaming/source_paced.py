"""The Delta streaming source on PySpark 4.0 and 4.1, whose Python streaming sources have no
admission control: Spark calls `latestOffset()` with neither the batch's start nor a read limit.

The reader paces batches itself (maxFilesPerTrigger / maxBytesPerTrigger, as delta-spark admits
them) from the start it has seen: the end of each planned batch, and on a restart the offset
Spark replays through `partitions(latest, latest)` (its setLatestSeenOffset). A fresh query asks
for its first end before anything else, and so does Spark's Trigger.AvailableNow wrapper for
such sources (which then takes that one end as "all available now"); the reader cannot tell
the two apart: the driver tells it (trigger_marks.py). Under Once or AvailableNow the one end
is everything there is, as delta-spark reads it (AvailableNow in one batch rather than paced
ones). Otherwise the first end is paced from the initial offset when the stream sets
maxFilesPerTrigger or maxBytesPerTrigger itself, and is everything there is when it does not
(delta-spark's default of 1000 files a batch applies from the second batch on). Schema
tracking needs the start of every batch and is refused here with the PySpark it needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql.datasource import InputPartition

from pydelta.errors import DeltaNotImplementedError
from pydelta.spark.streaming import trigger_marks
from pydelta.spark.streaming.source import DeltaStreamReader, _Admission
from pydelta.spark.streaming.source_offsets import BASE_INDEX, SourceOffset


class PacedStreamReader(DeltaStreamReader):
    """A Delta stream reader that remembers where the next batch starts."""

    def _setup(self, options: Mapping[str, Any], schema: Any) -> None:
        self._start: dict[str, Any] | None = None
        self._initial_offset: dict[str, Any] | None = None
        self._options = dict(options)
        super()._setup(options, schema)
        if self.opts.schema_tracking is not None:
            import pyspark

            raise DeltaNotImplementedError(
                "The Delta streaming source option schemaTrackingLocation needs PySpark 4.2 or newer (Python "
                f"streaming sources learn where each batch starts there); this is PySpark {pyspark.__version__}")

    def initialOffset(self) -> dict[str, Any]:
        offset = self._initial()
        self._start = offset
        return offset

    def _initial(self) -> dict[str, Any]:
        if self._initial_offset is None:  # computed once: the first end and the batch's start must agree
            self._initial_offset = super().initialOffset()
        return self._initial_offset

    def latestOffset(self) -> dict[str, Any]:  # type: ignore[override]  # PySpark < 4.2 passes no start and no limit
        self._ready()
        if trigger_marks.runs_to_end(self._options):  # Once / AvailableNow: delta-spark reads everything
            return self._everything()
        admission = _Admission.from_options(self.opts)
        if self._start is not None:
            return self._batch_end(self._start, admission)
        if self.opts.max_files is not None or self.opts.max_bytes is not None:
            return self._batch_end(self._initial(), admission)
        return self._everything()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        planned = super().partitions(start, end)
        self._start = end
        return planned

    def commit(self, end: dict[str, Any]) -> None:
        if self._start is None:
            self._start = end

    def _everything(self) -> dict[str, Any]:
        """The offset after the latest commit: a batch ending there takes all there is."""
        return SourceOffset(self.table_id, self._latest().version + 1, BASE_INDEX, False).to_dict()
