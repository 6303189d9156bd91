"""The running Spark session's Hadoop FileSystem behind the `Storage` protocol.

For schemes only the cluster can reach (`hdfs://`, `viewfs://`, ...): the log core cannot
open them itself, so `install(spark)` registers this storage for them and every log
operation (listing, reading commits, checkpoints, atomic commit creation) goes through
the JVM's `FileSystem` with the session's Hadoop configuration. A commit is written to a
temporary file and then renamed with `FileContext.rename(..., NONE)`, which fails when
the target exists: on HDFS that rename is atomic (delta-spark's HDFSLogStore does the
same), so two writers of one version cannot both win and readers never see half a commit.
"""

from __future__ import annotations

import uuid
from typing import Any, Iterator, Mapping

from pydelta.log.storage import HADOOP_ONLY_SCHEMES, FileAlreadyExistsError, FileInfo, register_scheme
from pydelta.spark._typing import SparkSession

# Hadoop file systems whose paths pydelta sends to the session's FileSystem.
HADOOP_SCHEMES = tuple(sorted(HADOOP_ONLY_SCHEMES))


class HadoopFileSystemStorage:
    """`Storage` over `org.apache.hadoop.fs.FileSystem` of one Spark session."""

    def __init__(self, spark: SparkSession) -> None:
        self._jvm = spark._jvm
        self._gateway = spark.sparkContext._gateway
        self._conf = spark._jsparkSession.sessionState().newHadoopConf()

    # ---- helpers -------------------------------------------------------------------------

    def _path(self, path: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(path)

    def _fs(self, jpath: Any) -> Any:
        return jpath.getFileSystem(self._conf)

    @staticmethod
    def _is(error: Exception, java_class: str) -> bool:
        java = getattr(error, "java_exception", None)
        return java is not None and java_class in str(java.getClass().getName())

    def _rename(self, source: Any, target: Any, overwrite: bool) -> None:
        rename = self._jvm.org.apache.hadoop.fs.Options.Rename
        options = self._gateway.new_array(rename, 1)
        options[0] = rename.OVERWRITE if overwrite else rename.NONE
        context = self._jvm.org.apache.hadoop.fs.FileContext.getFileContext(target.toUri(), self._conf)
        context.rename(source, target, options)

    def _write(self, jpath: Any, data: bytes) -> None:
        out = self._fs(jpath).create(jpath, False)
        try:
            out.write(bytearray(data))
        finally:
            out.close()

    def _temp_beside(self, jpath: Any) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(jpath.getParent(), f".{jpath.getName()}.{uuid.uuid4().hex}.tmp")

    # ---- Storage -------------------------------------------------------------------------

    def list_from(self, path: str) -> Iterator[FileInfo]:
        jpath = self._path(path)
        directory, start = jpath.getParent(), jpath.getName()
        try:
            statuses = self._fs(directory).listStatus(directory)
        except Exception as e:  # noqa: BLE001 - py4j wraps the Java exception
            if self._is(e, "FileNotFoundException"):
                return iter(())
            raise
        out = []
        for status in statuses:
            name = status.getPath().getName()
            if name >= start and not status.isDirectory():
                out.append(FileInfo(str(status.getPath().toString()), int(status.getLen()),
                                    int(status.getModificationTime())))
        out.sort(key=lambda f: f.name)
        return iter(out)

    def read(self, path: str) -> bytes:
        jpath = self._path(path)
        try:
            stream = self._fs(jpath).open(jpath)
        except Exception as e:  # noqa: BLE001 - py4j wraps the Java exception
            if self._is(e, "FileNotFoundException"):
                raise FileNotFoundError(path) from None
            raise
        try:
            return bytes(self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()

    def put_if_absent(self, path: str, data: bytes) -> None:
        target = self._path(path)
        temp = self._temp_beside(target)
        self._write(temp, data)
        try:
            self._rename(temp, target, overwrite=False)
        except Exception as e:  # noqa: BLE001
            self._fs(temp).delete(temp, False)
            if self._is(e, "FileAlreadyExistsException"):
                raise FileAlreadyExistsError(f"{path} already exists") from None
            raise

    def put(self, path: str, data: bytes) -> None:
        target = self._path(path)
        temp = self._temp_beside(target)
        self._write(temp, data)
        self._rename(temp, target, overwrite=True)

    def delete(self, path: str) -> None:
        jpath = self._path(path)
        self._fs(jpath).delete(jpath, False)

    def exists(self, path: str) -> bool:
        jpath = self._path(path)
        return bool(self._fs(jpath).exists(jpath))

    def is_directory(self, path: str) -> bool:
        jpath = self._path(path)
        fs = self._fs(jpath)
        return bool(fs.exists(jpath) and fs.getFileStatus(jpath).isDirectory())

    def list_recursive(self, path: str) -> Iterator[FileInfo]:
        """Every file below the directory `path` (VACUUM's listing), in no particular order."""
        jpath = self._path(path)
        fs = self._fs(jpath)
        if not fs.exists(jpath):
            return iter(())
        files = fs.listFiles(jpath, True)
        out = []
        while files.hasNext():
            status = files.next()
            out.append(FileInfo(str(status.getPath().toString()), int(status.getLen()),
                                int(status.getModificationTime())))
        return iter(out)

    def file_info(self, path: str) -> FileInfo:
        jpath = self._path(path)
        status = self._fs(jpath).getFileStatus(jpath)
        return FileInfo(str(status.getPath().toString()), int(status.getLen()), int(status.getModificationTime()))


def install(spark: SparkSession, schemes: tuple[str, ...] = HADOOP_SCHEMES) -> None:
    """Serve `schemes` through this session's Hadoop FileSystem (options are Hadoop confs, unused)."""

    def factory(path: str, options: Mapping[str, str] | None) -> HadoopFileSystemStorage:
        return HadoopFileSystemStorage(spark)

    for scheme in schemes:
        register_scheme(scheme, factory)


class HadoopDataFiles:
    """The data-file side of a write to a table only the cluster can reach (hdfs://, viewfs://...).

    Spark writes the files; the driver lists them, reads their footers (only the tail bytes,
    through the JVM) and moves them with the session's Hadoop FileSystem: nothing assumes
    that the driver shares a disk with the executors.
    """

    def __init__(self, spark: SparkSession) -> None:
        self.storage = HadoopFileSystemStorage(spark)
        self._jvm = spark._jvm

    def list_staged(self, staging: str) -> list[FileInfo]:
        """The Parquet files under `staging`, recursively (hidden and `_` names skipped), sorted."""
        out = []
        for info in self.storage.list_recursive(staging):
            parts = self.relative(info.path, staging).split("/")
            if info.path.endswith(".parquet") and not any(p.startswith(("_", ".")) for p in parts):
                out.append(info)
        return sorted(out, key=lambda f: f.path)

    def relative(self, path: str, staging: str) -> str:
        """`path` relative to the directory `staging` (both URIs, possibly qualified differently)."""
        base = [p for p in _uri_path(staging).split("/") if p]
        return "/".join([p for p in _uri_path(path).split("/") if p][len(base):])

    def footer_stats(self, info: FileInfo, data_schema: Any, **kw: Any) -> tuple[int, str]:
        """(numRecords, stats JSON) from the file's footer, read as its last bytes."""
        import io
        import struct

        import pyarrow.parquet as pq

        from pydelta.protocol.file_stats import collect_stats

        tail8 = self._read_range(info.path, info.size - 8, 8)
        length = struct.unpack("<I", tail8[:4])[0]
        tail = self._read_range(info.path, info.size - length - 8, length + 8)
        metadata = pq.read_metadata(io.BytesIO(b"PAR1" + tail))
        rows = sum(metadata.row_group(i).num_rows for i in range(metadata.num_row_groups))
        return rows, collect_stats(metadata, data_schema, **kw)

    def _read_range(self, path: str, offset: int, length: int) -> bytes:
        jpath = self.storage._path(path)
        stream = self.storage._fs(jpath).open(jpath)
        try:
            stream.seek(offset)
            return bytes(self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream, length))
        finally:
            stream.close()

    def move(self, source: str, dest: str) -> tuple[int, int]:
        """Rename `source` to `dest` (parents created); returns dest's (size, modification time ms)."""
        src, dst = self.storage._path(source), self.storage._path(dest)
        fs = self.storage._fs(dst)
        fs.mkdirs(dst.getParent())
        if not fs.rename(src, dst):
            raise OSError(f"could not move {source} to {dest}")
        status = fs.getFileStatus(dst)
        return int(status.getLen()), int(status.getModificationTime())

    def remove(self, path: str, recursive: bool = False) -> None:
        jpath = self.storage._path(path)
        self.storage._fs(jpath).delete(jpath, recursive)


def _uri_path(uri: str) -> str:
    from urllib.parse import urlparse

    return urlparse(uri).path


# Object-store schemes whose data Spark reads and writes through a Hadoop connector jar that
# pip cannot install: the FileSystem class each needs, and the Maven artifact that has it.
CONNECTORS: dict[str, tuple[str, str]] = {
    "s3a": ("org.apache.hadoop.fs.s3a.S3AFileSystem", "org.apache.hadoop:hadoop-aws:{hadoop}"),
    "gs": ("com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem", "com.google.cloud.bigdataoss:gcs-connector"),
    "abfs": ("org.apache.hadoop.fs.azurebfs.AzureBlobFileSystem", "org.apache.hadoop:hadoop-azure:{hadoop}"),
    "abfss": ("org.apache.hadoop.fs.azurebfs.SecureAzureBlobFileSystem", "org.apache.hadoop:hadoop-azure:{hadoop}"),
}


def require_connector(spark: SparkSession, uri: str) -> None:
    """Refuse, before any I/O, a table URI whose Hadoop connector the Spark session lacks.

    Without it Spark fails deep inside a job with a Java ClassNotFoundException; this names
    the missing artifact (matching the session's Hadoop version) and how to add it instead.
    """
    from urllib.parse import urlparse

    from pydelta.errors import MissingConnectorError

    scheme = urlparse(str(uri)).scheme.lower()
    if scheme not in CONNECTORS:
        return
    default_class, artifact = CONNECTORS[scheme]
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    fs_class = conf.get(f"fs.{scheme}.impl") or default_class
    try:
        conf.getClassByName(fs_class)
        return
    except Exception:  # noqa: BLE001 - py4j's ClassNotFoundException
        pass
    hadoop = str(spark._jvm.org.apache.hadoop.util.VersionInfo.getVersion())
    coordinates = artifact.format(hadoop=hadoop)
    raise MissingConnectorError(
        f"Spark cannot reach {uri}: the Hadoop FileSystem for '{scheme}://' ({fs_class}) is not on the "
        f"session's classpath. Add the connector jar {coordinates} (and its dependencies, e.g. the AWS SDK "
        f"bundle for hadoop-aws) with spark.jars / spark.jars.packages when building the session, or use "
        f"a cluster image that ships it. pydelta's log core reaches '{scheme}://' on its own, Spark's "
        "data path needs the connector."
    )
