"""Version checksum files: `_delta_log/<version>.crc` (PROTOCOL.md, "Version Checksum File").

A writer SHOULD leave one after each commit: the table's size, file count, protocol, metadata,
in-commit timestamp, app transactions, domains and file-size histogram at that version (and,
for small tables, every live file). Readers use it to answer those without a replay and to
check a replay. pydelta derives each one from the previous version's checksum and the commit's
own actions, as delta-spark does (a full computation from the snapshot only when there is no
previous checksum to start from), writes it only after the commit and never over an existing
file, and never lets a failed checksum write fail the commit.

The JSON is delta-spark 4.2+'s: one object on one line, fields in its order, absent (None)
fields left out, `metadata` and `protocol` as bare action bodies, `fileSizeHistogram` (older
writers' `histogramOpt` is read too).
"""

from __future__ import annotations

import bisect
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pydelta.log.storage import Storage
from pydelta.protocol import properties as P
from pydelta.protocol.actions import DomainMetadata, Metadata, Protocol, Txn
from pydelta.protocol.deletion_vectors import dv_unique_id

logger = logging.getLogger(__name__)

_K, _M, _G = 1 << 10, 1 << 20, 1 << 30


def _standard_bins() -> tuple[int, ...]:
    """The 95 file-size bin boundaries every Delta writer uses (delta-spark, kernel-java, kernel-rs)."""
    bins = [0] + [_K * 8 << i for i in range(10)]  # 8K .. 4M, doubling
    for start, stop, step in ((8, 40, 4), (48, 120, 8), (124, 144, 4), (160, 576, 16), (640, 1408, 64),
                              (1536, 2048, 128), (2304, 4096, 256)):
        bins += [n * _M for n in range(start, stop + 1, step)]
    bins += [_G * 8 << i for i in range(6)]  # 8G .. 256G
    return tuple(bins)


FILE_SIZE_BINS: tuple[int, ...] = _standard_bins()
# Deleted-record-count bins: [0], [1, 9], [10, 99], ..., [10M, Int.MaxValue - 1], [Int.MaxValue, ...).
DELETED_RECORD_BINS: tuple[int, ...] = (0, 1, 10, 100, 1000, 10_000, 100_000, 1_000_000, 10_000_000, 2**31 - 1)

# delta-spark's limits for the optional lists (over them the field is left out, never truncated).
ALL_FILES_MAX = 50
SET_TRANSACTIONS_MAX = 100
DOMAIN_METADATA_MAX = 10
DV_FEATURE = "deletionVectors"
# Operations whose adds re-add files already in the table (delta-spark does not count them again).
_READDING_OPERATIONS = frozenset({"COMPUTE STATS", "ROW TRACKING BACKFILL", "ROW TRACKING UNBACKFILL", "DROP FEATURE"})


def checksum_path(table_root: str, version: int) -> str:
    """Where version `version`'s checksum lives."""
    return f"{table_root.rstrip('/')}/_delta_log/{version:020d}.crc"


def _bin_index(bins: Sequence[int], value: int) -> int:
    """The last bin whose boundary is <= value (a value on a boundary opens that bin)."""
    return max(bisect.bisect_right(bins, value) - 1, 0)


@dataclass
class FileSizeHistogram:
    """File counts and bytes per size bin (bin i is [boundaries[i], boundaries[i+1]))."""

    boundaries: tuple[int, ...] = FILE_SIZE_BINS
    counts: list[int] = field(default_factory=lambda: [0] * len(FILE_SIZE_BINS))
    total_bytes: list[int] = field(default_factory=lambda: [0] * len(FILE_SIZE_BINS))

    @classmethod
    def of_sizes(cls, sizes: pa.Array | pa.ChunkedArray) -> FileSizeHistogram:
        """The histogram of `sizes`, vectorized (one pass over a snapshot's files)."""
        values = np.asarray(pc.cast(sizes, pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)
        bins = np.asarray(FILE_SIZE_BINS, dtype=np.int64)
        index = np.searchsorted(bins, values, side="right") - 1
        counts = np.bincount(index, minlength=len(bins))
        total = np.zeros(len(bins), dtype=np.int64)
        np.add.at(total, index, values)
        return cls(FILE_SIZE_BINS, [int(c) for c in counts], [int(b) for b in total])

    def add(self, size: int, sign: int = 1) -> None:
        i = _bin_index(self.boundaries, size)
        self.counts[i] += sign
        self.total_bytes[i] += sign * size

    def to_dict(self) -> dict[str, Any]:
        return {"sortedBinBoundaries": list(self.boundaries), "fileCounts": list(self.counts),
                "totalBytes": list(self.total_bytes)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FileSizeHistogram:
        boundaries = tuple(int(b) for b in d["sortedBinBoundaries"])
        counts = [int(c) for c in d["fileCounts"]]
        total = [int(b) for b in d["totalBytes"]]
        if not boundaries or boundaries[0] != 0 or not len(boundaries) == len(counts) == len(total):
            raise ValueError("a file size histogram needs equal-length lists starting at boundary 0")
        return cls(boundaries, counts, total)


@dataclass
class VersionChecksum:
    """The state of a table at one version, as a checksum file records it."""

    table_size_bytes: int
    num_files: int
    metadata: Metadata | None  # None only in old writers' files (no protocol or metadata recorded)
    protocol: Protocol | None
    txn_id: str | None = None
    num_metadata: int = 1
    num_protocol: int = 1
    in_commit_timestamp: int | None = None
    set_transactions: list[Txn] | None = None  # None: not recorded (unknown), [] none exist
    domain_metadata: list[DomainMetadata] | None = None
    file_size_histogram: FileSizeHistogram | None = None
    num_deleted_records: int | None = None
    num_deletion_vectors: int | None = None
    deleted_record_counts: list[int] | None = None
    all_files: list[dict[str, Any]] | None = None  # add action bodies (dataChange false)

    # ---- JSON --------------------------------------------------------------------------------
    def to_json(self) -> str:
        """The file's one line (without its newline), fields in delta-spark's order, None left out."""
        out: dict[str, Any] = {}
        if self.txn_id is not None:
            out["txnId"] = self.txn_id
        out["tableSizeBytes"] = self.table_size_bytes
        out["numFiles"] = self.num_files
        if self.num_deleted_records is not None:
            out["numDeletedRecordsOpt"] = self.num_deleted_records
        if self.num_deletion_vectors is not None:
            out["numDeletionVectorsOpt"] = self.num_deletion_vectors
        out["numMetadata"] = self.num_metadata
        out["numProtocol"] = self.num_protocol
        if self.in_commit_timestamp is not None:
            out["inCommitTimestampOpt"] = self.in_commit_timestamp
        if self.set_transactions is not None:
            out["setTransactions"] = [_txn_body(t) for t in self.set_transactions]
        if self.domain_metadata is not None:
            out["domainMetadata"] = [d.to_dict() for d in self.domain_metadata]
        if self.metadata is not None:
            out["metadata"] = self.metadata.to_dict()
        if self.protocol is not None:
            out["protocol"] = self.protocol.to_dict()
        if self.file_size_histogram is not None:
            out["fileSizeHistogram"] = self.file_size_histogram.to_dict()
        if self.deleted_record_counts is not None:
            out["deletedRecordCountsHistogramOpt"] = {"deletedRecordCounts": list(self.deleted_record_counts)}
        if self.all_files is not None:
            out["allFiles"] = self.all_files
        return json.dumps(out, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> VersionChecksum:
        """Parse a checksum file's first line; ValueError (or KeyError) when it is not one."""
        d = json.loads(text.split("\n", 1)[0])
        if not isinstance(d, dict):
            raise ValueError("a version checksum is one JSON object")
        if "fileSizeHistogram" in d and "histogramOpt" in d:
            raise ValueError("a version checksum names its file size histogram twice")
        histogram = d.get("fileSizeHistogram", d.get("histogramOpt"))
        deleted = d.get("deletedRecordCountsHistogramOpt")
        return cls(
            table_size_bytes=int(d["tableSizeBytes"]),
            num_files=int(d["numFiles"]),
            metadata=Metadata.from_dict(d["metadata"]) if d.get("metadata") is not None else None,
            protocol=Protocol.from_dict(d["protocol"]) if d.get("protocol") is not None else None,
            txn_id=d.get("txnId"),
            num_metadata=int(d["numMetadata"]),
            num_protocol=int(d["numProtocol"]),
            in_commit_timestamp=_opt_int(d.get("inCommitTimestampOpt")),
            set_transactions=None if d.get("setTransactions") is None else [
                Txn(t["appId"], int(t["version"]), _opt_int(t.get("lastUpdated"))) for t in d["setTransactions"]],
            domain_metadata=None if d.get("domainMetadata") is None else [
                DomainMetadata(m["domain"], m.get("configuration", ""), bool(m.get("removed", False)))
                for m in d["domainMetadata"]],
            file_size_histogram=FileSizeHistogram.from_dict(histogram) if histogram is not None else None,
            num_deleted_records=_opt_int(d.get("numDeletedRecordsOpt")),
            num_deletion_vectors=_opt_int(d.get("numDeletionVectorsOpt")),
            deleted_record_counts=None if deleted is None else [int(c) for c in deleted["deletedRecordCounts"]],
            all_files=d.get("allFiles"),
        )


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _txn_body(t: Txn) -> dict[str, Any]:
    body: dict[str, Any] = {"appId": t.app_id, "version": t.version}
    if t.last_updated is not None:
        body["lastUpdated"] = t.last_updated
    return body


# ---- reading and writing --------------------------------------------------------------------


def read_checksum(storage: Storage, table_root: str, version: int) -> VersionChecksum | None:
    """Version `version`'s checksum, or None where there is none or it cannot be parsed (a reader
    MUST work without one; delta-spark and kernel-rs ignore a malformed file the same way)."""
    try:
        data = storage.read(checksum_path(table_root, version))
    except OSError:
        return None
    except Exception as e:  # noqa: BLE001 - any store error: there is no checksum to use
        logger.debug("could not read the checksum of version %d of %s: %s", version, table_root, e)
        return None
    try:
        return VersionChecksum.from_json(data.decode("utf-8"))
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
        logger.debug("ignoring the malformed checksum of version %d of %s: %s", version, table_root, e)
        return None


def write_checksum(storage: Storage, table_root: str, version: int, checksum: VersionChecksum) -> bool:
    """Write `checksum` for `version` unless a file is there already (never overwritten); True if written."""
    from pydelta.log.storage import FileAlreadyExistsError

    try:
        storage.put_if_absent(checksum_path(table_root, version), (checksum.to_json() + "\n").encode("utf-8"))
    except (FileAlreadyExistsError, FileExistsError):
        return False
    return True


# ---- computing --------------------------------------------------------------------------------


def has_dv_metrics(protocol: Protocol | None) -> bool:
    """delta-spark records deletion-vector counts only where the table can have deletion vectors."""
    return protocol is not None and DV_FEATURE in protocol.effective_writer_features


def _live_txns(txns: Iterable[Txn], metadata: Metadata) -> list[Txn] | None:
    """The app transactions to record, or None when delta-spark would not record them."""
    if "delta.setTransactionRetentionDuration" in metadata.configuration:
        return None  # expiring entries: the list would depend on the reader's clock
    out = sorted(txns, key=lambda t: t.app_id)
    return out if len(out) <= SET_TRANSACTIONS_MAX else None


def _live_domains(domains: Iterable[DomainMetadata]) -> list[DomainMetadata] | None:
    out = sorted((d for d in domains if not d.removed), key=lambda d: d.domain)
    return out if len(out) <= DOMAIN_METADATA_MAX else None


def compute_checksum(snapshot: Any, *, txn_id: str | None = None) -> VersionChecksum:
    """The checksum of `snapshot` (a `log.snapshot.Snapshot`), computed from its whole state."""
    state = snapshot.state
    adds = state.adds
    sizes = pc.struct_field(adds, "size") if len(adds) else pa.array([], pa.int64())
    total = int(pc.sum(sizes).as_py() or 0) if len(adds) else 0
    checksum = VersionChecksum(
        table_size_bytes=total,
        num_files=len(adds),
        metadata=snapshot.metadata,
        protocol=snapshot.protocol,
        txn_id=txn_id,
        in_commit_timestamp=_in_commit_timestamp(snapshot),
        set_transactions=_live_txns(state.txns.values(), snapshot.metadata),
        domain_metadata=_live_domains(state.domains.values()),
        file_size_histogram=FileSizeHistogram.of_sizes(sizes),
    )
    if has_dv_metrics(snapshot.protocol):
        cardinalities = _cardinalities(adds)
        checksum.num_deleted_records = sum(cardinalities)
        checksum.num_deletion_vectors = sum(1 for c in cardinalities if c > 0)
        checksum.deleted_record_counts = _deleted_histogram(cardinalities)
    if len(adds) <= ALL_FILES_MAX:
        checksum.all_files = [_all_files_entry(body) for body in adds.to_pylist()]
    return checksum


def _in_commit_timestamp(snapshot: Any) -> int | None:
    from pydelta.log.timestamps import ict_enablement_version

    enabled = ict_enablement_version(snapshot.metadata)
    info = snapshot.latest_commit_info or {}
    if enabled is None or snapshot.version < enabled or info.get("inCommitTimestamp") is None:
        return None
    return int(info["inCommitTimestamp"])


def _cardinalities(adds: pa.StructArray | pa.ChunkedArray) -> list[int]:
    """The deletion-vector cardinality of each file (0 without one)."""
    if len(adds) == 0:
        return []
    dvs = pc.struct_field(adds, "deletionVector")
    cardinality = pc.fill_null(pc.struct_field(dvs, "cardinality"), 0)
    return [int(c) for c in cardinality.to_pylist()]


def _deleted_histogram(cardinalities: Iterable[int]) -> list[int]:
    counts = [0] * len(DELETED_RECORD_BINS)
    for c in cardinalities:
        counts[_bin_index(DELETED_RECORD_BINS, c)] += 1
    return counts


def _all_files_entry(body: Mapping[str, Any]) -> dict[str, Any]:
    """An add body as allFiles records it: only the fields it has, dataChange false."""
    entry = {k: v for k, v in body.items() if v is not None}
    for key in ("partitionValues", "tags"):  # Arrow map columns come back as (key, value) pairs
        if isinstance(entry.get(key), list):
            entry[key] = dict(entry[key])
    if isinstance(entry.get("deletionVector"), Mapping):
        entry["deletionVector"] = {k: v for k, v in entry["deletionVector"].items() if v is not None}
    entry["dataChange"] = False
    return entry


def _file_key(body: Mapping[str, Any]) -> tuple[str, str]:
    return str(body["path"]), dv_unique_id(body.get("deletionVector"))


def derive_checksum(previous: VersionChecksum, actions: Sequence[Mapping[str, Any]], *, operation: str,
                    txn_id: str | None = None) -> VersionChecksum | None:
    """The checksum after a commit of `actions` (its parsed lines) on the version `previous`
    describes, without a replay; None where it cannot be derived (delta-spark's cases: a remove
    without its size, an old checksum without protocol and metadata or without a histogram)."""
    if previous.file_size_histogram is None:
        return None
    metadata, protocol = previous.metadata, previous.protocol
    size, count = previous.table_size_bytes, previous.num_files
    histogram = replace(previous.file_size_histogram, counts=list(previous.file_size_histogram.counts),
                        total_bytes=list(previous.file_size_histogram.total_bytes))
    ict: int | None = None
    txns = None if previous.set_transactions is None else {t.app_id: t for t in previous.set_transactions}
    domains = None if previous.domain_metadata is None else {d.domain: d for d in previous.domain_metadata}
    files = None if previous.all_files is None else {_file_key(f): f for f in previous.all_files}
    schema_changed = False
    dv_deltas: list[tuple[int, int]] = []  # (cardinality, +1 / -1)
    counts_adds = operation not in _READDING_OPERATIONS
    removed = {_file_key(a["remove"]) for a in actions if "remove" in a}
    for action in actions:
        kind, body = next(iter(action.items()))
        known = kind == "add" and files is not None and _file_key(body) in files
        if kind == "add" and (not counts_adds or (known and _file_key(body) not in removed)):
            # A file already in the table added again (by an operation that re-adds files, or
            # without a remove): it replaces itself, its new fields recorded; nothing is counted.
            if files is not None and known:
                files[_file_key(body)] = _all_files_entry(body)
        elif kind == "add":
            size += int(body["size"])
            count += 1
            histogram.add(int(body["size"]))
            dv_deltas.append((_dv_cardinality(body), 1))
            if files is not None:
                files[_file_key(body)] = _all_files_entry(body)
        elif kind == "remove":
            if operation == "AddDeletionVectorsTombstones":
                continue
            if body.get("size") is None:
                return None
            size -= int(body["size"])
            count -= 1
            histogram.add(int(body["size"]), -1)
            dv_deltas.append((_dv_cardinality(body), -1))
            if files is not None and files.pop(_file_key(body), None) is None:
                files = None  # a remove naming a file the list does not hold: the list is not known
        elif kind == "metaData":
            new = Metadata.from_dict(body)
            schema_changed = schema_changed or metadata is None or new.schema_string != metadata.schema_string
            metadata = new
        elif kind == "protocol":
            protocol = Protocol.from_dict(body)
        elif kind == "commitInfo":
            ict = _opt_int(body.get("inCommitTimestamp"))
        elif kind == "txn" and txns is not None:
            txns[body["appId"]] = Txn(body["appId"], int(body["version"]), _opt_int(body.get("lastUpdated")))
        elif kind == "domainMetadata" and domains is not None:
            domain = DomainMetadata(body["domain"], body.get("configuration", ""), bool(body.get("removed", False)))
            if domain.removed:
                domains.pop(domain.domain, None)
            else:
                domains[domain.domain] = domain
    if metadata is None or protocol is None:  # an old checksum without them, and the commit set neither
        return None
    checksum = VersionChecksum(
        table_size_bytes=size,
        num_files=count,
        metadata=metadata,
        protocol=protocol,
        txn_id=txn_id,
        in_commit_timestamp=ict if P.flag(metadata.configuration, "delta.enableInCommitTimestamps") else None,
        set_transactions=None if txns is None else _live_txns(txns.values(), metadata),
        domain_metadata=None if domains is None else _live_domains(domains.values()),
        file_size_histogram=histogram,
    )
    if has_dv_metrics(protocol):
        if previous.num_deleted_records is None or previous.deleted_record_counts is None:
            if not previous.num_files or not has_dv_metrics(previous.protocol):
                # No deletion vector could exist before this commit (no files, or no feature): zero.
                checksum.num_deleted_records, checksum.num_deletion_vectors = 0, 0
                checksum.deleted_record_counts = [0] * len(DELETED_RECORD_BINS)
                checksum.deleted_record_counts[0] = previous.num_files
        else:
            checksum.num_deleted_records = previous.num_deleted_records
            checksum.num_deletion_vectors = previous.num_deletion_vectors or 0
            checksum.deleted_record_counts = list(previous.deleted_record_counts)
        if checksum.deleted_record_counts is not None:
            for cardinality, sign in dv_deltas:
                checksum.num_deleted_records = (checksum.num_deleted_records or 0) + sign * cardinality
                if cardinality > 0:
                    checksum.num_deletion_vectors = (checksum.num_deletion_vectors or 0) + sign
                checksum.deleted_record_counts[_bin_index(DELETED_RECORD_BINS, cardinality)] += sign
    if files is not None and not schema_changed and len(files) == count and len(files) <= ALL_FILES_MAX:
        listed = list(files.values())
        if sum(int(f["size"]) for f in listed) == size:
            checksum.all_files = listed
    elif count == 0:
        checksum.all_files = []
    return checksum


#: The state before version 0: what the first commit's checksum derives from.
EMPTY_TABLE = VersionChecksum(
    table_size_bytes=0, num_files=0, metadata=None, protocol=None, set_transactions=[], domain_metadata=[],
    file_size_histogram=FileSizeHistogram(), num_deleted_records=0, num_deletion_vectors=0,
    deleted_record_counts=[0] * len(DELETED_RECORD_BINS), all_files=[],
)


def _dv_cardinality(body: Mapping[str, Any]) -> int:
    dv = body.get("deletionVector")
    return int(dv.get("cardinality") or 0) if isinstance(dv, Mapping) else 0


# ---- checking ---------------------------------------------------------------------------------


def checksum_mismatches(checksum: VersionChecksum, actual: VersionChecksum) -> list[str]:
    """What `checksum` (read from a file) says differently from `actual` (computed by a replay), in
    delta-spark's wording; fields the file leaves out are not compared."""
    out: list[str] = []

    def differ(label: str, expected: Any, computed: Any) -> None:
        if expected != computed:
            out.append(f"{label} - Expected: {expected} Computed: {computed}")

    differ("Table size (bytes)", checksum.table_size_bytes, actual.table_size_bytes)
    differ("Number of files", checksum.num_files, actual.num_files)
    differ("Metadata updates", checksum.num_metadata, 1)
    differ("Protocol updates", checksum.num_protocol, 1)
    if checksum.metadata is not None:
        differ("Metadata", checksum.metadata.to_dict(), actual.metadata.to_dict() if actual.metadata else None)
    if checksum.protocol is not None:
        differ("Protocol", checksum.protocol.to_dict(), actual.protocol.to_dict() if actual.protocol else None)
    if checksum.set_transactions is not None and actual.set_transactions is not None:
        differ("Set transactions", sorted((t.app_id, t.version) for t in checksum.set_transactions),
               sorted((t.app_id, t.version) for t in actual.set_transactions))
    if checksum.domain_metadata is not None and actual.domain_metadata is not None:
        differ("Domain metadata", sorted((d.domain, d.configuration) for d in checksum.domain_metadata),
               sorted((d.domain, d.configuration) for d in actual.domain_metadata))
    if checksum.file_size_histogram is not None and actual.file_size_histogram is not None \
            and checksum.file_size_histogram.boundaries == actual.file_size_histogram.boundaries:
        differ("File size histogram", checksum.file_size_histogram.to_dict(), actual.file_size_histogram.to_dict())
    if checksum.num_deletion_vectors is not None and actual.num_deletion_vectors is not None:
        differ("Number of deletion vectors", checksum.num_deletion_vectors, actual.num_deletion_vectors)
        differ("Number of deleted records", checksum.num_deleted_records, actual.num_deleted_records)
    return out


def validate_checksum(snapshot: Any, *, fatal: bool = True) -> list[str]:
    """Check `snapshot`'s version checksum (if it has one) against its replayed state, as delta-spark
    does before it checkpoints a version. A difference raises ChecksumMismatchError
    (DELTA_TXN_LOG_FAILED_INTEGRITY) when `fatal`, else it is logged; returns the differences."""
    from pydelta.errors import ChecksumMismatchError

    written = read_checksum(snapshot.storage, snapshot.table_root, snapshot.version)
    if written is None:
        return []
    mismatches = checksum_mismatches(written, compute_checksum(snapshot))
    if not mismatches:
        return []
    message = (f"[DELTA_TXN_LOG_FAILED_INTEGRITY] The transaction log has failed integrity checks. Failed "
               f"verification at version {snapshot.version} of {snapshot.table_root}:\n" + "\n".join(mismatches))
    if fatal:
        raise ChecksumMismatchError(message)
    logger.warning("%s", message)
    return mismatches
