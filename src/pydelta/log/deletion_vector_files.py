"""Deletion vector files on storage: reading a table's DVs and writing new ones.

The format itself (Z85, the portable RoaringBitmapArray, descriptors) is protocol knowledge in
`protocol/deletion_vectors.py`; this module does the I/O, locally or through the table's
storage for object-store URIs.
"""

from __future__ import annotations

import os
import struct
import uuid
import zlib
from typing import Any, BinaryIO

import numpy as np

from pydelta.errors import CorruptedLogError, DeltaIllegalArgumentError, MissingDataFileError
from pydelta.log.storage import Storage, storage_for
from pydelta.protocol.deletion_vectors import (
    DV_FILE_FORMAT_VERSION,
    DeletionVectorDescriptor,
    _is_remote_uri,
    _local_path,
    _row_index_array,
    _serialize_rows,
    deserialize_bitmap,
    z85_decode,
    z85_encode,
)

__all__ = ["read_deleted_rows", "write_deletion_vector_file", "write_deletion_vectors"]


# ---- reading ------------------------------------------------------------------------


def _open_dv_file(path: str, storage: Storage | None) -> BinaryIO:
    """A binary file object over the DV file: local, or read whole through the table's storage
    (object stores, or the Spark session's Hadoop FileSystem) when `path` is a remote URI."""
    if not _is_remote_uri(path):
        return open(path, "rb")
    import io

    return io.BytesIO((storage or storage_for(path)).read(path))


def _read_stored_bitmap(path: str, offset: int, size: int, storage: Storage | None) -> bytes:
    """Read and verify one DV record (size, bitmap, CRC-32) at ``offset`` of a DV file."""
    try:
        with _open_dv_file(path, storage) as f:
            version = f.read(1)
            if not version:
                raise CorruptedLogError(f"deletion vector file {path} is empty")
            if version[0] != DV_FILE_FORMAT_VERSION:
                raise CorruptedLogError(
                    f"deletion vector file {path} has format version {version[0]}, "
                    f"expected {DV_FILE_FORMAT_VERSION}"
                )
            f.seek(offset)
            header = f.read(4)
            if len(header) < 4:
                raise CorruptedLogError(f"deletion vector file {path} is truncated at offset {offset}")
            (stored_size,) = struct.unpack(">I", header)
            if stored_size != size:
                raise CorruptedLogError(
                    f"deletion vector in {path} at offset {offset} has {stored_size} bytes, "
                    f"but the log says sizeInBytes={size}"
                )
            payload = f.read(size + 4)
    except FileNotFoundError:
        raise MissingDataFileError(f"deletion vector file {path} does not exist (vacuumed or deleted?)") from None
    if len(payload) < size + 4:
        raise CorruptedLogError(f"deletion vector in {path} at offset {offset} is truncated")
    bitmap, (checksum,) = payload[:size], struct.unpack(">I", payload[size:])
    actual = zlib.crc32(bitmap)
    if actual != checksum:
        raise CorruptedLogError(
            f"deletion vector in {path} at offset {offset} fails its checksum "
            f"(stored {checksum:#010x}, computed {actual:#010x})"
        )
    return bitmap


def read_deleted_rows(descriptor: DeletionVectorDescriptor, table_root: str,
                      storage: Storage | None = None) -> np.ndarray:
    """Sorted uint64 indexes of the rows ``descriptor`` deletes from its data file.

    ``storage``: the table's (its snapshot's), which carries the table's own store settings;
    without it, the one ``storage_for`` gives the path.

    Raises MissingDataFileError when the DV file is gone, and CorruptedLogError when the
    stored data does not match the descriptor (size, checksum, cardinality, maxRowIndex).
    """
    if descriptor.storage_type == "i":
        raw = z85_decode(descriptor.path_or_inline_dv)
        if len(raw) < descriptor.size_in_bytes:
            raise CorruptedLogError(
                f"inline deletion vector holds {len(raw)} bytes, sizeInBytes says {descriptor.size_in_bytes}"
            )
        rows = deserialize_bitmap(raw[: descriptor.size_in_bytes])  # drop Z85 padding
        where = "inline deletion vector"
    else:
        path = descriptor.absolute_path(table_root)
        assert path is not None
        # The protocol says to read an absent offset as 0, but byte 0 is always the version
        # byte; like delta-kernel-rs we read the first record right after it.
        offset = 1 if descriptor.offset is None else descriptor.offset
        rows = deserialize_bitmap(_read_stored_bitmap(path, offset, descriptor.size_in_bytes, storage))
        where = f"deletion vector {path}@{offset}"

    if rows.size != descriptor.cardinality:
        raise CorruptedLogError(
            f"{where} holds {rows.size} rows, but the log says cardinality={descriptor.cardinality}")
    if descriptor.max_row_index is not None and rows.size and int(rows[-1]) > descriptor.max_row_index:
        raise CorruptedLogError(f"{where} deletes row {int(rows[-1])} beyond maxRowIndex={descriptor.max_row_index}")
    return rows


# ---- writing ------------------------------------------------------------------------


def write_deletion_vector_file(table_root: str, row_indexes: Any, prefix: str = "") -> DeletionVectorDescriptor:
    """Write ``row_indexes`` to a new single-DV file and return its 'u' descriptor."""
    return write_deletion_vectors(table_root, [row_indexes], prefix)[0]


def write_deletion_vectors(
    table_root: str, row_index_sets: list[Any], prefix: str = "", storage: Storage | None = None
) -> list[DeletionVectorDescriptor]:
    """Write one DV file holding a bitmap per entry of ``row_index_sets``; their 'u' descriptors, in order.

    The file is ``<table_root>[/<prefix>]/deletion_vector_<uuid4>.bin``: the version byte,
    then one ``<size><bitmap><CRC-32>`` record per DV, each descriptor's ``offset`` at its
    record's size field (as delta-spark packs the DVs of one command into one file).
    ``prefix`` is the optional (random, alphanumeric) directory writers use to spread files
    over object-store partitions. The file is created exclusively, never overwritten, through
    ``storage`` (the table's) when the table is remote.
    """
    if prefix and not (prefix.isascii() and prefix.isalnum()):
        raise DeltaIllegalArgumentError(f"deletion vector prefix must be ASCII alphanumeric, got {prefix!r}")
    file_id = uuid.uuid4()
    chunks = [struct.pack(">B", DV_FILE_FORMAT_VERSION)]
    position = 1
    descriptors = []
    for row_indexes in row_index_sets:
        rows = _row_index_array(row_indexes)
        bitmap = _serialize_rows(rows)
        chunks.append(struct.pack(">I", len(bitmap)) + bitmap + struct.pack(">I", zlib.crc32(bitmap)))
        descriptors.append(DeletionVectorDescriptor(
            storage_type="u",
            path_or_inline_dv=prefix + z85_encode(file_id.bytes),
            size_in_bytes=len(bitmap),
            cardinality=int(rows.size),
            offset=position,
        ))
        position += len(chunks[-1])
    name = f"deletion_vector_{file_id}.bin"
    if _is_remote_uri(table_root):  # through the table's storage (atomic create, like a commit)
        root = table_root.rstrip("/")
        (storage or storage_for(table_root)).put_if_absent(f"{root}/{prefix}/{name}" if prefix else f"{root}/{name}",
                                                         b"".join(chunks))
        return descriptors
    directory = os.path.join(_local_path(table_root), prefix) if prefix else _local_path(table_root)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "xb") as f:
        f.write(b"".join(chunks))
    return descriptors


