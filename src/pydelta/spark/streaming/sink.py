"""`df.writeStream.format("delta")`: delta-spark's DeltaSink, run as a foreachBatch query.

PySpark keeps the stream writer's settings only in the JVM, so (as for the batch
writer, `spark/patches/reader.py`) format, options, partitionBy and outputMode are recorded
on the Python object. For "delta", `start()` / `toTable()` validate everything they
can up front, then run the query with foreachBatch: each micro-batch goes through
pydelta's batch write path (Spark's own Parquet writer) as one commit carrying
`txn(appId=query id, version=batch id)` and a STREAMING UPDATE commitInfo. A batch
that Spark replays after a crash finds its txn already committed and is skipped,
which is how DeltaSink gets exactly-once output. Every other format is untouched.

On a Spark Connect client the same foreachBatch query runs on the server: Connect's writer
keeps its settings in its plan message, and ConnectBatchWriter (pickled to the server's Python
worker, where pydelta is installed) commits each micro-batch the same way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydelta.errors import DeltaAnalysisError, DeltaError, DeltaIllegalArgumentError, DeltaUnsupportedOptionError
from pydelta.spark.base._typing import DataFrame, SparkSession
from pydelta.spark.base.engine import SparkEngine, try_table_snapshot
from pydelta.spark.base.option_keys import option_value
from pydelta.spark.base.spark_errors import boundary, to_pyspark
from pydelta.spark.base.writer_state import _is_delta, _state
from pydelta.spark.streaming import trigger_marks

# Spark's local property naming the running query (StreamExecution.QUERY_ID_KEY), as DeltaSink reads it.
QUERY_ID_KEY = "sql.streaming.queryId"
CHECKPOINT_CONF = "spark.sql.streaming.checkpointLocation"
# Options Spark or the sink itself consume; they are not write options.
_STREAM_OPTIONS = ("checkpointLocation", "path", "queryName")
# Batch write options that make no sense per micro-batch (the sink sets txn itself), refused by name.
_REFUSED = ("replaceWhere", "partitionOverwriteMode", "txnAppId", "txnVersion")
_OUTPUT_MODES = {"append": "Append", "complete": "Complete", "update": "Update"}

_ORIGINAL: dict[str, Callable[..., Any]] = {}


@dataclass(frozen=True)
class SinkSpec:
    """Where and how every micro-batch of one query is written."""

    path: str
    output_mode: str  # "Append" or "Complete" (OutputMode.toString in delta-spark)
    partition_by: list[str] | None
    options: dict[str, Any]  # write options for pydelta's batch path

    def batch_options(self, query_id: str, batch_id: int) -> tuple[str, dict[str, Any]]:
        """(save mode, write options) of one micro-batch: complete mode overwrites, append appends."""
        opts = dict(self.options)
        if self.output_mode == "Complete":
            mode = "overwrite"
            opts["partitionOverwriteMode"] = "static"  # the whole table, whatever the session says
        else:
            mode = "append"
            # delta-spark: a stream may overwrite the schema in complete mode only.
            opts = {k: v for k, v in opts.items() if k.lower() != "overwriteschema"}
        opts["txnAppId"], opts["txnVersion"] = query_id, batch_id
        return mode, opts


def _get(options: dict[str, Any], key: str) -> Any:
    return option_value(options, key)


def output_mode(value: str | None) -> str:
    mode = _OUTPUT_MODES.get((value or "append").lower())
    if mode is None:
        raise DeltaIllegalArgumentError(
            f"Unknown output mode {value}. Accepted output modes are 'append', 'complete', 'update'")
    if mode == "Update":
        raise DeltaAnalysisError(
            "[DELTA_UNSUPPORTED_OUTPUT_MODE] Data source delta does not support Update output mode")
    return mode


def _has_null_type(dtype: Any) -> bool:
    from pyspark.sql.types import ArrayType, MapType, NullType, StructType

    if isinstance(dtype, NullType):
        return True
    if isinstance(dtype, StructType):
        return any(_has_null_type(f.dataType) for f in dtype.fields)
    if isinstance(dtype, ArrayType):
        return _has_null_type(dtype.elementType)
    if isinstance(dtype, MapType):
        return _has_null_type(dtype.keyType) or _has_null_type(dtype.valueType)
    return False


def make_spec(
    df: DataFrame, path: str, mode: str | None, partition_by: list[str] | None, options: dict[str, Any]
) -> SinkSpec:
    """Validate what can be validated before the query starts (delta-spark fails these at start too)."""
    from pydelta.log.storage import to_local_path
    from pydelta.protocol.schema import parse_schema
    from pydelta.spark.write.dataframe import _plan_metadata
    from pydelta.spark.write.options import parse_write_options, session_conf

    spark = df.sparkSession
    out_mode = output_mode(mode)
    if _get(options, "checkpointLocation") is None and not spark.conf.get(CHECKPOINT_CONF, None):
        raise DeltaAnalysisError(
            'checkpointLocation must be specified either through option("checkpointLocation", ...) '
            f'or SparkSession.conf.set("{CHECKPOINT_CONF}", ...)')
    for key in _REFUSED:
        if _get(options, key) is not None:
            raise DeltaUnsupportedOptionError(
                f"The option {key} is not supported by a Delta streaming sink (each micro-batch commits with "
                "txnAppId = the query id and txnVersion = the batch id)", option=key)
    if _has_null_type(df.schema):
        raise DeltaAnalysisError("Delta doesn't accept NullTypes in the schema for streaming writes.")
    write_opts = {k: v for k, v in options.items() if k.lower() not in {s.lower() for s in _STREAM_OPTIONS}}
    spec = SinkSpec(to_local_path(path), out_mode, list(partition_by) if partition_by else None, write_opts)
    # Parse the options and check the schema against the table as it is now: a typo or an
    # incompatible stream fails here rather than in the first batch.
    save_mode, batch_opts = spec.batch_options("validation", 0)
    conf = session_conf(spark)
    parsed = parse_write_options(save_mode, spec.partition_by, batch_opts, conf)
    snapshot = try_table_snapshot(spark, spec.path)
    if snapshot is not None:
        _plan_metadata(snapshot, parse_schema(df.schema.json()), parsed, spark)
    return spec


def write_batch(spec: SinkSpec, df: DataFrame, batch_id: int, query_id: str) -> int | None:
    """Commit one micro-batch; None when this (query id, batch id) already committed (a replay)."""
    from pydelta.spark.write.dataframe import write_dataframe
    from pydelta.txn.commit_info import Operation

    mode, opts = spec.batch_options(query_id, batch_id)
    return write_dataframe(df, spec.path, mode, spec.partition_by, opts,
                           operation=Operation.streaming_update(spec.output_mode, query_id, batch_id))


def _stream_error(error: DeltaError) -> BaseException:
    """`error` as its pydelta/pyspark class that is also a StreamingQueryException (what delta-spark users catch)."""
    from pyspark.errors import StreamingQueryException

    converted = to_pyspark(error)
    base = type(converted)
    if isinstance(converted, StreamingQueryException):
        return converted
    try:
        cls: type[BaseException] = type(base.__name__, (base, StreamingQueryException), {"__module__": base.__module__})
    except TypeError:
        return converted
    new = cls.__new__(cls)
    new.__dict__.update(converted.__dict__)
    new.args = converted.args
    return new


@functools.cache
def _query_class() -> type:
    from pyspark.errors import StreamingQueryException
    from pyspark.sql.streaming.query import StreamingQuery

    class DeltaStreamingQuery(StreamingQuery):
        """A StreamingQuery whose failure re-raises the pydelta error that stopped it."""

        def __init__(self, jsq: Any, failure: dict[str, BaseException]) -> None:
            super().__init__(jsq)
            self._pydelta_failure = failure

        def _reraise(self, e: BaseException) -> None:
            error = self._pydelta_failure.get("error")
            if isinstance(error, DeltaError):
                raise _stream_error(error) from e
            raise e

        def awaitTermination(self, timeout: int | None = None) -> bool | None:  # noqa: N802
            try:
                return super().awaitTermination(timeout)
            except StreamingQueryException as e:
                self._reraise(e)
                raise

        def processAllAvailable(self) -> None:  # noqa: N802
            try:
                super().processAllAvailable()
            except StreamingQueryException as e:
                self._reraise(e)
                raise

    DeltaStreamingQuery.__qualname__ = "DeltaStreamingQuery"
    return DeltaStreamingQuery


def start_query(writer: Any, spec: SinkSpec) -> Any:
    """Run the writer's query with a foreachBatch function writing each batch to `spec.path`."""
    spark = writer._spark
    failure: dict[str, BaseException] = {}

    def write(batch_df: Any, batch_id: int) -> None:
        # Spark sets this on the thread that calls us; it is <checkpointLocation>/metadata's "id".
        query_id = spark.sparkContext.getLocalProperty(QUERY_ID_KEY)
        if not query_id:
            raise DeltaIllegalArgumentError("the streaming query id is unknown; cannot commit exactly once")
        try:
            write_batch(spec, batch_df, int(batch_id), query_id)
        except BaseException as e:
            failure["error"] = e
            raise

    _ORIGINAL["foreachBatch"](writer, write)
    return _query_class()(writer._jwrite.start(), failure)


def _table_location(spark: Any, name: str, options: dict[str, Any]) -> tuple[str, bool]:
    """(location of the Delta table `name`, whether the name is new and must be registered)."""
    from pydelta.errors import TableAlreadyExistsError
    from pydelta.spark.base.catalog import default_location, delta_location, lookup

    entry = lookup(spark, name)
    if entry is not None and (entry.provider or "").lower() != "delta":
        raise TableAlreadyExistsError(f"[TABLE_OR_VIEW_ALREADY_EXISTS] table {name} exists and is not a Delta table")
    existing = delta_location(spark, name, entry)
    if existing is not None:
        return existing, entry is None
    return _get(options, "path") or default_location(spark, name), True


# ---- hooks on DataStreamWriter -------------------------------------------------------------


def _record(name: str) -> Callable[..., Any]:
    original = _ORIGINAL[name]

    if name == "format":
        def format(self: Any, source: str) -> Any:  # noqa: A001
            _state(self)["format"] = source
            return self if _is_delta(source) else original(self, source)
        return format
    if name == "option":
        def option(self: Any, key: str, value: Any) -> Any:
            _state(self)["options"][key] = value
            return original(self, key, value)
        return option
    if name == "options":
        def options(self: Any, **opts: Any) -> Any:
            _state(self)["options"].update(opts)
            return original(self, **opts)
        return options
    if name == "trigger":  # kept for trigger_marks: Spark keeps the trigger only in the JVM
        def trigger(self: Any, *args: Any, **kwargs: Any) -> Any:
            _state(self)["trigger"] = trigger_marks.trigger_kind(kwargs)
            return original(self, *args, **kwargs)
        return trigger
    if name == "outputMode":
        def outputMode(self: Any, outputMode: str) -> Any:  # noqa: N802, N803
            _state(self)["mode"] = outputMode
            return original(self, outputMode)
        return outputMode
    if name == "partitionBy":
        # Kept on the Python side until start(): Spark's foreachBatch refuses partitioning.
        def partitionBy(self: Any, *cols: Any) -> Any:  # noqa: N802
            if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
                cols = tuple(cols[0])
            _state(self)["partition_by"] = list(cols)
            return self
        return partitionBy
    # foreach / foreachBatch replace the sink, as in Spark (a later start() is not Delta's).
    def sink(self: Any, f: Any) -> Any:
        _state(self)["format"] = name
        return original(self, f)
    return sink


def _flush_partition_by(writer: Any) -> None:
    cols = _state(writer)["partition_by"]
    if cols is not None:
        _ORIGINAL["partitionBy"](writer, *cols)


def _settings(writer: Any, format: str | None, outputMode: str | None, partitionBy: Any,  # noqa: A002, N803
              queryName: str | None, options: dict[str, Any]) -> bool:
    """Apply start()/toTable() keyword settings as PySpark does; True when the sink is Delta."""
    writer.options(**options)
    if outputMode is not None:
        writer.outputMode(outputMode)
    if partitionBy is not None:
        writer.partitionBy(*([partitionBy] if isinstance(partitionBy, str) else partitionBy))
    if format is not None:
        writer.format(format)
    if queryName is not None:
        writer.queryName(queryName)
    if _is_delta(_state(writer)["format"]):
        return True
    _flush_partition_by(writer)
    return False


def _start(original: Callable[..., Any]) -> Callable[..., Any]:
    def start(self: Any, path: Any=None, format: Any=None, outputMode: Any=None,  # noqa: A002, N803
              partitionBy: Any=None, queryName: Any=None, **options: Any) -> Any:  # noqa: N803
        trigger_marks.mark(self._df, _state(self).get("trigger"))
        if not _settings(self, format, outputMode, partitionBy, queryName, options):
            return original(self, path)
        st = _state(self)
        path = path or _get(st["options"], "path")
        if path is None:
            raise DeltaIllegalArgumentError("'path' is not specified")
        return start_query(self, make_spec(self._df, path, st["mode"], st["partition_by"], st["options"]))

    return start


def _to_table(original: Callable[..., Any], prepare_session: Callable[[Any], None]) -> Callable[..., Any]:
    def toTable(self: Any, tableName: Any, format: Any=None, outputMode: Any=None,  # noqa: A002, N802, N803
                partitionBy: Any=None, queryName: Any=None, **options: Any) -> Any:  # noqa: N803
        trigger_marks.mark(self._df, _state(self).get("trigger"))
        if not _settings(self, format, outputMode, partitionBy, queryName, options):
            return original(self, tableName)
        from pydelta.spark.base.catalog import register_table

        st = _state(self)
        location, register = _table_location(self._spark, tableName, st["options"])
        spec = make_spec(self._df, location, st["mode"], st["partition_by"], st["options"])
        if register:  # as Spark's toTable: a new name enters the catalog before the query starts
            prepare_session(self._spark)
            register_table(self._spark, tableName, location, self._df.schema)
        return start_query(self, spec)

    return toTable


class ConnectBatchWriter:
    """The foreachBatch function of a Delta sink started from a Spark Connect client.

    Spark Connect runs foreachBatch functions in a Python worker on the server (pydelta installed
    there), on a Connect session of its own: each micro-batch is one commit through the same
    batch path as on classic sessions, with txn(appId = query id, version = batch id). The query id
    is the one Spark keeps in `<checkpointLocation>/metadata`, so a batch replayed after any crash
    or client kill, by this query or a restart of it, finds its txn committed and is skipped."""

    def __init__(self, spec: SinkSpec, checkpoint: str) -> None:
        self.spec = spec
        self.checkpoint = checkpoint

    def query_id(self, spark: SparkSession) -> str:
        """The query id Spark keeps in the checkpoint, read through the worker session's storage."""
        import json

        from pydelta.log.storage import to_local_path

        root = to_local_path(self.checkpoint).rstrip("/")
        return str(json.loads(SparkEngine(spark).storage(root).read(f"{root}/metadata"))["id"])

    def __call__(self, batch_df: DataFrame, batch_id: int) -> None:
        # The worker's session is a clone of the client's: pydelta's settings are already on it;
        # this process's log clients still need the server's fs.s3a.* settings for s3a:// tables.
        from pydelta.spark.base.hadoop_storage import install_s3a_options

        install_s3a_options(batch_df.sparkSession)
        write_batch(self.spec, batch_df, int(batch_id), self.query_id(batch_df.sparkSession))


def _connect_start(original: Any, prepare_session: Callable[[Any], None]) -> Any:
    """Connect's DataStreamWriter._start_internal (behind start and toTable): a Delta sink runs as
    a foreachBatch query (ConnectBatchWriter); every other sink is Spark's."""

    def _start_internal(self: Any, path: str | None = None, tableName: str | None = None,  # noqa: N803
                        format: str | None = None, outputMode: str | None = None,  # noqa: A002, N803
                        partitionBy: Any = None, queryName: str | None = None, **options: Any) -> Any:  # noqa: N803
        self.options(**options)
        if outputMode is not None:
            self.outputMode(outputMode)
        if partitionBy is not None:
            self.partitionBy(partitionBy)
        if format is not None:
            self.format(format)
        if queryName is not None:
            self.queryName(queryName)
        proto = self._write_proto
        trigger_marks.refuse_over_connect(self._write_stream._child, _connect_trigger(proto))
        fmt = str(proto.format or "").lower()
        # toTable without a format writes in the table's own: Delta when the table is one.
        into_delta_table = tableName is not None and not fmt and _names_delta_table(self._session, (tableName,), {})
        if fmt != "delta" and not into_delta_table:
            return original(self, path=path, tableName=tableName)
        return _start_connect_delta(self, path, tableName, prepare_session)

    _start_internal.__name__ = original.__name__
    return _start_internal


def _connect_trigger(proto: Any) -> str:
    """The trigger a Connect writer's proto sets, named as trigger_marks names them."""
    return "once" if proto.once else "availableNow" if proto.available_now else "other"


def _start_connect_delta(writer: Any, path: str | None, table_name: str | None,
                         prepare_session: Callable[[Any], None]) -> Any:
    import uuid

    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

    spark, proto = writer._session, writer._write_proto
    df = ConnectDataFrame(writer._write_stream._child, spark)
    options = dict(proto.options)
    partition_by = list(proto.partitioning_column_names) or None
    register = False
    if table_name is not None:
        path, register = _table_location(spark, table_name, options)
    path = path or _get(options, "path")
    if path is None:
        raise DeltaIllegalArgumentError("'path' is not specified")
    spec = make_spec(df, path, proto.output_mode or None, partition_by, options)
    checkpoint = _get(options, "checkpointLocation")
    if checkpoint is None:  # the session's default: Spark's own choice of sub-directory, made here
        checkpoint = f"{spark.conf.get(CHECKPOINT_CONF).rstrip('/')}/{proto.query_name or uuid.uuid4()}"
        writer.option("checkpointLocation", checkpoint)
    if register and table_name is not None:  # as Spark's toTable: a new name enters the catalog first
        from pydelta.spark.base.catalog import register_table

        prepare_session(spark)
        register_table(spark, table_name, path, df.schema)
    while len(proto.partitioning_column_names) > 0:  # foreachBatch takes no partitioning: the spec has it
        proto.partitioning_column_names.pop()
    proto.ClearField("path")
    proto.ClearField("table_name")
    writer.foreachBatch(ConnectBatchWriter(spec, str(checkpoint)))
    return writer._pydelta_start_internal()


def _names_delta_table(spark: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    name = kwargs.get("tableName") or (args[0] if args else None)
    if not isinstance(name, str):
        return False
    from pydelta.spark.base.catalog import delta_table_location

    try:
        return delta_table_location(spark, name) is not None
    except Exception:  # noqa: BLE001 - not a table pydelta can see: Spark's
        return False


def _install_connect(prepare_session: Callable[[Any], None]) -> None:
    from pydelta.spark.base.connect_session import connect_classes

    connect = connect_classes()
    if connect is None or connect.stream_writer.__dict__.get("_pydelta_hooked", False):
        return
    # A deliberate patch of Connect's private method (getattr/setattr: mypy knows no such attributes on `type`).
    original = getattr(connect.stream_writer, "_start_internal")  # noqa: B009 - see above
    setattr(connect.stream_writer, "_pydelta_start_internal", original)  # noqa: B010 - see above
    patched = boundary(_connect_start(original, prepare_session))
    setattr(connect.stream_writer, "_start_internal", patched)  # noqa: B010 - see above
    setattr(connect.stream_writer, "_pydelta_hooked", True)  # noqa: B010 - the marker checked above


def install(prepare_session: Callable[[Any], None]) -> None:
    """Hook DataStreamWriter once per process (classic, and Connect's). `prepare_session` makes
    a writer's session serve the `delta` source before toTable names a new table."""
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    _install_connect(prepare_session)

    if getattr(DataStreamWriter, "_pydelta_hooked", False):
        return
    for name in ("format", "option", "options", "outputMode", "partitionBy", "foreach", "foreachBatch", "trigger"):
        _ORIGINAL[name] = getattr(DataStreamWriter, name)
        setattr(DataStreamWriter, name, _record(name))
    _ORIGINAL["start"], _ORIGINAL["toTable"] = DataStreamWriter.start, DataStreamWriter.toTable
    # Non-Delta sinks reach the originals with no keyword settings: those already went through the hooks.
    # Deliberate patches of PySpark's methods (hence the method-assign ignores).
    DataStreamWriter.start = boundary(_start(_ORIGINAL["start"]))  # type: ignore[method-assign]
    DataStreamWriter.toTable = boundary(_to_table(_ORIGINAL["toTable"], prepare_session))  # type: ignore[method-assign]
    setattr(DataStreamWriter, "_pydelta_hooked", True)  # noqa: B010 - the marker checked above; mypy: not on the class
