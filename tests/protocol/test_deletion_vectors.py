"""Tests for pydelta.protocol.deletion_vectors (no Spark).

Golden tables under tests/data/golden are read-only: anything that writes or corrupts
files works on a copy in tmp_path. Cross-checks use the `deltalake` package (delta-rs) as an
independent reader of the same deletion vectors.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import urllib.parse
import urllib.request
import uuid
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyroaring import BitMap, BitMap64
from tests.golden_paths import GOLDEN

from pydelta.errors import CorruptedLogError, DeltaError, DeltaIllegalArgumentError, MissingDataFileError
from pydelta.log.deletion_vector_files import read_deleted_rows, write_deletion_vector_file, write_deletion_vectors
from pydelta.protocol.deletion_vectors import (
    PORTABLE_MAGIC_NUMBER,
    DeletionVectorDescriptor,
    deserialize_bitmap,
    inline_descriptor,
    serialize_bitmap,
    z85_decode,
    z85_encode,
)

KEY_CASES = GOLDEN / "delta-spark/log-replay-dv-key-cases/delta"
DV_SMALL = GOLDEN / "delta-rs/table-with-dv-small"
DV_COLUMN_MAPPING = GOLDEN / "delta-spark/dv-with-columnmapping/delta"
DV_PARTITIONED = GOLDEN / "delta-spark/dv-partitioned-with-checkpoint/delta"
DV_TABLES = [
    KEY_CASES,
    DV_SMALL,
    DV_COLUMN_MAPPING,
    DV_PARTITIONED,
    GOLDEN / "delta-rs/cdf-table-with-cdc-and-dvs",
    GOLDEN / "delta-rs/table_with_deletion_logs",
]

needs_golden = pytest.mark.usefixtures("golden")  # the fixture fails clearly when the tables are missing

# The inline example of delta-kernel-rs: rows 3, 4, 7, 11, 18, 29 in the protocol's format.
KERNEL_INLINE_DV = "^Bg9^0rr910000000000iXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"
EXAMPLE_ROWS = [3, 4, 7, 11, 18, 29]


# ---- helpers ---------------------------------------------------------------------------


def _commits(table: Path) -> list[list[dict]]:
    """The actions of every JSON commit, in version order."""
    files = sorted((table / "_delta_log").glob("*.json"))
    return [[json.loads(line) for line in f.read_text().splitlines() if line.strip()] for f in files]


def _all_descriptors(table: Path) -> list[DeletionVectorDescriptor]:
    """Every distinct DV referenced by an add or remove in the JSON commits."""
    seen: dict[str, DeletionVectorDescriptor] = {}
    for actions in _commits(table):
        for action in actions:
            for kind in ("add", "remove"):
                dv = action.get(kind, {}).get("deletionVector")
                if dv:
                    descriptor = DeletionVectorDescriptor.from_dict(dv)
                    seen[descriptor.unique_id] = descriptor
    return list(seen.values())


def _active_files(table: Path) -> dict[str, DeletionVectorDescriptor | None]:
    """Minimal JSON log replay: active data file path -> its DV (None if it has none).

    Files are keyed by (path, DV unique id) as the protocol requires, because a DELETE
    re-adds the same path with a new DV and removes the old (path, DV) pair in one commit.
    """
    active: dict[tuple[str, str | None], dict] = {}
    for actions in _commits(table):
        for action in actions:
            for kind in ("add", "remove"):
                if kind not in action:
                    continue
                dv = action[kind].get("deletionVector")
                key = (action[kind]["path"], DeletionVectorDescriptor.from_dict(dv).unique_id if dv else None)
                if kind == "add":
                    active[key] = action[kind]
                else:
                    active.pop(key, None)
    result: dict[str, DeletionVectorDescriptor | None] = {}
    for (path, _), add in active.items():
        assert path not in result, f"{path} is active twice"
        dv = add.get("deletionVector")
        result[path] = DeletionVectorDescriptor.from_dict(dv) if dv else None
    return result


def _data_path(table: Path, add_path: str) -> str:
    return os.path.realpath(os.path.join(table, urllib.parse.unquote(add_path)))


def _deltalake_deleted_rows(table: Path) -> dict[str, np.ndarray]:
    """Deleted row indexes per data file, as delta-rs computes them."""
    import deltalake
    reader = deltalake.DeltaTable(str(table)).deletion_vectors()
    result = {}
    for row in pa.table(reader).to_pylist():
        path = os.path.realpath(urllib.request.url2pathname(urllib.parse.urlsplit(row["filepath"]).path))
        result[path] = np.flatnonzero(~np.asarray(row["selection_vector"], dtype=bool)).astype(np.uint64)
    return result


def _live_rows(table: Path) -> pa.Table:
    """The table's live rows (partition columns included), applying DVs with our reader."""
    pieces = []
    for path, dv in _active_files(table).items():
        data = pq.ParquetFile(_data_path(table, path)).read()
        if dv is not None:
            keep = np.ones(data.num_rows, dtype=bool)
            keep[read_deleted_rows(dv, str(table)).astype(np.int64)] = False
            data = data.filter(pa.array(keep))
        pieces.append(data)
    return pa.concat_tables(pieces)


def _sorted_rows(t: pa.Table, columns: list[str]) -> list[tuple]:
    return sorted(zip(*(t.column(c).to_pylist() for c in columns), strict=True))


# ---- Z85 ---------------------------------------------------------------------------------


def test_z85_known_vector_from_zeromq_spec() -> None:
    data = bytes([0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B])
    assert z85_encode(data) == "HelloWorld"
    assert z85_decode("HelloWorld") == data


@pytest.mark.parametrize("length", [0, 4, 16, 64, 4096])
def test_z85_round_trip(length: int) -> None:
    data = np.random.default_rng(length).integers(0, 256, length, dtype=np.uint8).tobytes()
    text = z85_encode(data)
    assert len(text) == length // 4 * 5
    assert z85_decode(text) == data


def test_z85_extreme_groups() -> None:
    assert z85_encode(b"\x00" * 4) == "00000"
    assert z85_decode(z85_encode(b"\xff" * 8)) == b"\xff" * 8


def test_z85_pads_to_a_multiple_of_four_bytes() -> None:
    text = z85_encode(b"abcdefg")
    assert len(text) == 10
    assert z85_decode(text) == b"abcdefg\x00"


@pytest.mark.parametrize("bad", ["abcd", "Hello World", 'Hell"', "#####", "Hellö"])
def test_z85_decode_rejects_malformed_text(bad: str) -> None:
    with pytest.raises(CorruptedLogError):
        z85_decode(bad)


# ---- RoaringBitmapArray ---------------------------------------------------------------------


def test_serialization_matches_the_reference_bytes() -> None:
    # Byte-for-byte what delta-spark / delta-kernel-rs produce for this small DV.
    expected = z85_decode(KERNEL_INLINE_DV)
    assert serialize_bitmap(EXAMPLE_ROWS) == expected
    assert expected[:4] == struct.pack("<I", PORTABLE_MAGIC_NUMBER)
    assert deserialize_bitmap(expected).tolist() == EXAMPLE_ROWS


def _cases() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(42)
    return {
        "empty": np.array([], dtype=np.uint64),
        "single": np.array([0]),
        "array-containers": rng.choice(1_000_000, 5000, replace=False),
        "bitset-container": np.arange(0, 65536, 2),
        "run-containers": np.concatenate([np.arange(10, 200_000), np.arange(300_000, 300_005)]),
        "above-2^32": np.array([1, 2**32 - 1, 2**32, 2**32 + 7, 5 * 2**32 + 3, 2**40]),
        "max-row-index": np.array([0, 2**63 - 1], dtype=np.uint64),
        "many-buckets": (rng.choice(2000, 300, replace=False).astype(np.uint64) << np.uint64(32))
        | rng.integers(0, 2**32, 300, dtype=np.uint64),
    }


@pytest.mark.parametrize("name", list(_cases()))
def test_bitmap_round_trip(name: str) -> None:
    rows = _cases()[name]
    expected = np.unique(rows.astype(np.uint64))
    data = serialize_bitmap(rows)
    result = deserialize_bitmap(data)
    assert result.dtype == np.uint64
    np.testing.assert_array_equal(result, expected)
    # Independent check: CRoaring's own 64-bit portable format is the payload after the magic.
    assert np.array_equal(np.frombuffer(BitMap64.deserialize(data[4:]).to_array(), np.uint64), expected)


@pytest.mark.parametrize("name", ["array-containers", "run-containers", "above-2^32", "many-buckets"])
def test_bitmap_reads_croaring_64bit_portable_output(name: str) -> None:
    rows = np.unique(_cases()[name].astype(np.uint64))
    bitmap = BitMap64(rows.tolist())
    bitmap.run_optimize()
    data = struct.pack("<I", PORTABLE_MAGIC_NUMBER) + bitmap.serialize()
    np.testing.assert_array_equal(deserialize_bitmap(data), rows)


def test_bitmap_accepts_many_input_forms() -> None:
    expected = [1, 5, 2**33]
    for rows in (
        [5, 1, 2**33, 5],
        (2**33, 1, 5),
        np.array([5, 1, 2**33], dtype=np.int64),
        np.array([5, 1, 2**33], dtype=np.uint64),
        (x for x in [1, 5, 2**33]),
        BitMap64([1, 5, 2**33]),
    ):
        assert deserialize_bitmap(serialize_bitmap(rows)).tolist() == expected
    assert deserialize_bitmap(serialize_bitmap(BitMap([7, 3]))).tolist() == [3, 7]
    assert deserialize_bitmap(serialize_bitmap(range(3))).tolist() == [0, 1, 2]
    assert deserialize_bitmap(serialize_bitmap(np.array([3], dtype=np.uint32))).tolist() == [3]


@pytest.mark.parametrize(
    "rows",
    [[-1], np.array([0, -5]), [2**63], np.array([1.5]), np.zeros((2, 2), dtype=np.int64), [True], "abc", 17],
)
def test_bitmap_rejects_invalid_row_indexes(rows: object) -> None:
    with pytest.raises(DeltaIllegalArgumentError):
        serialize_bitmap(rows)


def test_bitmap_millions_of_rows() -> None:
    rng = np.random.default_rng(7)
    raw = rng.integers(0, 3 * 2**32, 3_000_000, dtype=np.uint64)
    rows = np.sort(raw)
    rows = rows[np.concatenate(([True], rows[1:] != rows[:-1]))]
    np.testing.assert_array_equal(deserialize_bitmap(serialize_bitmap(raw)), rows)
    dense = np.arange(5_000_000, dtype=np.uint64)
    data = serialize_bitmap(dense)
    assert len(data) < 2000  # run containers keep a contiguous delete tiny (vs ~10 MB as a bitset)
    np.testing.assert_array_equal(deserialize_bitmap(data), dense)


def test_deserialize_rejects_bad_magic() -> None:
    data = bytearray(serialize_bitmap([1, 2, 3]))
    data[0] ^= 0xFF
    with pytest.raises(CorruptedLogError, match="magic"):
        deserialize_bitmap(bytes(data))
    native = struct.pack("<I", PORTABLE_MAGIC_NUMBER - 1) + bytes(data[4:])
    with pytest.raises(CorruptedLogError, match="native"):
        deserialize_bitmap(native)


@pytest.mark.parametrize("rows", [[3, 4, 7], list(range(0, 300_000, 3)), [1, 2**35], list(range(100, 70000))])
def test_deserialize_rejects_every_truncation(rows: list[int]) -> None:
    data = serialize_bitmap(rows)
    cuts = range(len(data)) if len(data) < 200 else np.linspace(0, len(data) - 1, 200, dtype=int).tolist()
    for cut in cuts:
        with pytest.raises(CorruptedLogError):
            deserialize_bitmap(data[:cut])


def test_deserialize_rejects_trailing_bytes() -> None:
    with pytest.raises(CorruptedLogError, match="trailing"):
        deserialize_bitmap(serialize_bitmap([1, 2]) + b"\x00")


def _two_bucket_bitmap(first_key: int, second_key: int) -> bytes:
    bucket = BitMap([1]).serialize()
    return (
        struct.pack("<IQ", PORTABLE_MAGIC_NUMBER, 2)
        + struct.pack("<I", first_key)
        + bucket
        + struct.pack("<I", second_key)
        + bucket
    )


def test_deserialize_rejects_unordered_or_signed_bucket_keys() -> None:
    assert deserialize_bitmap(_two_bucket_bitmap(0, 1)).tolist() == [1, 2**32 + 1]
    with pytest.raises(CorruptedLogError, match="ascending"):
        deserialize_bitmap(_two_bucket_bitmap(1, 0))
    with pytest.raises(CorruptedLogError, match="ascending"):
        deserialize_bitmap(_two_bucket_bitmap(1, 1))
    with pytest.raises(CorruptedLogError, match="sign bit"):
        deserialize_bitmap(_two_bucket_bitmap(0, 2**31))


def test_deserialize_accepts_empty_buckets() -> None:
    # delta-spark writes an (empty) bucket for every key below the highest one.
    data = (
        struct.pack("<IQ", PORTABLE_MAGIC_NUMBER, 2)
        + struct.pack("<I", 0)
        + BitMap().serialize()
        + struct.pack("<I", 1)
        + BitMap([4]).serialize()
    )
    assert deserialize_bitmap(data).tolist() == [2**32 + 4]


# ---- descriptor --------------------------------------------------------------------------


def test_descriptor_dict_round_trip() -> None:
    d = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 4, "sizeInBytes": 40,
         "cardinality": 6}
    descriptor = DeletionVectorDescriptor.from_dict(d)
    assert descriptor == DeletionVectorDescriptor("u", "ab^-aqEH.-t@S}K{vb[*k^", 40, 6, offset=4)
    assert descriptor.to_dict() == d
    assert list(descriptor.to_dict()) == ["storageType", "pathOrInlineDv", "offset", "sizeInBytes", "cardinality"]

    inline = {"storageType": "i", "pathOrInlineDv": KERNEL_INLINE_DV, "sizeInBytes": 44, "cardinality": 6,
              "maxRowIndex": 29}
    descriptor = DeletionVectorDescriptor.from_dict(inline)
    assert descriptor.offset is None and descriptor.max_row_index == 29
    assert descriptor.to_dict() == inline
    assert DeletionVectorDescriptor.from_dict({**inline, "sizeInBytes": np.int32(44)}).size_in_bytes == 44
    # Checkpoint rows carry explicit nulls for absent fields.
    assert DeletionVectorDescriptor.from_dict({**inline, "offset": None, "maxRowIndex": None}).to_dict() == {
        k: v for k, v in inline.items() if k != "maxRowIndex"
    }


def test_unique_id_follows_the_protocol() -> None:
    assert DeletionVectorDescriptor("u", "vBn[lx{q8@P<9BNH/isA", 36, 2, offset=1).unique_id == "uvBn[lx{q8@P<9BNH/isA@1"
    assert DeletionVectorDescriptor("i", KERNEL_INLINE_DV, 44, 6).unique_id == "i" + KERNEL_INLINE_DV
    assert DeletionVectorDescriptor("u", "vBn[lx{q8@P<9BNH/isA", 36, 2).unique_id == "uvBn[lx{q8@P<9BNH/isA"


@pytest.mark.parametrize(
    "bad",
    [
        {"storageType": "u", "pathOrInlineDv": "vBn[lx{q8@P<9BNH/isA", "offset": 1, "sizeInBytes": 36},
        {"storageType": "x", "pathOrInlineDv": "vBn[lx{q8@P<9BNH/isA", "sizeInBytes": 36, "cardinality": 2},
        {"storageType": "u", "pathOrInlineDv": "short", "sizeInBytes": 36, "cardinality": 2},
        {"storageType": "u", "pathOrInlineDv": "vBn[lx{q8@P<9BNH/isA", "sizeInBytes": "36", "cardinality": 2},
        {"storageType": "i", "pathOrInlineDv": KERNEL_INLINE_DV, "offset": 1, "sizeInBytes": 44, "cardinality": 6},
        {"storageType": "u", "pathOrInlineDv": "vBn[lx{q8@P<9BNH/isA", "sizeInBytes": 36, "cardinality": -1},
    ],
)
def test_from_dict_rejects_invalid_descriptors(bad: dict) -> None:
    with pytest.raises(CorruptedLogError):
        DeletionVectorDescriptor.from_dict(bad)


def test_absolute_path_for_relative_dvs() -> None:
    # PROTOCOL.md "JSON Example 1": a 2-character random prefix plus the Z85 UUID.
    with_prefix = DeletionVectorDescriptor("u", "ab^-aqEH.-t@S}K{vb[*k^", 40, 6, offset=4)
    assert with_prefix.file_uuid == uuid.UUID("d2c639aa-8816-431a-aaf6-d3fe2512ff61")
    assert (
        with_prefix.absolute_path("s3://mytable/")
        == "s3://mytable/ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
    )
    assert with_prefix.absolute_path("/data/t") == "/data/t/ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
    no_prefix = DeletionVectorDescriptor("u", "vBn[lx{q8@P<9BNH/isA", 36, 2, offset=1)
    assert no_prefix.absolute_path("file:///data/my%20table") == (
        "/data/my table/deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"
    )


def test_absolute_path_for_absolute_and_inline_dvs() -> None:
    s3 = "s3://mytable/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
    assert DeletionVectorDescriptor("p", s3, 40, 6, offset=4).absolute_path("s3://other") == s3
    local = DeletionVectorDescriptor("p", "file:/tmp/some%20dir/dv%25.bin", 40, 6, offset=4)
    assert local.absolute_path("/elsewhere") == "/tmp/some dir/dv%.bin"
    assert DeletionVectorDescriptor("p", "/tmp/a%20b.bin", 40, 6).absolute_path("/x") == "/tmp/a b.bin"
    assert DeletionVectorDescriptor("i", KERNEL_INLINE_DV, 44, 6).absolute_path("/x") is None


# ---- inline DVs ----------------------------------------------------------------------------


def test_read_inline_dv_from_delta_kernel() -> None:
    descriptor = DeletionVectorDescriptor("i", KERNEL_INLINE_DV, 44, 6)
    assert read_deleted_rows(descriptor, "/not/used").tolist() == EXAMPLE_ROWS


def test_protocol_inline_example_uses_a_legacy_layout() -> None:
    # PROTOCOL.md's "JSON Example 3" decodes to a big-endian pre-release layout without the
    # portable magic; delta-spark and delta-kernel-rs reject it too.
    descriptor = DeletionVectorDescriptor("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 40, 6)
    with pytest.raises(CorruptedLogError, match="big-endian"):
        read_deleted_rows(descriptor, "/not/used")


@pytest.mark.parametrize("rows", [[], [0], EXAMPLE_ROWS, [2, 2**32 + 1], list(range(0, 10_000, 7))])
def test_inline_descriptor_round_trip(rows: list[int]) -> None:
    descriptor = inline_descriptor(rows)
    assert descriptor.storage_type == "i" and descriptor.offset is None
    assert descriptor.cardinality == len(rows)
    again = DeletionVectorDescriptor.from_dict(json.loads(json.dumps(descriptor.to_dict())))
    assert read_deleted_rows(again, "/not/used").tolist() == rows


def test_inline_descriptor_with_unaligned_size() -> None:
    # A run-container bitmap has an odd-sized header: Z85 padding must be cut off again.
    descriptor = inline_descriptor(range(1000))
    assert descriptor.size_in_bytes % 4 != 0
    assert read_deleted_rows(descriptor, "/not/used").tolist() == list(range(1000))


def test_inline_cardinality_and_max_row_index_are_validated() -> None:
    good = inline_descriptor(EXAMPLE_ROWS)
    wrong_cardinality = DeletionVectorDescriptor("i", good.path_or_inline_dv, good.size_in_bytes, 5)
    with pytest.raises(CorruptedLogError, match="cardinality"):
        read_deleted_rows(wrong_cardinality, "/not/used")
    too_small_max = DeletionVectorDescriptor("i", good.path_or_inline_dv, good.size_in_bytes, 6, max_row_index=20)
    with pytest.raises(CorruptedLogError, match="maxRowIndex"):
        read_deleted_rows(too_small_max, "/not/used")
    too_long = DeletionVectorDescriptor("i", good.path_or_inline_dv, good.size_in_bytes + 8, 6)
    with pytest.raises(CorruptedLogError):
        read_deleted_rows(too_long, "/not/used")


# ---- golden tables ---------------------------------------------------------------------------


@needs_golden
def test_key_cases_table_dvs() -> None:
    descriptors = _all_descriptors(KEY_CASES)
    by_cardinality = {d.cardinality: read_deleted_rows(d, str(KEY_CASES)).tolist() for d in descriptors}
    # Commits 1..3 delete id = 0, 7 and 14; each new DV contains the earlier deletes.
    assert by_cardinality == {1: [0], 2: [0, 7], 3: [0, 7, 14]}

    (latest,) = [dv for dv in _active_files(KEY_CASES).values()]
    assert latest is not None and latest.cardinality == 3
    assert read_deleted_rows(latest, str(KEY_CASES)).tolist() == [0, 7, 14]


@needs_golden
def test_key_cases_live_rows_match_expected_output() -> None:
    expected = pq.read_table(sorted((KEY_CASES.parent / "expected").glob("*.parquet")))
    assert _sorted_rows(_live_rows(KEY_CASES), ["id"]) == _sorted_rows(expected, ["id"])


@needs_golden
def test_partitioned_table_live_rows_match_expected_output() -> None:
    live = _live_rows(DV_PARTITIONED)
    expected = pq.read_table(sorted((DV_PARTITIONED.parent / "expected").glob("*.parquet")))
    assert live.num_rows == expected.num_rows == 35
    assert _sorted_rows(live, ["col1", "col2"]) == _sorted_rows(expected, ["col1", "col2"])


@needs_golden
def test_table_with_dv_small_against_data_and_deltalake() -> None:
    import deltalake
    ((path, dv),) = _active_files(DV_SMALL).items()
    assert dv == DeletionVectorDescriptor("u", "vBn[lx{q8@P<9BNH/isA", 36, 2, offset=1)
    assert dv.absolute_path(str(DV_SMALL)) == str(DV_SMALL / "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin")
    deleted = read_deleted_rows(dv, str(DV_SMALL))
    assert deleted.tolist() == [0, 9]  # DELETE ... WHERE value IN (0, 9)

    data = pq.ParquetFile(_data_path(DV_SMALL, path)).read()
    values = data.column("value").to_pylist()
    assert [values[i] for i in deleted] == [0, 9]
    ours = [v for i, v in enumerate(values) if i not in set(deleted.tolist())]

    table = deltalake.DeltaTable(str(DV_SMALL))
    try:
        theirs = table.to_pyarrow_table().column("value").to_pylist()
    except Exception:  # deltalake's pyarrow path refuses the deletionVectors reader feature
        result = deltalake.QueryBuilder().register("t", table).execute("SELECT value FROM t").read_all()
        theirs = pa.table(result).column("value").to_pylist()
    assert sorted(ours) == sorted(theirs) == list(range(1, 9))


@needs_golden
@pytest.mark.parametrize("table", DV_TABLES, ids=lambda p: p.parent.name if p.name == "delta" else p.name)
def test_active_dvs_match_deltalake(table: Path) -> None:
    theirs = _deltalake_deleted_rows(table)
    ours = {
        _data_path(table, path): read_deleted_rows(dv, str(table))
        for path, dv in _active_files(table).items()
        if dv is not None
    }
    assert ours.keys() == theirs.keys()
    assert ours  # every table here has active DVs
    for path, rows in ours.items():
        np.testing.assert_array_equal(rows, theirs[path], err_msg=path)


@needs_golden
@pytest.mark.parametrize("table", DV_TABLES, ids=lambda p: p.parent.name if p.name == "delta" else p.name)
def test_every_dv_in_the_log_is_readable(table: Path) -> None:
    descriptors = _all_descriptors(table)
    assert descriptors
    for descriptor in descriptors:
        rows = read_deleted_rows(descriptor, str(table))  # validates checksum and cardinality
        assert len(rows) == descriptor.cardinality
        assert np.all(np.diff(rows.astype(np.int64)) > 0)


# ---- corruption -----------------------------------------------------------------------------


def _small_table_copy(tmp_path: Path) -> tuple[Path, DeletionVectorDescriptor, Path]:
    assert DV_SMALL.is_dir(), f"golden table missing: {DV_SMALL}"
    root = tmp_path / "table"
    shutil.copytree(DV_SMALL, root)
    for f in root.rglob("*"):  # the golden files are read-only
        f.chmod(0o755 if f.is_dir() else 0o644)
    ((_, dv),) = _active_files(root).items()
    assert dv is not None
    return root, dv, Path(dv.absolute_path(str(root)))


def _flip(path: Path, position: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 0x01
    path.write_bytes(bytes(data))


def test_checksum_mismatch_is_corruption(tmp_path: Path) -> None:
    root, dv, path = _small_table_copy(tmp_path)
    assert read_deleted_rows(dv, str(root)).tolist() == [0, 9]
    _flip(path, dv.offset + 4 + dv.size_in_bytes - 1)  # last bitmap byte: row 9 -> row 8
    with pytest.raises(CorruptedLogError, match="checksum"):
        read_deleted_rows(dv, str(root))


def test_corrupted_stored_checksum(tmp_path: Path) -> None:
    root, dv, path = _small_table_copy(tmp_path)
    _flip(path, path.stat().st_size - 1)
    with pytest.raises(CorruptedLogError, match="checksum"):
        read_deleted_rows(dv, str(root))


def test_unknown_file_format_version(tmp_path: Path) -> None:
    root, dv, path = _small_table_copy(tmp_path)
    _flip(path, 0)
    with pytest.raises(CorruptedLogError, match="version"):
        read_deleted_rows(dv, str(root))


def test_size_mismatch_and_truncation(tmp_path: Path) -> None:
    root, dv, path = _small_table_copy(tmp_path)
    wrong_size = DeletionVectorDescriptor("u", dv.path_or_inline_dv, dv.size_in_bytes + 1, 2, offset=1)
    with pytest.raises(CorruptedLogError, match="sizeInBytes"):
        read_deleted_rows(wrong_size, str(root))
    wrong_offset = DeletionVectorDescriptor("u", dv.path_or_inline_dv, dv.size_in_bytes, 2, offset=1000)
    with pytest.raises(CorruptedLogError, match="truncated"):
        read_deleted_rows(wrong_offset, str(root))
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(CorruptedLogError, match="truncated"):
        read_deleted_rows(dv, str(root))


def test_cardinality_mismatch_in_file(tmp_path: Path) -> None:
    root, dv, _ = _small_table_copy(tmp_path)
    wrong = DeletionVectorDescriptor("u", dv.path_or_inline_dv, dv.size_in_bytes, 3, offset=1)
    with pytest.raises(CorruptedLogError, match="cardinality"):
        read_deleted_rows(wrong, str(root))


def test_missing_dv_file(tmp_path: Path) -> None:
    root, dv, path = _small_table_copy(tmp_path)
    path.unlink()
    with pytest.raises(MissingDataFileError) as info:
        read_deleted_rows(dv, str(root))
    assert str(path) in str(info.value)
    assert isinstance(info.value, DeltaError)


def test_absolute_path_dv_reads_the_same_file(tmp_path: Path) -> None:
    root, dv, path = _small_table_copy(tmp_path)
    moved = tmp_path / "dv dir" / "x%y.bin"
    moved.parent.mkdir()
    shutil.copy(path, moved)
    uri = "file://" + urllib.parse.quote(str(moved))
    absolute = DeletionVectorDescriptor("p", uri, dv.size_in_bytes, dv.cardinality, offset=dv.offset)
    assert absolute.absolute_path(str(root)) == str(moved)
    assert read_deleted_rows(absolute, str(root)).tolist() == [0, 9]


# ---- writing --------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["", "ab", "x9Z"])
def test_write_deletion_vector_file_round_trip(tmp_path: Path, prefix: str) -> None:
    rows = np.array([0, 5, 6, 7, 1000, 2**32 + 3, 2**40], dtype=np.uint64)
    descriptor = write_deletion_vector_file(str(tmp_path), rows[::-1], prefix=prefix)
    assert descriptor.storage_type == "u" and descriptor.offset == 1
    assert descriptor.cardinality == len(rows)
    assert descriptor.path_or_inline_dv.startswith(prefix) and len(descriptor.path_or_inline_dv) == len(prefix) + 20

    path = Path(descriptor.absolute_path(str(tmp_path)))
    assert path.parent == (tmp_path / prefix if prefix else tmp_path)
    assert path.name == f"deletion_vector_{descriptor.file_uuid}.bin"

    # Layout: version byte, big-endian size, bitmap, big-endian CRC-32.
    raw = path.read_bytes()
    bitmap = raw[5 : 5 + descriptor.size_in_bytes]
    assert raw[0] == 1
    assert struct.unpack(">I", raw[1:5])[0] == descriptor.size_in_bytes == len(serialize_bitmap(rows))
    assert struct.unpack(">I", raw[5 + descriptor.size_in_bytes :])[0] == zlib.crc32(bitmap)
    assert len(raw) == 1 + 4 + descriptor.size_in_bytes + 4

    logged = DeletionVectorDescriptor.from_dict(json.loads(json.dumps(descriptor.to_dict())))
    np.testing.assert_array_equal(read_deleted_rows(logged, str(tmp_path)), rows)


def test_write_large_deletion_vector(tmp_path: Path) -> None:
    rows = np.sort(np.random.default_rng(3).integers(0, 2**34, 2_000_000, dtype=np.uint64))
    rows = rows[np.concatenate(([True], rows[1:] != rows[:-1]))]
    descriptor = write_deletion_vector_file(str(tmp_path), rows)
    np.testing.assert_array_equal(read_deleted_rows(descriptor, str(tmp_path)), rows)


def test_write_readable_by_file_uri_root(tmp_path: Path) -> None:
    root = tmp_path / "my table"
    descriptor = write_deletion_vector_file("file://" + urllib.parse.quote(str(root)), [4, 2])
    assert read_deleted_rows(descriptor, str(root)).tolist() == [2, 4]


def test_written_file_matches_golden_layout(tmp_path: Path) -> None:
    assert DV_SMALL.is_dir(), f"golden table missing: {DV_SMALL}"
    descriptor = write_deletion_vector_file(str(tmp_path), [0, 9])
    ours = Path(descriptor.absolute_path(str(tmp_path))).read_bytes()
    theirs = (DV_SMALL / "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin").read_bytes()
    assert ours == theirs  # byte-identical to what Databricks wrote for rows {0, 9}


@pytest.mark.parametrize("prefix", ["a/b", "..", "a b", "é"])
def test_write_rejects_unsafe_prefix(tmp_path: Path, prefix: str) -> None:
    with pytest.raises(DeltaIllegalArgumentError):
        write_deletion_vector_file(str(tmp_path), [1], prefix=prefix)


def test_write_never_touches_existing_files(tmp_path: Path) -> None:
    first = write_deletion_vector_file(str(tmp_path), [1])
    second = write_deletion_vector_file(str(tmp_path), [2])
    assert first.path_or_inline_dv != second.path_or_inline_dv
    assert read_deleted_rows(first, str(tmp_path)).tolist() == [1]
    assert read_deleted_rows(second, str(tmp_path)).tolist() == [2]


def test_several_deletion_vectors_share_one_file(tmp_path) -> None:
    """One file, version byte then a <size><bitmap><crc> record per DV, each offset at its size field."""
    sets = [[0, 5, 7], list(range(100, 5000, 3)), [2**33 + 1]]
    descriptors = write_deletion_vectors(str(tmp_path), sets)
    assert len({d.path_or_inline_dv for d in descriptors}) == 1
    files = list(tmp_path.glob("deletion_vector_*.bin"))
    assert len(files) == 1
    data = files[0].read_bytes()
    assert data[0] == 1 and descriptors[0].offset == 1
    for d, rows in zip(descriptors, sets, strict=True):
        size = int.from_bytes(data[d.offset:d.offset + 4], "big")
        assert size == d.size_in_bytes and d.cardinality == len(rows)
        bitmap = data[d.offset + 4:d.offset + 4 + size]
        assert int.from_bytes(data[d.offset + 4 + size:d.offset + 8 + size], "big") == zlib.crc32(bitmap)
        assert read_deleted_rows(d, str(tmp_path)).tolist() == rows
    assert descriptors[-1].offset + 8 + descriptors[-1].size_in_bytes == len(data)


# ---- inline DVs with a padded Z85 tail (the Rust z85 crate's, written by delta-kernel-rs) ---------


Z85_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"  # ZeroMQ RFC 32


def _z85_crate_tail(tail: bytes) -> str:
    """The z85 crate's encoding of a 1-3 byte tail, written out here as its README describes it:
    the bytes as a big-endian number in 5 Z85 digits, the leading 4 - len(tail) digits as '#'."""
    value, digits = int.from_bytes(tail, "big"), []
    for _ in range(5):
        value, digit = divmod(value, 85)
        digits.append(Z85_DIGITS[digit])
    return "#" * (4 - len(tail)) + "".join(reversed(digits))[4 - len(tail):]


def _plain_group_value(group: str) -> int:
    value = 0
    for c in group:
        value = value * 85 + Z85_DIGITS.index(c)
    return value


def test_z85_decodes_a_final_group_beyond_32_bits_as_a_padded_tail() -> None:
    # "HelloWorld" is the ZeroMQ spec's vector; "##093" is the tail 03 00 (768 = 9 * 85 + 3).
    text = "HelloWorld" + "##093"
    assert _plain_group_value("##093") > 2**32  # plain Z85 cannot hold this group
    assert z85_decode(text) == bytes([0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B, 0x03, 0x00])
    rng = np.random.default_rng(7)
    for n in (1, 2, 3):
        for _ in range(50):
            data = rng.integers(0, 256, 8 + n, dtype=np.uint8).tobytes()
            encoded = z85_encode(data[:8]) + _z85_crate_tail(data[8:])
            assert z85_decode(encoded) == data, encoded


@pytest.mark.parametrize("bad", ["Hello##%%%", "##093Hello", "Hello#####", "Hello###%%"])
def test_z85_rejects_malformed_padded_tails(bad: str) -> None:
    # Tails too large for their bytes (two and one bytes), "#" outside the last group, a tail of no bytes.
    with pytest.raises(CorruptedLogError):
        z85_decode(bad)


def test_inline_dv_with_a_padded_tail_reads_its_rows() -> None:
    # Version 5 of delta-kernel-rs's cdf-table-with-dv: 34 bytes, deletes row 3 (its README).
    descriptor = DeletionVectorDescriptor("i", "^Bg9^0rr910000000000iXQKl0rr91000005c8Xg##093", 34, 1)
    assert read_deleted_rows(descriptor, "/not/used").tolist() == [3]
    assert BitMap64.deserialize(z85_decode(descriptor.path_or_inline_dv)[4:]) == BitMap64([3])


def _values_kept(table: Path, path: str, dv: dict | None) -> list[int]:
    """The `value` column of one data file of `table`, without the rows its DV deletes."""
    data = pq.read_table(_data_path(table, path)).column("value").to_pylist()
    deleted = read_deleted_rows(DeletionVectorDescriptor.from_dict(dv), str(table)).tolist() if dv else []
    return [v for i, v in enumerate(data) if i not in set(deleted)]


def _log_core_values(table: Path, version: int) -> list[int]:
    """The table's rows at `version` from pydelta's log core: the snapshot's files minus their DVs."""
    from pydelta import load_snapshot

    files = load_snapshot(str(table), version=version).files().to_pylist()
    return sorted(v for row in files for v in _values_kept(table, row["path"], row["deletion_vector"]))


def test_kernel_inline_dv_table_reads_every_version() -> None:
    import deltalake
    from tests.kernel_tables import CDF_WITH_DV, CDF_WITH_DV_LATEST, cdf_with_dv_values

    for version in range(CDF_WITH_DV_LATEST + 1):
        expected = cdf_with_dv_values(version)
        assert _log_core_values(CDF_WITH_DV, version) == expected, version
        table = deltalake.DeltaTable(str(CDF_WITH_DV), version=version)
        rows = deltalake.QueryBuilder().register("t", table).execute("SELECT value FROM t").read_all()
        assert sorted(rows.column("value").to_pylist()) == expected, version


def test_kernel_inline_dv_table_change_plan() -> None:
    # The log core plans the change feed of every version, DV diffs through the padded tail.
    from tests.kernel_tables import CDF_WITH_DV, CDF_WITH_DV_CHANGES, CDF_WITH_DV_LATEST

    from pydelta import load_snapshot
    from pydelta.log.changes import ChangeRange, plan_changes

    got = []
    for f in plan_changes(load_snapshot(str(CDF_WITH_DV)), ChangeRange(0, CDF_WITH_DV_LATEST)):
        if f.only_rows is None:
            values = _values_kept(CDF_WITH_DV, f.path, f.deletion_vector)
        else:  # a DV diff: exactly these rows
            data = pq.read_table(_data_path(CDF_WITH_DV, f.path)).column("value").to_pylist()
            values = [data[i] for i in f.only_rows.tolist()]
        got += [(v, f.change_type, f.version) for v in values]
    assert sorted(got) == CDF_WITH_DV_CHANGES
