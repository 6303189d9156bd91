"""Storage for a table directory.

The log core only talks to `Storage`: the local file system here, object stores
(S3, GCS, Azure) in `pydelta.log.object_store`, chosen by `storage_for` from the
path's URI scheme. Paths given to a Storage are absolute file-system paths,
`file:` URIs, or object-store URIs (`s3://bucket/key`).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Protocol
from urllib.parse import unquote, urlparse

from pydelta.errors import FileAlreadyExistsError as FileAlreadyExistsError  # re-exported for storages' callers
from pydelta.errors import StorageAccessError
from pydelta.log.file_info import FileInfo as FileInfo  # re-exported: what `list_from` yields


class Storage(Protocol):
    def list_from(self, path: str) -> Iterator[FileInfo]:
        """Files in the directory of `path` whose names sort >= basename(path), in order."""

    def read(self, path: str) -> bytes: ...

    def put_if_absent(self, path: str, data: bytes) -> None:
        """Atomically create `path` with `data`; FileAlreadyExistsError if it exists."""

    def put(self, path: str, data: bytes) -> None:
        """Create or atomically replace `path` (for hints like `_last_checkpoint`)."""

    def delete(self, path: str) -> None: ...

    def exists(self, path: str) -> bool: ...

    def is_directory(self, path: str) -> bool:
        """Whether anything is stored under `path` (a table's `_delta_log`)."""


OBJECT_STORE_SCHEMES = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "azure", "memory"})


# Schemes only a Hadoop FileSystem (a Spark session's) can open.
HADOOP_ONLY_SCHEMES = frozenset({"hdfs", "viewfs", "webhdfs", "swebhdfs", "ofs", "o3fs"})

# Storages registered by scheme from outside the log core (the Spark layer registers the
# Hadoop FileSystem of the running session for `hdfs://` and the like): scheme -> factory.
_SCHEME_FACTORIES: dict[str, Callable[[str, Mapping[str, str] | None], Storage]] = {}


def register_scheme(scheme: str, factory: Callable[[str, Mapping[str, str] | None], Storage]) -> None:
    """Serve `scheme://` paths with `factory(path, options)` (replacing an earlier registration)."""
    _SCHEME_FACTORIES[scheme.lower()] = factory


# Where an object-store path's settings come from when its caller gives none: the Spark
# layer derives them from the session's Hadoop configuration (fs.s3a.* for s3a://), so the
# log reaches the bucket Spark's data path reaches, with the same endpoint and credentials.
# The log core only ever sees plain obstore options. scheme -> provider(path) -> options or None.
OptionsProvider = Callable[[str], Mapping[str, str] | None]
_OPTION_PROVIDERS: dict[str, OptionsProvider] = {}


def register_storage_options(scheme: str, provider: OptionsProvider | None) -> None:
    """`storage_for(path)` of a `scheme://` path without options uses `provider(path)`'s (None: stop)."""
    if provider is None:
        _OPTION_PROVIDERS.pop(scheme.lower(), None)
    else:
        _OPTION_PROVIDERS[scheme.lower()] = provider


def default_storage_options(path: str) -> Mapping[str, str] | None:
    """The options `storage_for(path)` uses when its caller gives none: the registered provider's
    for the path's scheme, else None (obstore's environment variables)."""
    provider = _OPTION_PROVIDERS.get(urlparse(path).scheme.lower())
    return provider(path) if provider is not None else None


def is_remote_uri(path: str) -> bool:
    """A URI of a remote store (`s3://bucket/key`, `hdfs://nn/path`, ...), not a local path or `file:` URI."""
    scheme = urlparse(path).scheme.lower()
    return scheme in OBJECT_STORE_SCHEMES or scheme in _SCHEME_FACTORIES or scheme in HADOOP_ONLY_SCHEMES


def to_local_path(path_or_uri: str) -> str:
    """Turn `file:/x`, `file:///x` or a plain path into an absolute local path.

    Object-store URIs are already absolute: they come back unchanged.
    """
    if is_remote_uri(path_or_uri):
        return path_or_uri
    if path_or_uri.startswith("file:"):
        return os.path.abspath(unquote(urlparse(path_or_uri).path))
    return os.path.abspath(path_or_uri)


MAPPED_FROM_BYTES = 4 << 20


def _write_temp(target: str, data: bytes, sync: bool) -> str:
    """`data` in a hidden temporary file beside `target` (its path); a failed write (a full
    disk, a read-only directory) leaves no temporary file behind and is a StorageAccessError."""
    tmp = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.{uuid.uuid4().hex}.tmp")
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            if sync:
                os.fsync(f.fileno())
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _write_error(target, e) from None
    return tmp


def _write_error(target: str, error: OSError) -> StorageAccessError:
    """A local write that failed did not happen (the temporary file is gone, the target untouched)."""
    return StorageAccessError(f"writing {target} failed: {error.strerror or error}", not_applied=True)


class LocalStorage:
    """The local file system. Atomic creates use a temp file plus hard link."""

    def list_from(self, path: str) -> Iterator[FileInfo]:
        directory, start = os.path.split(to_local_path(path))
        try:
            entries = [e for e in os.scandir(directory) if e.name >= start]
        except FileNotFoundError:
            return iter(())
        entries.sort(key=lambda e: e.name)
        out = []
        for entry in entries:
            try:
                if not entry.is_file():
                    continue
                st = entry.stat()
            except FileNotFoundError:
                continue
            out.append(FileInfo(entry.path, st.st_size, st.st_mtime_ns // 1_000_000))
        return iter(out)

    def read(self, path: str) -> bytes:
        with open(to_local_path(path), "rb") as f:
            return f.read()

    def read_mapped(self, path: str) -> bytes | mmap.mmap:
        """The file's bytes, memory-mapped (read-only, pages loaded up front) from `MAPPED_FROM_BYTES` on.

        A 350 MB commit is parsed where the page cache holds it instead of being copied first (0.2 s).
        Log files are written once and never rewritten in place, so the mapping stays valid.
        """
        with open(to_local_path(path), "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if os.name == "nt" or size == 0 or size < MAPPED_FROM_BYTES:
                return f.read()
            flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
            try:
                return mmap.mmap(f.fileno(), 0, flags=flags, prot=mmap.PROT_READ)
            except OSError:  # a file system that cannot map files (some FUSE mounts)
                return f.read()

    def put_if_absent(self, path: str, data: bytes) -> None:
        target = to_local_path(path)
        tmp = _write_temp(target, data, sync=True)
        try:
            os.link(tmp, target)
        except FileExistsError:
            raise FileAlreadyExistsError(f"{target} already exists") from None
        except OSError as e:
            raise _write_error(target, e) from None
        finally:
            os.unlink(tmp)

    def put(self, path: str, data: bytes) -> None:
        target = to_local_path(path)
        tmp = _write_temp(target, data, sync=False)
        try:
            os.replace(tmp, target)
        except OSError as e:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise _write_error(target, e) from None

    def delete(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(to_local_path(path))

    def exists(self, path: str) -> bool:
        return os.path.exists(to_local_path(path))

    def is_directory(self, path: str) -> bool:
        return os.path.isdir(to_local_path(path))

    def file_info(self, path: str) -> FileInfo:
        p = to_local_path(path)
        st = os.stat(p)
        return FileInfo(p, st.st_size, st.st_mtime_ns // 1_000_000)


def storage_for(path: str, options: Mapping[str, str] | None = None) -> Storage:
    """The storage serving `path`: the local file system, or an object store by URI scheme.

    `options` are the object store's settings (credentials, endpoint, region, ...) as
    obstore names them (`aws_endpoint`, `aws_access_key_id`, ...). Without them, those of
    `default_storage_options(path)` (e.g. derived from an enabled Spark session's fs.s3a.*
    Hadoop settings), over the usual environment variables (AWS_*, GOOGLE_*, AZURE_*).
    """
    scheme = urlparse(path).scheme.lower()
    if scheme in _SCHEME_FACTORIES:
        return _SCHEME_FACTORIES[scheme](path, options)
    if scheme in OBJECT_STORE_SCHEMES:
        from pydelta.log.object_store import object_store_storage

        return object_store_storage(path, default_storage_options(path) if options is None else options)
    if scheme in HADOOP_ONLY_SCHEMES:
        from pydelta.errors import DeltaNotImplementedError

        raise DeltaNotImplementedError(
            f"'{scheme}://' tables are reached through the Spark session's Hadoop FileSystem, which this process "
            "does not have (enable pydelta on the SparkSession first: pydelta.enable(spark)); Python data source "
            "workers (streaming reads of such tables) cannot reach it: not supported yet")
    if scheme not in ("", "file") and len(scheme) > 1:
        from pydelta.errors import DeltaIllegalArgumentError

        raise DeltaIllegalArgumentError(
            f"storage scheme '{scheme}' is not supported (local paths, file:, "
            f"{', '.join(sorted(OBJECT_STORE_SCHEMES - {'memory'}))}; hdfs: and other Hadoop file systems "
            "once a Spark session is enabled for pydelta)")
    return LocalStorage()
