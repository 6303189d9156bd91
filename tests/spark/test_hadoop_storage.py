"""The Hadoop FileSystem storage (spark/base/hadoop_storage.py), on Hadoop's local file system.

No HDFS runs here: the storage is exercised through the same JVM FileSystem/FileContext
calls on `file:` paths, and the scheme registry is checked to route `hdfs://` to it.
"""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

import pydelta
from pydelta.log.storage import FileAlreadyExistsError, is_remote_uri, storage_for
from pydelta.spark.base.hadoop_storage import HadoopFileSystemStorage
from pydelta.txn.commit_info import Operation
from pydelta.txn.transaction import OptimisticTransaction

pytestmark = pytest.mark.spark


def test_storage_operations(spark, tmp_path):
    storage = HadoopFileSystemStorage(spark)
    log = tmp_path / "t" / "_delta_log"
    first = f"file://{log}/00000000000000000000.json"
    storage.put_if_absent(first, b'{"a": 1}\n')
    with pytest.raises(FileAlreadyExistsError):
        storage.put_if_absent(first, b"other")
    assert storage.read(first) == b'{"a": 1}\n'
    storage.put(f"file://{log}/_last_checkpoint", b"x")
    storage.put(f"file://{log}/_last_checkpoint", b"y")  # replaced
    assert storage.read(f"{log}/_last_checkpoint") == b"y"
    storage.put_if_absent(f"{log}/00000000000000000001.json", b"{}")
    names = [f.name for f in storage.list_from(f"{log}/00000000000000000001")]
    assert names == ["00000000000000000001.json", "_last_checkpoint"]  # from the start key, sorted, no .crc
    assert [f.size for f in storage.list_from(f"{log}/0")][:2] == [9, 2]
    assert storage.exists(first) and storage.is_directory(str(log)) and not storage.is_directory(first)
    storage.delete(first)
    assert not storage.exists(first) and list(storage.list_from(f"{tmp_path}/missing/x")) == []
    with pytest.raises(FileNotFoundError):
        storage.read(first)


def test_racing_commits_have_one_winner(spark, tmp_path):
    storage = HadoopFileSystemStorage(spark)
    target = f"{tmp_path}/_delta_log/00000000000000000005.json"
    wins, losses = [], []

    def attempt(i: int) -> None:
        try:
            storage.put_if_absent(target, f"writer {i}".encode())
            wins.append(i)
        except FileAlreadyExistsError:
            losses.append(i)

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1 and len(losses) == 5
    assert storage.read(target) == f"writer {wins[0]}".encode()


def test_a_table_through_the_hadoop_storage(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(0, 10, numPartitions=2).write.format("delta").save(path)
    hadoop = HadoopFileSystemStorage(spark)
    snap = pydelta.load_snapshot(f"file://{path}", storage=hadoop)
    local = pydelta.load_snapshot(path)
    assert snap.version == local.version == 0
    assert sorted(snap.files().column("path").to_pylist()) == sorted(local.files().column("path").to_pylist())
    txn = OptimisticTransaction(snap.table_root, snap, storage=hadoop)
    txn.update_metadata(replace(snap.metadata, configuration={"delta.appendOnly": "true"}))
    version = txn.commit([], Operation("SET TBLPROPERTIES", {}))
    assert version == 1
    import deltalake

    assert deltalake.DeltaTable(path).metadata().configuration == {"delta.appendOnly": "true"}
    assert spark.read.format("delta").load(path).count() == 10


def test_hdfs_paths_route_to_the_session_file_system(spark):
    assert is_remote_uri("hdfs://namenode:8020/warehouse/t")
    assert isinstance(storage_for("hdfs://namenode:8020/warehouse/t"), HadoopFileSystemStorage)
    assert not is_remote_uri("/tmp/t") and not is_remote_uri("file:///tmp/t")
