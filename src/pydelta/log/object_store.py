"""Object stores (S3, GCS, Azure) behind the `Storage` protocol, through obstore.

Commits need an atomic create-if-absent: obstore's `put(mode="create")` sends S3's
`If-None-Match: *`, GCS's generation-match precondition and Azure's `If-None-Match`,
so two writers of the same version cannot both succeed (never a check-then-write).
Listing is by prefix from a start key (S3 `start-after`). Paths are full URIs
(`s3://bucket/table/_delta_log/...`); one obstore client serves each bucket.
"""

from __future__ import annotations

import threading
from typing import Any, Iterator, Mapping
from urllib.parse import urlparse

from pydelta.errors import DeltaIllegalArgumentError
from pydelta.log.storage import FileAlreadyExistsError, FileInfo

_CLIENT_OPTIONS = frozenset({"allow_http", "timeout", "connect_timeout", "allow_invalid_certificates", "proxy_url"})
_SCHEME_ALIASES = {"s3a": "s3", "gcs": "gs", "abfss": "abfs"}
_stores: dict[tuple[str, tuple[tuple[str, str], ...]], "ObjectStoreStorage"] = {}
_lock = threading.Lock()


def _bucket_url(path: str) -> str:
    parsed = urlparse(path)
    if not parsed.netloc:
        raise DeltaIllegalArgumentError(f"object store URI {path!r} names no bucket/container")
    return f"{parsed.scheme}://{parsed.netloc}"


def object_store_storage(path: str, options: Mapping[str, str] | None = None) -> "ObjectStoreStorage":
    """The (cached) storage for the bucket of `path` with these options."""
    base = _bucket_url(path)
    key = (base, tuple(sorted((str(k).lower(), str(v)) for k, v in (options or {}).items())))
    with _lock:
        storage = _stores.get(key)
        if storage is None:
            storage = _stores[key] = ObjectStoreStorage(base, options)
        return storage


class ObjectStoreStorage:
    """One bucket or container of an object store."""

    def __init__(self, base_url: str, options: Mapping[str, str] | None = None) -> None:
        from obstore.store import from_url

        self.base = base_url.rstrip("/")
        parsed = urlparse(self.base)
        scheme = _SCHEME_ALIASES.get(parsed.scheme.lower(), parsed.scheme.lower())
        config: dict[str, Any] = {}
        client: dict[str, Any] = {}
        for k, v in (options or {}).items():
            name = str(k).lower()
            (client if name in _CLIENT_OPTIONS else config)[name] = v
        self._store = from_url(f"{scheme}://{parsed.netloc}", config=config or None, client_options=client or None)

    # ---- paths ------------------------------------------------------------------------------
    def _key(self, path: str) -> str:
        if not path.startswith(self.base + "/"):
            raise DeltaIllegalArgumentError(f"{path!r} is not in {self.base}")
        return path[len(self.base) + 1:]

    def _info(self, meta: Mapping[str, Any]) -> FileInfo:
        return FileInfo(f"{self.base}/{meta['path']}", int(meta["size"]),
                        int(meta["last_modified"].timestamp() * 1000))

    # ---- Storage ----------------------------------------------------------------------------
    def list_from(self, path: str) -> Iterator[FileInfo]:
        """Objects directly in the "directory" of `path` whose names sort >= its last part."""
        import obstore

        key = self._key(path)
        directory, _, start = key.rpartition("/")
        prefix = directory + "/" if directory else ""
        # S3 lists strictly after `offset`: start just below `start` and filter. (A start
        # below "!" would need a control character, which object-store paths forbid.)
        below = chr(ord(start[-1]) - 1) if start else ""
        offset = prefix + start[:-1] + below if below > " " and below != "/" else None
        out = []
        for batch in obstore.list(self._store, prefix, offset=offset) if offset else obstore.list(self._store, prefix):
            for meta in batch:
                name = meta["path"][len(prefix):]
                if "/" in name or name < start:
                    continue  # deeper "directories" are not files of this one
                out.append(self._info(meta))
        out.sort(key=lambda f: f.path)
        return iter(out)

    def list_recursive(self, path: str) -> Iterator[FileInfo]:
        """Every object under the "directory" `path` (VACUUM's data file listing)."""
        import obstore

        prefix = self._key(path.rstrip("/") + "/")
        for batch in obstore.list(self._store, prefix):
            for meta in batch:
                yield self._info(meta)

    def read(self, path: str) -> bytes:
        import obstore

        try:
            return bytes(obstore.get(self._store, self._key(path)).bytes())
        except FileNotFoundError:
            raise
        except Exception as e:  # obstore's NotFoundError subclasses FileNotFoundError; keep others
            if type(e).__name__ == "NotFoundError":
                raise FileNotFoundError(path) from None
            raise

    def put_if_absent(self, path: str, data: bytes) -> None:
        import obstore

        try:
            obstore.put(self._store, self._key(path), data, mode="create")
        except Exception as e:
            if type(e).__name__ in ("AlreadyExistsError", "PreconditionError"):
                raise FileAlreadyExistsError(f"{path} already exists") from None
            raise

    def put(self, path: str, data: bytes) -> None:
        import obstore

        obstore.put(self._store, self._key(path), data)

    def delete(self, path: str) -> None:
        import obstore

        try:
            obstore.delete(self._store, self._key(path))
        except FileNotFoundError:
            pass

    def exists(self, path: str) -> bool:
        try:
            self.file_info(path)
        except FileNotFoundError:
            return False
        return True

    def is_directory(self, path: str) -> bool:
        import obstore

        prefix = self._key(path.rstrip("/") + "/")
        for batch in obstore.list(self._store, prefix, chunk_size=1):
            if batch:
                return True
        return False

    def file_info(self, path: str) -> FileInfo:
        import obstore

        try:
            return self._info(obstore.head(self._store, self._key(path)))
        except FileNotFoundError:
            raise
        except Exception as e:
            if type(e).__name__ == "NotFoundError":
                raise FileNotFoundError(path) from None
            raise
