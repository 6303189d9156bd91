"""Deletion vectors (DVs): descriptors, Z85, the RoaringBitmapArray format and DV files.

A deletion vector marks rows of one data file as deleted without rewriting the file.
The log's `add`/`remove` actions carry a `deletionVector` descriptor that says where
the bitmap of deleted row indexes lives (see PROTOCOL.md, "Deletion Vectors" and the
appendix "Deletion Vector Format"):

* ``'u'``: a file ``<table>/<prefix>/deletion_vector_<uuid>.bin``; the log stores the
  optional random prefix followed by the Z85-encoded 16 UUID bytes (20 characters).
* ``'p'``: a file at an absolute path (a URI, encoded like an ``add.path``).
* ``'i'``: the bitmap itself, Z85-encoded inline in the log.

The bitmap is a 64-bit Roaring bitmap in the "portable" serialization, preceded by a
little-endian magic number. A DV file is one version byte (``1``) followed by one or more
``<4-byte big-endian size><bitmap><4-byte big-endian CRC-32 of the bitmap>`` records; the
descriptor's ``offset`` points at the size field of its record.

Row indexes are handled as sorted, unique ``numpy.uint64`` arrays so that DVs with
millions of rows never go through Python-level loops; pyroaring stores the 32-bit buckets.
"""

from __future__ import annotations

import array
import numbers
import os
import struct
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from pyroaring import AbstractBitMap, AbstractBitMap64, BitMap

from pydelta.errors import CorruptedLogError, DeltaIllegalArgumentError

__all__ = [
    "DV_FILE_FORMAT_VERSION",
    "PORTABLE_MAGIC_NUMBER",
    "DeletionVectorDescriptor",
    "deserialize_bitmap",
    "inline_descriptor",
    "serialize_bitmap",
    "z85_decode",
    "z85_encode",
]

#: Magic number in front of every serialized RoaringBitmapArray in the portable format.
PORTABLE_MAGIC_NUMBER = 1681511377
#: delta-spark's in-memory ("native") layout; never valid on disk or in the log.
_NATIVE_MAGIC_NUMBER = 1681511376
#: The only DV file format version the protocol defines.
DV_FILE_FORMAT_VERSION = 1

_STORAGE_TYPES = frozenset({"u", "i", "p"})
_UUID_Z85_LENGTH = 20  # Z85 of the 16 UUID bytes
_MAX_ROW_INDEX_EXCLUSIVE = 1 << 63  # bucket keys must keep their most significant bit 0

# 32-bit Roaring portable format (RoaringFormatSpec).
_SERIAL_COOKIE_NO_RUN = 12346
_SERIAL_COOKIE_RUN = 12347
_NO_OFFSET_THRESHOLD = 4
_ARRAY_CONTAINER_MAX_CARDINALITY = 4096
_BITSET_CONTAINER_BYTES = 8192
_MAX_CONTAINERS = 1 << 16

assert array.array("I").itemsize == 4, "pyroaring's fast path needs 4-byte unsigned ints"


# ---- Z85 ---------------------------------------------------------------------------

_Z85_ALPHABET = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_ALPHABET_ARRAY = np.frombuffer(_Z85_ALPHABET, dtype=np.uint8)
_Z85_DECODE_TABLE = np.full(256, 255, dtype=np.uint8)
_Z85_DECODE_TABLE[_Z85_ALPHABET_ARRAY] = np.arange(85, dtype=np.uint8)
_Z85_POWERS = np.array([85**4, 85**3, 85**2, 85, 1], dtype=np.uint64)


def z85_encode(data: bytes) -> str:
    """Encode bytes as Z85 (ZeroMQ RFC 32), the JSON-friendly Base85 variant Delta uses.

    Z85 works on 4-byte groups. Like delta-spark, input whose length is not a multiple of
    4 is padded with zero bytes at the end; readers drop the padding using the
    descriptor's ``sizeInBytes``.
    """
    data = bytes(data)
    padding = -len(data) % 4
    words = np.frombuffer(data + b"\x00" * padding, dtype=">u4").astype(np.uint64)
    digits = (words[:, None] // _Z85_POWERS[None, :]) % np.uint64(85)
    text: str = _Z85_ALPHABET_ARRAY[digits.ravel()].tobytes().decode("ascii")
    return text


def z85_decode(text: str) -> bytes:
    """Decode Z85 text: groups of 5 characters, 4 bytes each.

    The last group may be a padded tail as the Rust `z85` crate writes it (delta-kernel-rs
    encodes unaligned inline DVs so): n leading '#' (a digit no 32-bit group can start with)
    stand for n bytes missing from the tail, and the group reads as its last 4 - n bytes.
    delta-spark pads with zero bytes instead; readers keep the descriptor's `sizeInBytes` bytes.
    Raises CorruptedLogError for malformed input, since Z85 only ever comes from the log.
    """
    try:
        raw = text.encode("ascii")
    except UnicodeEncodeError:
        raise CorruptedLogError(f"Z85 text contains non-ASCII characters: {text!r}") from None
    if len(raw) % 5:
        raise CorruptedLogError(f"Z85 text length {len(raw)} is not a multiple of 5: {text!r}")
    missing = _padded_tail_length(raw)
    values = _Z85_DECODE_TABLE[np.frombuffer(raw, dtype=np.uint8)]
    if np.any(values == 255):
        raise CorruptedLogError(f"Z85 text contains characters outside the Z85 alphabet: {text!r}")
    if missing:
        values[len(values) - 5 : len(values) - 5 + missing] = 0  # the '#'s read as '0's
    words = (values.reshape(-1, 5).astype(np.uint64) * _Z85_POWERS).sum(axis=1, dtype=np.uint64)
    if np.any(words > 0xFFFFFFFF) or (missing and int(words[-1]) >= 1 << (8 * (4 - missing))):
        raise CorruptedLogError(f"Z85 text encodes a group larger than its bytes can hold: {text!r}")
    out: bytes = words.astype(">u4").tobytes()
    return out[: len(out) - 4] + out[len(out) - 4 + missing :] if missing else out


def _padded_tail_length(raw: bytes) -> int:
    """How many bytes a `z85`-crate padded tail (leading '#'s of the last group) leaves out: 0 to 3."""
    last = raw[-5:]
    missing = len(last) - len(last.lstrip(b"#"))
    return missing if missing <= 3 else 0  # "#####" is no tail: it fails as a too-large group


# ---- row index normalisation -------------------------------------------------------


def _sorted_unique(arr: np.ndarray) -> np.ndarray:
    """Sort and de-duplicate; np.unique is much slower for millions of rows (numpy 2.x)."""
    if arr.size > 1 and not np.all(arr[1:] > arr[:-1]):
        arr = np.sort(arr)
        arr = arr[np.concatenate(([True], arr[1:] != arr[:-1]))]
    return arr


def _row_index_array(row_indexes: Any) -> np.ndarray:
    """Turn any collection of row indexes into a sorted, unique uint64 array.

    Rejects negatives, non-integers and indexes >= 2**63 (the protocol requires the
    most significant bit of every bucket key to be 0).
    """
    if isinstance(row_indexes, AbstractBitMap):
        return np.frombuffer(row_indexes.to_array(), dtype=np.uint32).astype(np.uint64)
    if isinstance(row_indexes, AbstractBitMap64):
        arr = np.frombuffer(row_indexes.to_array(), dtype=np.uint64)
    elif isinstance(row_indexes, np.ndarray):
        arr = row_indexes
    elif isinstance(row_indexes, (list, tuple, range)):
        arr = np.asarray(row_indexes)
    elif isinstance(row_indexes, Iterable):
        arr = np.asarray(list(row_indexes))
    else:
        raise DeltaIllegalArgumentError(f"row indexes must be a collection of integers, got {type(row_indexes)!r}")

    if arr.ndim != 1:
        raise DeltaIllegalArgumentError(f"row indexes must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        return np.empty(0, dtype=np.uint64)
    if arr.dtype.kind == "O":  # Python ints that do not fit a single numpy integer type
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in arr):
            raise DeltaIllegalArgumentError("row indexes must be integers")
        if min(arr) < 0:
            raise DeltaIllegalArgumentError("row indexes must not be negative")
        if max(arr) >= _MAX_ROW_INDEX_EXCLUSIVE:
            raise DeltaIllegalArgumentError("row indexes must be below 2**63")
        arr = np.array([int(v) for v in arr], dtype=np.uint64)
    elif arr.dtype.kind == "i":
        if arr.min() < 0:
            raise DeltaIllegalArgumentError("row indexes must not be negative")
        arr = arr.astype(np.uint64)
    elif arr.dtype.kind == "u":
        arr = arr.astype(np.uint64, copy=False)
    else:
        raise DeltaIllegalArgumentError(f"row indexes must be integers, got dtype {arr.dtype}")
    arr = _sorted_unique(arr)
    if arr[-1] >= _MAX_ROW_INDEX_EXCLUSIVE:
        raise DeltaIllegalArgumentError("row indexes must be below 2**63")
    return arr


# ---- RoaringBitmapArray (portable 64-bit format) -----------------------------------


def serialize_bitmap(row_indexes: Any) -> bytes:
    """Serialize row indexes as a Delta RoaringBitmapArray (magic + portable 64-bit format).

    Layout (little endian): magic ``1681511377`` (u32), bucket count (u64), then per
    non-empty bucket in ascending key order its key (the high 32 bits, u32) followed by a
    32-bit Roaring bitmap of the low 32 bits in the portable serialization.
    """
    return _serialize_rows(_row_index_array(row_indexes))


def _serialize_rows(rows: np.ndarray) -> bytes:
    """serialize_bitmap for an already sorted, unique, validated uint64 array."""
    high = rows >> np.uint64(32)
    boundaries = (np.flatnonzero(np.diff(high)) + 1).tolist()
    starts = [0, *boundaries] if rows.size else []
    ends = [*boundaries, int(rows.size)]

    parts = [struct.pack("<IQ", PORTABLE_MAGIC_NUMBER, len(starts))]
    for start, end in zip(starts, ends, strict=False):  # no rows: no start, and ends is [0]
        low = rows[start:end].astype(np.uint32)
        bucket = BitMap(array.array("I", low.tobytes()))
        bucket.run_optimize()  # smaller output; run containers are part of the portable format
        parts.append(struct.pack("<I", int(high[start])))
        parts.append(bucket.serialize())
    return b"".join(parts)


def _portable32_length(buf: memoryview, pos: int) -> int:
    """Byte length of the 32-bit portable Roaring bitmap starting at ``buf[pos]``.

    pyroaring happily ignores trailing bytes, so the length has to come from the header
    to know where the next bucket starts (and to detect truncation).
    """
    end = len(buf)

    def need(n: int, at: int) -> None:
        if at + n > end:
            raise CorruptedLogError("truncated deletion vector bitmap")

    cookie: int
    count: int
    runs: int
    need(4, pos)
    (cookie,) = struct.unpack_from("<I", buf, pos)
    if cookie & 0xFFFF == _SERIAL_COOKIE_RUN:
        count = (cookie >> 16) + 1
        p = pos + 4
        run_flag_bytes = (count + 7) // 8
        need(run_flag_bytes, p)
        run_flags = np.unpackbits(np.frombuffer(buf[p : p + run_flag_bytes], dtype=np.uint8), bitorder="little")
        is_run = run_flags[:count].astype(bool)
        p += run_flag_bytes
        has_offsets = count >= _NO_OFFSET_THRESHOLD
    elif cookie == _SERIAL_COOKIE_NO_RUN:
        need(8, pos)
        (count,) = struct.unpack_from("<I", buf, pos + 4)
        if count > _MAX_CONTAINERS:
            raise CorruptedLogError(f"corrupt deletion vector bitmap: {count} containers")
        p = pos + 8
        is_run = np.zeros(count, dtype=bool)
        has_offsets = True
    else:
        raise CorruptedLogError(f"corrupt deletion vector bitmap: unknown Roaring cookie {cookie}")

    need(4 * count, p)
    header = np.frombuffer(buf[p : p + 4 * count], dtype="<u2").reshape(count, 2)
    p += 4 * count
    if has_offsets:
        p += 4 * count
    cardinality = header[:, 1].astype(np.int64) + 1
    sizes = np.where(cardinality <= _ARRAY_CONTAINER_MAX_CARDINALITY, 2 * cardinality, _BITSET_CONTAINER_BYTES)
    if not is_run.any():
        p += int(sizes.sum())
    else:  # run containers store their own length, so walk the containers in order
        for i in range(count):
            if is_run[i]:
                need(2, p)
                (runs,) = struct.unpack_from("<H", buf, p)
                p += 2 + 4 * runs
            else:
                p += int(sizes[i])
    need(0, p)
    return p - pos


def deserialize_bitmap(data: bytes) -> np.ndarray:
    """Parse a Delta RoaringBitmapArray into sorted, unique uint64 row indexes.

    Raises CorruptedLogError on a wrong magic number, truncated or trailing data,
    unordered or too large bucket keys, or an undecodable Roaring bitmap.
    """
    buf = memoryview(bytes(data))
    if len(buf) < 4:
        raise CorruptedLogError("truncated deletion vector bitmap: no magic number")
    (magic,) = struct.unpack_from("<I", buf, 0)
    if magic != PORTABLE_MAGIC_NUMBER:
        kind = ""
        if magic == _NATIVE_MAGIC_NUMBER:
            kind = " (delta-spark's in-memory native layout, not allowed by the protocol)"
        elif struct.unpack_from(">I", buf, 0)[0] in (PORTABLE_MAGIC_NUMBER, _NATIVE_MAGIC_NUMBER):
            # PROTOCOL.md's inline "JSON Example 3" is in such a pre-release big-endian layout.
            kind = " (a legacy big-endian layout, not the protocol's little-endian format)"
        raise CorruptedLogError(
            f"unexpected deletion vector magic number {magic}{kind}; expected {PORTABLE_MAGIC_NUMBER}"
        )
    if len(buf) < 12:
        raise CorruptedLogError("truncated deletion vector bitmap: no bucket count")
    (num_buckets,) = struct.unpack_from("<Q", buf, 4)
    pos = 12
    # Every bucket takes at least 12 bytes (key + empty bitmap); bounds the loop on garbage.
    if num_buckets > (len(buf) - pos) // 12:
        raise CorruptedLogError(f"truncated deletion vector bitmap: {num_buckets} buckets announced")

    chunks: list[np.ndarray] = []
    previous_key = -1
    for _ in range(num_buckets):
        if pos + 4 > len(buf):
            raise CorruptedLogError("truncated deletion vector bitmap: missing bucket key")
        (key,) = struct.unpack_from("<I", buf, pos)
        pos += 4
        if key <= previous_key:
            raise CorruptedLogError("corrupt deletion vector bitmap: bucket keys not ascending")
        if key >= 1 << 31:
            raise CorruptedLogError(f"corrupt deletion vector bitmap: bucket key {key} has its sign bit set")
        previous_key = key
        length = _portable32_length(buf, pos)
        try:
            bucket = BitMap.deserialize(bytes(buf[pos : pos + length]))
        except ValueError as exc:
            raise CorruptedLogError(f"corrupt deletion vector bitmap: {exc}") from exc
        pos += length
        low = np.frombuffer(bucket.to_array(), dtype=np.uint32)
        if low.size:
            chunks.append(low.astype(np.uint64) | np.uint64(key << 32))
    if pos != len(buf):
        raise CorruptedLogError(f"corrupt deletion vector bitmap: {len(buf) - pos} trailing bytes")
    if not chunks:
        return np.empty(0, dtype=np.uint64)
    return np.concatenate(chunks)


# ---- descriptor ---------------------------------------------------------------------


def _is_remote_uri(path: str) -> bool:
    """True for URIs with a scheme other than ``file`` (ignores Windows drive letters)."""
    scheme = urllib.parse.urlsplit(path).scheme
    return len(scheme) > 1 and scheme != "file"


def _local_path(path_or_uri: str) -> str:
    """A local file-system path from a plain path or a ``file:`` URI (percent-decoded)."""
    if path_or_uri.startswith("file:"):
        parsed = urllib.parse.urlsplit(path_or_uri)
        return urllib.request.url2pathname(parsed.path)
    return path_or_uri


def _join(root: str, relative: str) -> str:
    if _is_remote_uri(root):
        return root.rstrip("/") + "/" + relative
    return os.path.join(_local_path(root), relative)


@dataclass(frozen=True)
class DeletionVectorDescriptor:
    """The ``deletionVector`` struct of an ``add``/``remove`` action."""

    storage_type: str  # 'u' relative (UUID + optional prefix), 'i' inline, 'p' absolute path
    path_or_inline_dv: str
    size_in_bytes: int
    cardinality: int
    offset: int | None = None
    max_row_index: int | None = None

    def __post_init__(self) -> None:
        if self.storage_type not in _STORAGE_TYPES:
            raise DeltaIllegalArgumentError(f"unknown deletion vector storage type {self.storage_type!r}")
        if not isinstance(self.path_or_inline_dv, str):
            raise DeltaIllegalArgumentError("pathOrInlineDv must be a string")
        for name in ("size_in_bytes", "cardinality", "offset", "max_row_index"):
            value = getattr(self, name)
            if value is None and name in ("offset", "max_row_index"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise DeltaIllegalArgumentError(f"deletion vector {name} must be a non-negative int, got {value!r}")
        if self.storage_type == "i" and self.offset is not None:
            raise DeltaIllegalArgumentError("inline deletion vectors have no offset")
        if self.storage_type == "u" and len(self.path_or_inline_dv) < _UUID_Z85_LENGTH:
            raise DeltaIllegalArgumentError(
                f"'u' deletion vector path {self.path_or_inline_dv!r} is shorter than a Z85 UUID"
            )

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DeletionVectorDescriptor:
        """Build from the log's JSON object (or a checkpoint row); bad input is log corruption."""
        def integer(value: Any) -> Any:  # checkpoint readers may hand over numpy integers
            return int(value) if isinstance(value, numbers.Integral) and not isinstance(value, bool) else value

        try:
            return cls(
                storage_type=d["storageType"],
                path_or_inline_dv=d["pathOrInlineDv"],
                size_in_bytes=integer(d["sizeInBytes"]),
                cardinality=integer(d["cardinality"]),
                offset=integer(d.get("offset")),
                max_row_index=integer(d.get("maxRowIndex")),
            )
        except KeyError as exc:
            raise CorruptedLogError(f"invalid deletionVector descriptor {d!r}: missing field {exc}") from exc
        except (TypeError, AttributeError) as exc:
            raise CorruptedLogError(f"invalid deletionVector descriptor {d!r}: not a JSON object") from exc
        except DeltaIllegalArgumentError as exc:
            raise CorruptedLogError(f"invalid deletionVector descriptor {d!r}: {exc}") from exc

    def to_dict(self) -> dict[str, Any]:
        """The log's JSON object; absent optional fields are omitted as the protocol requires."""
        d: dict[str, Any] = {"storageType": self.storage_type, "pathOrInlineDv": self.path_or_inline_dv}
        if self.offset is not None:
            d["offset"] = self.offset
        d["sizeInBytes"] = self.size_in_bytes
        d["cardinality"] = self.cardinality
        if self.max_row_index is not None:
            d["maxRowIndex"] = self.max_row_index
        return d

    @property
    def unique_id(self) -> str:
        """Distinguishes DVs of the same data file during log replay (protocol "Derived Fields")."""
        return _unique_id(self.storage_type, self.path_or_inline_dv, self.offset)

    @property
    def is_inline(self) -> bool:
        return self.storage_type == "i"

    @property
    def file_uuid(self) -> uuid.UUID | None:
        """The DV file's UUID for storage type 'u' (decoded from the last 20 characters)."""
        if self.storage_type != "u":
            return None
        raw = z85_decode(self.path_or_inline_dv[-_UUID_Z85_LENGTH:])
        if len(raw) != 16:
            raise CorruptedLogError(f"'u' deletion vector path {self.path_or_inline_dv!r} does not end in a Z85 UUID")
        return uuid.UUID(bytes=raw)

    def absolute_path(self, table_root: str) -> str | None:
        """Where the DV file lives: a local path (or the URI, for remote storage); None inline.

        ``'u'``: ``<table_root>/<prefix>/deletion_vector_<uuid>.bin``.
        ``'p'``: the stored URI, percent-decoded into a local path when it is a ``file:``
        URI or a bare path (a relative one is resolved against the table root).
        """
        if self.storage_type == "i":
            return None
        if self.storage_type == "u":
            prefix = self.path_or_inline_dv[:-_UUID_Z85_LENGTH]
            name = f"deletion_vector_{self.file_uuid}.bin"
            return _join(table_root, f"{prefix}/{name}" if prefix else name)
        path = self.path_or_inline_dv
        if _is_remote_uri(path):
            return path
        if path.startswith("file:"):
            return _local_path(path)
        local = urllib.parse.unquote(path)
        return local if os.path.isabs(local) else _join(table_root, local)


def inline_descriptor(row_indexes: Any) -> DeletionVectorDescriptor:
    """An 'i' descriptor carrying the bitmap Z85-encoded in the log (for small DVs)."""
    rows = _row_index_array(row_indexes)
    bitmap = _serialize_rows(rows)
    return DeletionVectorDescriptor(
        storage_type="i",
        path_or_inline_dv=z85_encode(bitmap),
        size_in_bytes=len(bitmap),
        cardinality=int(rows.size),
    )


def _unique_id(storage_type: str, path_or_inline_dv: str, offset: int | None) -> str:
    base = storage_type + path_or_inline_dv
    return base if offset is None else f"{base}@{offset}"


def dv_unique_id(dv: Mapping[str, Any] | None) -> str:
    """The unique id of a `deletionVector` as the log holds it (a dict; "" for none): what
    keys a file action together with its path in replay, conflict checks and RESTORE."""
    if not dv:
        return ""
    return _unique_id(str(dv.get("storageType", "")), str(dv.get("pathOrInlineDv", "")), dv.get("offset"))
