"""Every error pydelta raises on purpose is a DeltaError.

Names follow delta-spark where delta-spark has a name for the situation, so
code written against delta-spark can catch the same exceptions.
"""

from __future__ import annotations

import re

_CLASS_PREFIX = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]")


class DeltaError(Exception):
    """Base class of all pydelta errors.

    `error_class` is delta-spark's (or Spark's) error class for the situation, when it has one:
    given where the error is raised (`error_class=`), or named by the message's leading `[CLASS]`.
    The Spark layer hands it to PySpark's exception (`getCondition()`).
    """

    error_class: str | None = None

    def __init__(self, *args: object, error_class: str | None = None) -> None:
        super().__init__(*args)
        if error_class is not None:
            self.error_class = error_class
        elif type(self).error_class is None and args and isinstance(args[0], str):
            match = _CLASS_PREFIX.match(args[0])
            if match:
                self.error_class = match.group(1)


class DeltaAnalysisError(DeltaError):
    """Mirrors delta-spark's AnalysisException for table-level misuse."""


class DeltaTableNotFoundError(DeltaAnalysisError):
    """The path holds no Delta table (no `_delta_log` with commits or checkpoints), or the named table
    does not exist. An AnalysisException in delta-spark, so it is a DeltaAnalysisError here."""


class DeltaProtocolError(DeltaError):
    """The table's protocol is invalid or violates the Delta specification."""


class UnsupportedProtocolError(DeltaError):
    """The table needs a reader/writer version or table feature pydelta does not implement."""


class UnsupportedFeatureError(UnsupportedProtocolError):
    """A named table feature that pydelta does not implement (for this operation)."""

    def __init__(self, message: str, features: frozenset[str] | set[str] = frozenset(), *,
                 error_class: str | None = None) -> None:
        super().__init__(message, error_class=error_class)
        self.features = frozenset(features)


class CorruptedLogError(DeltaError):
    """The `_delta_log` is inconsistent: missing versions, missing protocol/metadata, bad files."""


class UnreadableCheckpointError(CorruptedLogError):
    """A checkpoint file cannot be read (truncated, not Parquet or JSON at all): readers replay the
    version from an older checkpoint or the commits instead, where those are left."""


class LogNotContiguousError(CorruptedLogError):
    """Commit versions in the log have a gap."""


class MissingProtocolError(CorruptedLogError):
    """No protocol action was found while reconstructing the table state."""


class MissingMetadataError(CorruptedLogError):
    """No metaData action was found while reconstructing the table state."""


class ChecksumMismatchError(CorruptedLogError):
    """A version checksum file (`<v>.crc`) disagrees with the state the log replays to."""

    error_class = "DELTA_TXN_LOG_FAILED_INTEGRITY"


class MissingDataFileError(DeltaError):
    """A data or deletion-vector file the snapshot needs is gone (e.g. vacuumed)."""


class VersionNotFoundError(DeltaError):
    """The requested version or timestamp is outside the table's reconstructable history."""


class InvalidTableError(DeltaError):
    """A table-level argument (schema, partitioning, property) is invalid."""


class SchemaMismatchError(DeltaError):
    """Data written does not match the table schema (delta-spark: AnalysisException)."""


class InvariantViolationError(DeltaError):
    """A row violates a column invariant or CHECK constraint."""


class DeltaCastError(DeltaError):
    """A written value does not fit its column's type (overflow, or text that is not a number):
    Spark's CAST_OVERFLOW_IN_TABLE_INSERT / CAST_INVALID_INPUT. Nothing is committed."""


class DeltaIllegalArgumentError(DeltaError, ValueError):
    """An argument to a pydelta API is invalid."""


class DeltaTableFeatureError(DeltaError):
    """A table feature cannot be dropped or changed as asked (delta-spark's DeltaTableFeatureException)."""


class IcebergCompatViolationError(DeltaTableFeatureError):
    """A change that would break the table's IcebergCompatV1/V2 (delta-spark's
    DELTA_ICEBERG_COMPAT_VIOLATION.* errors, the subclass in `error_class`)."""


class TableAlreadyExistsError(DeltaAnalysisError):
    """Creating a table at a location that already holds one."""


# ---- concurrency (names as in delta-spark's io.delta.exceptions) -------------


class DeltaConcurrentModificationException(DeltaError):
    """Base of the conflicts detected when a commit loses a race."""

    #: The winning commit's version and operation; set by the conflict checker that raises it.
    version: int
    operation: str


class ConcurrentWriteException(DeltaConcurrentModificationException):
    """A concurrent transaction wrote data the current one depends on."""


class MetadataChangedException(DeltaConcurrentModificationException):
    """A concurrent transaction changed the table metadata."""


class ProtocolChangedException(DeltaConcurrentModificationException):
    """A concurrent transaction changed the protocol."""


class ConcurrentAppendException(DeltaConcurrentModificationException):
    """A concurrent transaction added files the current one would have read."""


class ConcurrentDeleteReadException(DeltaConcurrentModificationException):
    """A concurrent transaction deleted a file the current one read."""


class ConcurrentDeleteDeleteException(DeltaConcurrentModificationException):
    """Two transactions deleted the same file."""


class ConcurrentTransactionException(DeltaConcurrentModificationException):
    """Two transactions used the same application transaction id (txn appId)."""


class DeltaNotImplementedError(DeltaError, NotImplementedError):
    """A Delta capability pydelta does not implement yet; the message names it."""


class DeltaMissingDependencyError(DeltaError, ImportError):
    """An optional dependency is not installed; the message names the pip extra that brings it."""


class DeltaUnsupportedOptionError(DeltaNotImplementedError):
    """A delta-spark reader/writer option pydelta does not implement; ignoring it would give a wrong answer."""

    def __init__(self, message: str, option: str) -> None:
        super().__init__(message)
        self.option = option


class DeltaParseError(DeltaAnalysisError):
    """A Delta SQL statement pydelta cannot parse (delta-spark: ParseException)."""


# ---- managed commits (commit owners) and catalog-managed tables -------------


class CommitOwnerError(DeltaError):
    """A managed-commit table's commit owner refused, failed, or is misconfigured.

    `maybe_ratified`: the commit being ratified may have landed after all (its answer was lost),
    so its staged file must stay."""

    maybe_ratified: bool = False


class InvalidManagedCommitStateError(CommitOwnerError, DeltaProtocolError):
    """The table names a commit owner without the managedCommit feature, or the reverse."""


class UnknownCommitOwnerError(CommitOwnerError):
    """`delta.managedCommit.commitOwner` names an owner no client is registered for."""


class CommitOwnerUnavailableError(CommitOwnerError):
    """The commit owner could not be reached; nothing was committed."""


class CommitOwnerConflictError(CommitOwnerError):
    """The owner already ratified the attempted version (another writer won it)."""

    def __init__(self, message: str, latest_version: int, *, maybe_ratified: bool = False) -> None:
        super().__init__(message)
        self.latest_version = latest_version
        self.maybe_ratified = maybe_ratified


class CommitOwnerMismatchError(CommitOwnerError):
    """A commit would change the table's commit owner without first converting to the file system."""


class CatalogManagedTableError(UnsupportedFeatureError):
    """A catalogManaged table of a catalog pydelta has no client for (reads and writes go through it)."""


class CatalogManagedOperationBlockedError(DeltaError):
    """A maintenance operation (VACUUM, OPTIMIZE, REORG, log cleanup) on a catalog-managed table
    that its catalog does not permit (PROTOCOL.md: none unless the catalog says so)."""


class StorageAccessError(DeltaError, OSError):
    """The table's storage refused or failed a request (missing bucket, credentials, network).

    The message names the URI and the store's own cause. An OSError too, as file-system
    failures are. `not_applied`: the storage knows the write did not happen (a local file
    system's refusal); otherwise a failed write may have landed (an object store's answer lost).
    """

    def __init__(self, *args: object, error_class: str | None = None, not_applied: bool = False) -> None:
        super().__init__(*args, error_class=error_class)
        self.not_applied = not_applied


class MissingConnectorError(DeltaError):
    """Spark has no Hadoop FileSystem for the table's URI scheme (e.g. s3a:// without hadoop-aws)."""


# ---- errors of one operation (their messages are delta-spark's) ------------------------------

MERGE_DOCS = "https://docs.delta.io/latest/delta-update.html#upsert-into-a-table-using-merge"


class FileAlreadyExistsError(DeltaError):
    """put_if_absent found the target already there (another writer won)."""


class UnsupportedDataTypeError(InvalidTableError, UnsupportedFeatureError):
    """A schema uses a data type pydelta does not know.

    It is both an InvalidTableError (the schema cannot be used) and an
    UnsupportedFeatureError (a newer Delta may define the type), so callers can
    catch either.
    """

    def __init__(self, message: str) -> None:
        UnsupportedFeatureError.__init__(self, message)


class DmlTypeError(DeltaIllegalArgumentError, TypeError):
    """A DML argument of the wrong type (delta-spark raises TypeError)."""


class MultipleSourceRowMatchingTargetRowInMergeError(DeltaError):
    """delta-spark's DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE (SQLSTATE 21506)."""

    error_class = "DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE"
    sql_state = "21506"

    def __init__(self) -> None:
        super().__init__(
            f"[{self.error_class}] Cannot perform Merge as multiple source rows matched and attempted to modify "
            "the same target row in the Delta table in possibly conflicting ways. By SQL semantics of Merge, when "
            "multiple source rows match on the same target row, the result may be ambiguous as it is unclear which "
            "source row should be used to update or delete the matching target row. You can preprocess the source "
            f"table to eliminate the possibility of multiple matches. Please refer to {MERGE_DOCS}"
        )


class RestoreMissingFilesError(MissingDataFileError, DeltaIllegalArgumentError):
    """Data files of the version to restore are gone (vacuumed or deleted by hand)."""


class ManifestGenerationError(DeltaAnalysisError):
    """The table cannot have symlink manifests (column mapping, deletion vectors)."""


# ---- the local Spark session ---------------------------------------------------------------


class JavaNotFoundError(DeltaError):
    """Spark needs Java 17; it is not installed or not on PATH / JAVA_HOME."""


class CatalogLockedError(DeltaError):
    """Another process holds the embedded Derby metastore of the catalog directory."""


class DeltaSparkConfWarning(UserWarning):
    """A session or builder named delta-spark's classes or jars, and pydelta changed that conf
    (`pydelta.enable`, `pydelta.configure_spark_with_delta_pip`): the message says what."""
