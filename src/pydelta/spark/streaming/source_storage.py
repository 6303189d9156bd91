"""The object-store settings of a streaming source's table, carried to the processes that read it.

A Delta streaming source runs in Python processes Spark starts (the source's own, and the
workers that read its files), which have no Spark session: they cannot derive a bucket's
settings from the session's Hadoop configuration (fs.s3a.*) as the driver does
(`hadoop_storage.install`). So `DataStreamReader.load` of a Delta table, in the driver, adds
the options the log core would use for the table (`default_storage_options`) as one reader
option; the source opens the table with them (`carried`), and its read spec takes them to the
workers, which open the table's storage with them too: nothing is registered process-wide.
Spark redacts the option's value in plans and the UI when it holds a secret (its value names
`aws_secret_access_key`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydelta.spark.base.option_keys import option_value
from pydelta.spark.streaming import trigger_marks

# The reader option carrying the table's storage options (a JSON object), set by `load`.
OPTION = "pydelta.storageOptions"
# The reader option carrying the session time zone, for a zone-less startingTimestamp.
ZONE_OPTION = "pydelta.sessionTimeZone"

def install() -> None:
    """Hook DataStreamReader.format and .load once per process (classic, and Connect's)."""
    from pyspark.sql.streaming.readwriter import DataStreamReader

    from pydelta.spark.base.connect_session import connect_classes

    connect = connect_classes()
    for cls in (DataStreamReader, *([connect.stream_reader] if connect else [])):
        _hook(cls)


def _hook(cls: type) -> None:
    if cls.__dict__.get("_pydelta_storage_hooked", False):
        return
    original_format, original_load = cls.format, cls.load  # type: ignore[attr-defined]

    def _format(self: Any, source: str) -> Any:
        self._pydelta_format = source
        return original_format(self, source)

    def _load(self: Any, path: str | None = None, format: str | None = None,  # noqa: A002 - PySpark's names
              schema: Any = None, **options: Any) -> Any:
        source = format or getattr(self, "_pydelta_format", None)
        if isinstance(path, str) and isinstance(source, str) and source.lower() == "delta":
            from pydelta.log.storage import default_storage_options, to_local_path

            path = to_local_path(path)  # the caller's working directory, not the Python worker's

            from pydelta.spark.base.conf import session_time_zone
            from pydelta.spark.base.connect_session import reader_session

            self.option(ZONE_OPTION, session_time_zone(reader_session(self)))
            derived = default_storage_options(path)
            if derived:
                self.option(OPTION, json.dumps(dict(derived), sort_keys=True))
            if trigger_marks.needed():
                self.option(trigger_marks.TOKEN_OPTION, trigger_marks.new_token())
        return original_load(self, path, format, schema, **options)

    # Deliberate patches of PySpark's methods (setattr: mypy knows no such attributes on `type`).
    setattr(cls, "format", _format)  # noqa: B010 - see above
    setattr(cls, "load", _load)  # noqa: B010 - see above
    setattr(cls, "_pydelta_storage_hooked", True)  # noqa: B010 - the marker checked above


def carried(options: Mapping[str, Any]) -> dict[str, str] | None:
    """The storage options a reader's `options` carry from the driver (None when there are none)."""
    raw = option_value(options, OPTION)
    if not raw:
        return None
    return {str(k): str(v) for k, v in json.loads(str(raw)).items()}
