"""pydelta errors as the pyspark exceptions delta-spark raises, at the API boundary.

delta-spark's errors reach Python as pyspark's captured `AnalysisException`,
`IllegalArgumentException`, `ParseException`, `UnsupportedOperationException` (or
`UnknownException` for Delta's own runtime exceptions), carrying an error class such as
`DELTA_MISSING_DELTA_TABLE`. `pydelta.errors` stays pure Python; here, at the public entry
points (DeltaTable and its builders, the reader/writer hooks, `spark.sql`), a DeltaError is
re-raised as an instance of a subclass of *both* its own pydelta class and that pyspark class,
so `except pydelta.errors.DeltaTableNotFoundError` and `except AnalysisException` (with
`e.getCondition()`) both work. Errors that are not DeltaErrors pass through unchanged.

pyspark is imported lazily (only when an error is converted), so importing this module, and
the modules decorated with it, does not import pyspark.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, TypeVar

import pydelta.errors as E
from pydelta.spark.base._typing import SparkSession
from pydelta.spark.base.jvm import jvm

F = TypeVar("F", bound=Callable[..., Any])

# SQLSTATEs of the error classes used here (delta-spark's delta-error-classes.json, Spark's error-conditions.json).
SQL_STATES: dict[str, str] = {
    "DELTA_TABLE_NOT_FOUND": "42P01",
    "DELTA_MISSING_DELTA_TABLE": "42P01",
    "DELTA_PATH_DOES_NOT_EXIST": "42K03",
    "PATH_NOT_FOUND": "42K03",
    "TABLE_OR_VIEW_NOT_FOUND": "42P01",
    "DELTA_TABLE_ALREADY_EXISTS": "42P07",
    "TABLE_OR_VIEW_ALREADY_EXISTS": "42P07",
    "DELTA_PATH_EXISTS": "42K04",
    "DELTA_CANNOT_REPLACE_MISSING_TABLE": "42P01",
    "DELTA_TABLE_FOR_PATH_UNSUPPORTED_HADOOP_CONF": "0AKDC",
    "DELTA_CREATE_TABLE_MISSING_TABLE_NAME_OR_LOCATION": "42601",
    "DELTA_UNSUPPORTED_TIME_TRAVEL_MULTIPLE_FORMATS": "42613",
    "DELTA_INVALID_TIMESTAMP_FORMAT": "22007",
    "DELTA_TIMESTAMP_INVALID": "42816",
    "DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE": "428H2",
    "DELTA_UNSUPPORTED_FEATURES_IN_CONFIG": "56038",
    "DELTA_UNSUPPORTED_FEATURES_FOR_READ": "56038",
    "DELTA_UNSUPPORTED_FEATURES_FOR_WRITE": "56038",
    "DELTA_VERSIONS_NOT_CONTIGUOUS": "KD00C",
    "DELTA_VERSION_NOT_FOUND": "22003",
    "DELTA_TIMESTAMP_GREATER_THAN_COMMIT": "42816",
    "DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION": "42816",
    "DELTA_CANNOT_RESTORE_TIMESTAMP_EARLIER": "22003",
    "DELTA_METADATA_MISMATCH": "42KDG",
    "DELTA_FAILED_TO_MERGE_FIELDS": "22005",
    "DELTA_NOT_NULL_CONSTRAINT_VIOLATED": "23502",
    "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES": "23001",
    "DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE": "21506",
    "DELTA_ZORDERING_ON_PARTITION_COLUMN": "42P10",
    "DELTA_INVALID_PROTOCOL_DOWNGRADE": "KD004",
    "DELTA_MERGE_MISSING_WHEN": "42601",
    "DELTA_UNSUPPORTED_OUTPUT_MODE": "0AKDC",
    "DELTA_MISSING_CHANGE_DATA": "KD002",
    "DELTA_INVALID_CDC_RANGE": "22003",
    "DELTA_CDC_START_VERSION_AFTER_LATEST": "22003",
    "DELTA_NO_START_FOR_CDC_READ": "42601",
    "DELTA_CDC_READ_NULL_RANGE_BOUNDARY": "22004",
    "DELTA_ILLEGAL_OPTION": "42616",
    "DELTA_INVALID_SOURCE_VERSION": "XXKDS",
    "DELTA_SCHEMA_CHANGED_WITH_VERSION": "KD007",
    "DELTA_SOURCE_TABLE_IGNORE_CHANGES": "0A000",
    "DELTA_SOURCE_IGNORE_DELETE": "0A000",
    "DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG": "42KD4",
    "DELTA_CANNOT_DROP_CHECK_CONSTRAINT_FEATURE": "0AKDE",
    "DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD": "22KD0",
    "DELTA_FEATURE_DROP_CONFLICT_REVALIDATION_FAIL": "40000",
    "DELTA_FEATURE_DROP_DEPENDENT_FEATURE": "55000",
    "DELTA_FEATURE_DROP_FEATURE_IS_DELTA_PROPERTY": "42000",
    "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT": "55000",
    "DELTA_FEATURE_DROP_HISTORICAL_VERSIONS_EXIST": "22KD0",
    "DELTA_FEATURE_DROP_HISTORY_TRUNCATION_NOT_ALLOWED": "42000",
    "DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE": "0AKDC",
    "DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE": "0AKDC",
    "DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD": "22KD0",
    "DELTA_FEATURE_CAN_ONLY_DROP_CHECKPOINT_PROTECTION_WITH_HISTORY_TRUNCATION": "55000",
    "CAST_OVERFLOW_IN_TABLE_INSERT": "22003",
    "CAST_INVALID_INPUT": "22018",
}

ANALYSIS = "AnalysisException"
ILLEGAL_ARGUMENT = "IllegalArgumentException"
PARSE = "ParseException"
UNSUPPORTED = "UnsupportedOperationException"
ARITHMETIC = "ArithmeticException"
NUMBER_FORMAT = "NumberFormatException"
UNKNOWN = "UnknownException"  # delta-spark's DeltaRuntimeException / IllegalStateException family

_PREFIX = re.compile(r"^\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]\s*")


#: The pyspark exception for an error class where delta-spark raises another than its type's.
_PYSPARK_CLASS_OF_ERROR_CLASS = {
    "DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE": UNSUPPORTED,
    "DELTA_UNSUPPORTED_FEATURES_IN_CONFIG": UNKNOWN,  # DeltaTableFeatureException, not an AnalysisException
    "DELTA_ZORDERING_ON_PARTITION_COLUMN": ILLEGAL_ARGUMENT,
    "DELTA_INVALID_PROTOCOL_DOWNGRADE": UNKNOWN,
    "CAST_INVALID_INPUT": NUMBER_FORMAT,  # Spark's SparkNumberFormatException
}
#: (pydelta type, pyspark exception, error class when the error carries none); the first match wins.
_BY_TYPE: tuple[tuple[type, str, str | None], ...] = (
    (E.DeltaParseError, PARSE, None),
    (E.DeltaTableFeatureError, UNKNOWN, None),  # delta-spark's DeltaTableFeatureException
    (E.DeltaTableNotFoundError, ANALYSIS, "DELTA_MISSING_DELTA_TABLE"),  # forPath / forName, commands
    (E.TableAlreadyExistsError, ANALYSIS, "DELTA_TABLE_ALREADY_EXISTS"),
    (E.VersionNotFoundError, ANALYSIS, "DELTA_VERSION_NOT_FOUND"),
    (E.LogNotContiguousError, UNKNOWN, "DELTA_VERSIONS_NOT_CONTIGUOUS"),
    (E.UnsupportedFeatureError, UNKNOWN, "DELTA_UNSUPPORTED_FEATURES_FOR_READ"),
    (E.SchemaMismatchError, ANALYSIS, "DELTA_METADATA_MISMATCH"),
    (E.DeltaCastError, ARITHMETIC, None),  # Spark's SparkArithmeticException
    (E.InvariantViolationError, UNKNOWN, None),
    (E.DeltaAnalysisError, ANALYSIS, None),
    (E.DeltaIllegalArgumentError, ILLEGAL_ARGUMENT, None),
    (E.DeltaNotImplementedError, UNSUPPORTED, None),
)


def _rule(e: E.DeltaError) -> tuple[str, str | None] | None:
    """(pyspark exception name, delta-spark error class) for `e`, or None to leave it alone.

    The error class is the one `e` carries (given where it was raised); the pyspark class
    follows from it or from `e`'s type."""
    if isinstance(e, E.DeltaConcurrentModificationException):
        return None  # keep delta-spark's names (pydelta.errors); no pyspark class to add
    for kind, name, default in _BY_TYPE:
        if isinstance(e, kind):
            error_class = e.error_class or default
            return _PYSPARK_CLASS_OF_ERROR_CLASS.get(error_class or "", name), error_class
    if e.error_class in _PYSPARK_CLASS_OF_ERROR_CLASS:
        return _PYSPARK_CLASS_OF_ERROR_CLASS[e.error_class], e.error_class
    return None


def not_a_delta_table(path: str) -> E.DeltaTableNotFoundError:
    """delta-spark's `DeltaTable.forPath` error, for a missing path and a non-Delta directory alike
    (DeltaErrors.notADeltaTableException)."""
    return E.DeltaTableNotFoundError(f"[DELTA_MISSING_DELTA_TABLE] `{path}` is not a Delta table.")


def cannot_replace_missing_table(spark: SparkSession, name: str | None, location: str | None) -> E.DeltaError:
    """delta-spark's error for replacing a table that does not exist: Spark's TABLE_OR_VIEW_NOT_FOUND
    (AtomicReplaceTableExec) for a name, DELTA_CANNOT_REPLACE_MISSING_TABLE (CreateDeltaTableCommand)
    for a path."""
    if name is None:
        shown = f"`{location}`" if location and not re.fullmatch(r"[A-Za-z0-9_]+", location) else location
        return E.DeltaAnalysisError(f"[DELTA_CANNOT_REPLACE_MISSING_TABLE] Table delta.{shown} cannot be replaced "
                                    "as it does not exist. Use CREATE OR REPLACE TABLE to create the table.")
    parts = [p.strip("`") for p in re.findall(r"`[^`]*`|[^.]+", name)]
    if len(parts) == 1:
        parts = [spark.catalog.currentDatabase(), *parts]
    relation = ".".join(f"`{p}`" for p in parts[-2:])
    search = f"[`system`.`builtin`, `system`.`session`, `spark_catalog`.`{spark.catalog.currentDatabase()}`]"
    return E.DeltaTableNotFoundError(
        f"[TABLE_OR_VIEW_NOT_FOUND] The table or view {relation} cannot be found. Verify the spelling and "
        f"correctness of the schema and catalog.\nSearch path: {search}.\nIf you did not qualify the name with a "
        "schema, verify the current_schema() output, or qualify the name with the correct schema and catalog.\n"
        "To tolerate the error on drop use DROP VIEW IF EXISTS or DROP TABLE IF EXISTS.")


def no_table_to_read(path: str, spark: SparkSession | None = None) -> E.DeltaTableNotFoundError:
    """delta-spark's error for reading a path without a Delta table (DeltaTableV2.toBaseRelation):
    Spark's PATH_NOT_FOUND when nothing is there, DELTA_TABLE_NOT_FOUND for an existing directory."""
    shown = path.rstrip("/") or path  # as Hadoop's Path prints it
    if not _path_exists(path, spark):
        return E.DeltaTableNotFoundError(f"[PATH_NOT_FOUND] Path does not exist: {shown}.")
    return E.DeltaTableNotFoundError(f"[DELTA_TABLE_NOT_FOUND] Delta table `{shown}` doesn't exist.")


def _path_exists(path: str, spark: SparkSession | None = None) -> bool:
    """Whether anything is at `path`, seen through `spark`'s storage for it (its Hadoop file
    system, its s3a settings) when a session is given."""
    from pydelta.log.storage import storage_for

    try:
        if spark is not None:
            from pydelta.spark.base.engine import SparkEngine

            storage = SparkEngine(spark).storage(path)
        else:
            storage = storage_for(path)
        return storage.exists(path) or storage.is_directory(path)
    except Exception:  # noqa: BLE001 - an unreachable store: do not claim the path is missing
        return True


_classes: dict[tuple[type, type], type] = {}


def _pyspark_class(name: str) -> type:
    import pyspark.errors as pe

    cls: type = getattr(pe, name)
    return cls


class _Mixin:
    """Behaviour shared by the dynamic classes: delta-spark's message shape and SQLSTATEs."""

    def getSqlState(self) -> str | None:  # noqa: N802
        cond = self._errorClass  # type: ignore[attr-defined]
        if cond is None:
            return None
        return SQL_STATES.get(cond) or self._error_reader.get_sqlstate(cond)  # type: ignore[attr-defined]

    def getMessage(self) -> str:  # noqa: N802
        cond = self._errorClass  # type: ignore[attr-defined]
        msg: str = self._message  # type: ignore[attr-defined]
        if cond is None or msg.startswith(f"[{cond}]"):
            return msg
        return f"[{cond}] {msg}"

    def __str__(self) -> str:
        return self.getMessage()


def _dynamic_class(cls: type[E.DeltaError], base: type) -> type[E.DeltaError]:
    key = (cls, base)
    made = _classes.get(key)
    if made is None:
        made = type(cls.__name__, (_Mixin, cls, base), {"__module__": cls.__module__, "__qualname__": cls.__qualname__})
        _classes[key] = made
    return made


def to_pyspark(e: BaseException, not_found: str | None = None) -> BaseException:
    """`e` as an instance of its own class and the pyspark class delta-spark raises (or `e` itself)."""
    if not isinstance(e, E.DeltaError):
        return e
    try:
        from pyspark.errors import PySparkException
    except ImportError:  # pragma: no cover - pyspark is a dependency of pydelta.spark
        return e
    if isinstance(e, PySparkException):
        return e  # already converted (an inner boundary)
    rule = _rule(e)
    if rule is None:
        return e
    name, cond = rule
    if cond == "DELTA_MISSING_DELTA_TABLE" and not_found is not None:
        cond = not_found
    text = str(e)
    match = _PREFIX.match(text)
    if match:  # an error class the message already names wins
        cond = match.group(1)
    cls = _dynamic_class(type(e), _pyspark_class(name))
    new = cls.__new__(cls)
    new.args = e.args
    new.__dict__.update(e.__dict__)
    params = {"message": text}
    # pyspark's own __init__, not the mixin's (getattr: mypy rejects __init__ read off a class object)
    base_init = getattr(_pyspark_class("PySparkException"), "__init__")  # noqa: B009 - see above
    base_init(new, message=text, errorClass=cond, messageParameters=params)
    new.args = e.args
    return new


def _reraise(e: BaseException, not_found: str | None) -> None:
    new = to_pyspark(e, not_found)
    if new is e:
        raise e
    raise new.with_traceback(e.__traceback__) from e.__cause__


def boundary(func: F | None = None, *, not_found: str | None = None) -> Any:
    """Decorator: DeltaErrors leaving `func` become pyspark-compatible (see `to_pyspark`)."""

    def deco(f: F) -> F:
        if getattr(f, "_pydelta_boundary", False):
            return f

        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return f(*args, **kwargs)
            except E.DeltaError as e:
                _reraise(e, not_found)

        wrapper._pydelta_boundary = True  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return deco(func) if func is not None else deco


def boundary_class(cls: type) -> type:
    """Wrap every public method, classmethod and staticmethod of `cls` with `boundary`."""
    for name, value in list(vars(cls).items()):
        if name.startswith("_"):
            continue
        if isinstance(value, classmethod):
            setattr(cls, name, classmethod(boundary(value.__func__)))
        elif isinstance(value, staticmethod):
            setattr(cls, name, staticmethod(boundary(value.__func__)))
        elif callable(value) and not isinstance(value, type):
            setattr(cls, name, boundary(value))
    return cls


def io_failure(e: BaseException, spark: SparkSession) -> str | None:
    """The message of the Java IOException behind a failed Spark job (a full disk, a read-only
    or unreachable store...), or None when `e` is not one (a failing UDF, a bad cast: those
    stay the user's errors as Spark raised them)."""
    java = getattr(e, "java_exception", None)
    if java is None or getattr(spark, "_jvm", None) is None:
        return None
    try:
        io_class = jvm(spark).java.lang.Class.forName("java.io.IOException")
        for _ in range(20):  # the cause chain, bounded
            if java is None:
                return None
            if io_class.isInstance(java):
                return str(java.getMessage() or java.toString())
            java = java.getCause()
    except Exception:  # noqa: BLE001 - a JVM that went away: not an I/O failure we can name
        return None
    return None
