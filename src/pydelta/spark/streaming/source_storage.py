"""The object-store settings of a streaming source's table, carried to the processes that read it.

A Delta streaming source runs in Python processes Spark starts (the source's own, and the
workers that read its files), which have no Spark session: they cannot derive a bucket's
settings from the session's Hadoop configuration (fs.s3a.*) as the driver does
(`hadoop_storage.install`). So `DataStreamReader.load` of a Delta table, in the driver, adds
the options the log core would use for the table (`default_storage_options`) as one reader
option; the source registers them for the table's bucket in its process
(`use_bucket_options`), and its read spec takes them to the workers. Spark redacts the option's
value in plans and the UI when it holds a secret (its value names `aws_secret_access_key`).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

# The reader option carrying the table's storage options (a JSON object), set by `load`.
OPTION = "pydelta.storageOptions"

_ORIGINAL: dict[str, Any] = {}


def install() -> None:
    """Hook DataStreamReader.format and .load once per process."""
    from pyspark.sql.streaming.readwriter import DataStreamReader

    if getattr(DataStreamReader, "_pydelta_storage_hooked", False):
        return
    _ORIGINAL["format"], _ORIGINAL["load"] = DataStreamReader.format, DataStreamReader.load
    # Deliberate patches of PySpark's methods (hence the method-assign ignores).
    DataStreamReader.format = _format  # type: ignore[method-assign]
    DataStreamReader.load = _load  # type: ignore[method-assign]
    setattr(DataStreamReader, "_pydelta_storage_hooked", True)  # the marker checked above


def _format(self: Any, source: str) -> Any:
    self._pydelta_format = source
    return _ORIGINAL["format"](self, source)


def _load(self: Any, path: str | None = None, format: str | None = None,  # noqa: A002 - PySpark's names
          schema: Any = None, **options: Any) -> Any:
    source = format or getattr(self, "_pydelta_format", None)
    if isinstance(path, str) and isinstance(source, str) and source.lower() == "delta":
        from pydelta.log.storage import default_storage_options

        derived = default_storage_options(path)
        if derived:
            self.option(OPTION, json.dumps(dict(derived), sort_keys=True))
    return _ORIGINAL["load"](self, path, format, schema, **options)


def apply(options: Mapping[str, Any], path: str) -> dict[str, str] | None:
    """Register the storage options a reader's `options` carry for the bucket of `path` in this
    process; returns them (None when there are none)."""
    raw = next((v for k, v in options.items() if str(k).lower() == OPTION.lower()), None)
    if not raw:
        return None
    from pydelta.log.storage import use_bucket_options

    carried = {str(k): str(v) for k, v in json.loads(str(raw)).items()}
    use_bucket_options(path, carried)
    return carried
