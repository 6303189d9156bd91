"""Object stores (S3, GCS, Azure) behind the `Storage` protocol, through obstore.

Commits need an atomic create-if-absent: obstore's `put(mode="create")` sends S3's
`If-None-Match: *`, GCS's generation-match precondition and Azure's `If-None-Match`,
so two writers of the same version cannot both succeed (never a check-then-write).
Listing is by prefix from a start key (S3 `start-after`). Paths are full URIs
(`s3://bucket/table/_delta_log/...`); one obstore client serves each bucket.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import threading
from collections.abc import Iterator, Mapping
from datetime import timedelta
from typing import Any
from urllib.parse import urlparse

from pydelta.errors import DeltaIllegalArgumentError, FileAlreadyExistsError, StorageAccessError
from pydelta.extras import import_extra
from pydelta.log.file_info import FileInfo

logger = logging.getLogger(__name__)

# HTTP client settings (object_store's ClientConfigKey): obstore takes them apart from the
# store's own keys, and panics when one arrives among those.
_CLIENT_OPTIONS = frozenset({
    "allow_http", "allow_invalid_certificates", "connect_timeout", "default_content_type",
    "http1_only", "http2_keep_alive_interval", "http2_keep_alive_timeout", "http2_keep_alive_while_idle",
    "http2_only", "pool_idle_timeout", "pool_max_idle_per_host", "proxy_url", "proxy_ca_certificate",
    "proxy_excludes", "timeout", "user_agent",
})
_DURATION_OPTIONS = frozenset({"connect_timeout", "timeout", "pool_idle_timeout",
                               "http2_keep_alive_interval", "http2_keep_alive_timeout"})
_STORE_PREFIXES = ("aws_", "google_", "azure_")
# Retries of failed requests (object_store's RetryConfig), spelled as deltalake spells them.
_RETRY_OPTIONS = frozenset({"max_retries", "retry_timeout", "backoff_config.init_backoff",
                            "backoff_config.max_backoff", "backoff_config.base"})
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h)?")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
# deltalake (delta-rs) settings for its own commit coordination on S3 (locking, unsafe
# renames, retries): pydelta commits with the store's conditional put and needs none of them.
_DELTA_RS_ONLY = frozenset({
    "aws_s3_allow_unsafe_rename", "aws_s3_locking_provider", "delta_dynamo_table_name",
    "aws_s3_pool_idle_timeout_seconds", "aws_sts_pool_idle_timeout_seconds",
    "aws_s3_get_internal_retries", "aws_force_credential_load", "dynamo_endpoint_url",
})
_SCHEME_ALIASES = {"s3a": "s3", "gcs": "gs", "abfss": "abfs"}
# The prefix of a store's environment variables (object_store's `from_env`), client settings too.
_ENV_PREFIXES = {"s3": "AWS_", "gs": "GOOGLE_", "az": "AZURE_", "abfs": "AZURE_", "adl": "AZURE_", "azure": "AZURE_"}
_stores: dict[tuple[str, tuple[tuple[str, str], ...]], ObjectStoreStorage] = {}
_lock = threading.Lock()


def _bucket_url(path: str) -> str:
    parsed = urlparse(path)
    if not parsed.netloc:
        raise DeltaIllegalArgumentError(f"object store URI {path!r} names no bucket/container")
    return f"{parsed.scheme}://{parsed.netloc}"


def object_store_storage(path: str, options: Mapping[str, str] | None = None) -> ObjectStoreStorage:
    """The (cached) storage for the bucket of `path` with these options."""
    base = _bucket_url(path)
    key = (base, tuple(sorted((str(k).lower(), str(v)) for k, v in (options or {}).items())))
    with _lock:
        storage = _stores.get(key)
        if storage is None:
            storage = _stores[key] = ObjectStoreStorage(base, options)
        return storage


def _option_value(name: str, value: Any) -> str:
    """Values as obstore parses them: booleans lower-case, a bare number of seconds as "Ns"."""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value).strip()
    if name in _DURATION_OPTIONS and re.fullmatch(r"\d+(\.\d+)?", text):
        return f"{text}s"
    return text


def split_options(options: Mapping[str, Any] | None) -> tuple[dict[str, str], dict[str, str]]:
    """(store config, HTTP client options) from the keys users bring.

    Accepts obstore's names and deltalake's spellings alike, in any case: `AWS_ALLOW_HTTP`,
    `aws_allow_http` and `allow_http` are one client setting; deltalake's own commit
    coordination keys (`AWS_S3_ALLOW_UNSAFE_RENAME`, ...) are dropped.
    """
    config: dict[str, str] = {}
    client: dict[str, str] = {}
    for key, value in (options or {}).items():
        name = str(key).strip().lower()
        if name in _RETRY_OPTIONS:
            continue  # `retry_config`'s
        if name in _DELTA_RS_ONLY:
            logger.debug("storage option %s is deltalake's own; pydelta does not need it", key)
            continue
        bare = next((name[len(p):] for p in _STORE_PREFIXES if name.startswith(p)), name)
        if bare in _CLIENT_OPTIONS:
            client[bare] = _option_value(bare, value)
        else:
            config[name] = _option_value(name, value)
    return config, client


def _seconds(name: str, value: Any) -> timedelta:
    match = _DURATION.fullmatch(str(value).strip().lower())
    if match is None:
        raise DeltaIllegalArgumentError(f"storage option {name}={value!r} is not a duration (e.g. 30s, 500ms, 2m)")
    return timedelta(seconds=float(match.group(1)) * _DURATION_UNITS[match.group(2) or "s"])


def retry_config(options: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """How the client retries failed requests (5xx answers, throttling, dropped connections),
    from deltalake's option names: `max_retries`, `retry_timeout` and `backoff_config.*`;
    None (obstore's defaults: 10 retries within 3 minutes) when none is given."""
    given = {str(k).strip().lower(): v for k, v in (options or {}).items() if str(k).strip().lower() in _RETRY_OPTIONS}
    if not given:
        return None
    config: dict[str, Any] = {}
    backoff: dict[str, Any] = {}
    for name, value in given.items():
        if name == "max_retries":
            config["max_retries"] = int(value)
        elif name == "retry_timeout":
            config["retry_timeout"] = _seconds(name, value)
        elif name == "backoff_config.base":
            backoff["base"] = float(value)
        else:
            backoff[name.rpartition(".")[2]] = _seconds(name, value)
    if backoff:
        config["backoff"] = backoff
    return config


def _with_environment_client_options(scheme: str, client: dict[str, str]) -> dict[str, str]:
    """`client` completed from the environment (AWS_ALLOW_HTTP, AWS_PROXY_URL...).

    obstore replaces the HTTP client settings it read from the environment with any it is
    given, so one given setting (a timeout derived from a Spark session's fs.s3a.*) would
    silently drop e.g. AWS_ALLOW_HTTP=true. Given ones win over the environment's, as for
    the store's own settings.
    """
    prefix = _ENV_PREFIXES.get(scheme)
    if not client or prefix is None:
        return client
    merged = dict(client)
    for name in _CLIENT_OPTIONS - merged.keys():
        value = os.environ.get(prefix + name.upper())
        if value is not None:
            merged[name] = _option_value(name, value)
    return merged


@contextlib.contextmanager
def _storage_errors(action: str, uri: str) -> Iterator[None]:
    """obstore's failures as pydelta errors naming the URI; a missing object stays FileNotFoundError."""
    try:
        yield
    except (FileAlreadyExistsError, DeltaIllegalArgumentError, StorageAccessError):
        raise
    except Exception as e:
        kind = type(e).__name__
        if "NoSuchBucket" in str(e) or "bucket does not exist" in str(e).lower():
            raise StorageAccessError(f"{action} {uri} failed: the bucket does not exist ({_cause(e)})") from None
        if isinstance(e, FileNotFoundError) or kind == "NotFoundError":
            raise FileNotFoundError(uri) from None
        if kind in ("AlreadyExistsError", "PreconditionError"):
            raise
        raise StorageAccessError(f"{action} {uri} failed: {_cause(e)}{_hint(str(e))}") from e


def _hint(message: str) -> str:
    """What to do about the failures users meet first."""
    lowered = message.lower()
    if "api/token" in lowered or "credential" in lowered or "instance metadata" in lowered:
        return (" (no credentials were found: pass them in storage_options, e.g. aws_access_key_id and "
                "aws_secret_access_key, or set the AWS_* / GOOGLE_* / AZURE_* environment variables)")
    return ""


def _cause(e: BaseException) -> str:
    """The first lines of a store error, without obstore's "Debug source" dump."""
    text = str(e).split("Debug source:")[0].strip()
    return " ".join(text.split())[:500] or type(e).__name__


class ObjectStoreStorage:
    """One bucket or container of an object store."""

    def __init__(self, base_url: str, options: Mapping[str, str] | None = None) -> None:
        import_extra("obstore", "object-store", "Object-store tables (s3://, gs://, abfss://)")  # a clear error first
        from obstore.store import from_url

        self.base = base_url.rstrip("/")
        parsed = urlparse(self.base)
        scheme = _SCHEME_ALIASES.get(parsed.scheme.lower(), parsed.scheme.lower())
        config, client = split_options(options)
        client = _with_environment_client_options(scheme, client)
        try:
            # obstore types its options as per-store TypedDicts; these are the caller's string
            # options, which obstore itself validates (a bad key raises here).
            self._store = from_url(
                f"{scheme}://{parsed.netloc}",
                config=config or None,  # type: ignore[arg-type]
                client_options=client or None,  # type: ignore[arg-type]
                retry_config=retry_config(options),  # type: ignore[arg-type]
            )
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # noqa: BLE001 - obstore may panic (a BaseException) on bad keys
            raise DeltaIllegalArgumentError(
                f"invalid storage options for {self.base}: {_cause(e)} (options given: {sorted(options or {})})"
            ) from None

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
        with _storage_errors("listing", path):
            batches = obstore.list(self._store, prefix, offset=offset) if offset else obstore.list(self._store, prefix)
            for batch in batches:
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
        with _storage_errors("listing", path):
            for batch in obstore.list(self._store, prefix):
                for meta in batch:
                    yield self._info(meta)

    def read(self, path: str) -> bytes:
        import obstore

        with _storage_errors("reading", path):
            return bytes(obstore.get(self._store, self._key(path)).bytes())

    def put_if_absent(self, path: str, data: bytes) -> None:
        import obstore

        try:
            with _storage_errors("writing", path):
                obstore.put(self._store, self._key(path), data, mode="create")
        except Exception as e:
            if type(e).__name__ in ("AlreadyExistsError", "PreconditionError"):
                raise FileAlreadyExistsError(f"{path} already exists") from None
            raise

    def put(self, path: str, data: bytes) -> None:
        import obstore

        with _storage_errors("writing", path):
            obstore.put(self._store, self._key(path), data)

    def delete(self, path: str) -> None:
        import obstore

        try:
            with _storage_errors("deleting", path):
                obstore.delete(self._store, self._key(path))
        except FileNotFoundError:
            pass

    def rename(self, source: str, dest: str) -> None:
        """Move an object within the bucket (a server-side copy, then the source deleted)."""
        import obstore

        with _storage_errors("renaming", source):
            obstore.rename(self._store, self._key(source), self._key(dest))

    def exists(self, path: str) -> bool:
        try:
            self.file_info(path)
        except FileNotFoundError:
            return False
        return True

    def is_directory(self, path: str) -> bool:
        import obstore

        prefix = self._key(path.rstrip("/") + "/")
        with _storage_errors("listing", path):
            for batch in obstore.list(self._store, prefix, chunk_size=1):
                if batch:
                    return True
        return False

    def file_info(self, path: str) -> FileInfo:
        import obstore

        with _storage_errors("reading", path):
            return self._info(obstore.head(self._store, self._key(path)))

    def open_input(self, path: str) -> io.RawIOBase:
        """`path` as a seekable binary file that fetches only the ranges read.

        For readers that seek (a Parquet file's footer, then its row groups) in processes that
        read data files themselves (a streaming source's Python workers), instead of the
        whole object. FileNotFoundError when it does not exist.
        """
        import obstore

        with _storage_errors("reading", path):
            return _RangeFile(obstore.open_reader(self._store, self._key(path)))


class _RangeFile(io.RawIOBase):
    """obstore's reader as a Python raw file (pyarrow wants `closed`, `readinto` and friends)."""

    def __init__(self, reader: Any) -> None:
        super().__init__()
        self._reader = reader

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = memoryview(self._reader.read(len(view)))
        view[:len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return int(self._reader.seek(offset, whence))

    def tell(self) -> int:
        return int(self._reader.tell())

    def close(self) -> None:
        if not self.closed:
            self._reader.close()
        super().close()
