"""The running Spark session's Hadoop FileSystem behind the `Storage` protocol.

For schemes only the cluster can reach (`hdfs://`, `viewfs://`, ...): the log core cannot
open them itself, so `install(spark)` registers this storage for them and every log
operation (listing, reading commits, checkpoints, atomic commit creation) goes through
the JVM's `FileSystem` with the session's Hadoop configuration. A commit is written to a
temporary file and then renamed with `FileContext.rename(..., NONE)`, which fails when
the target exists: on HDFS that rename is atomic (delta-spark's HDFSLogStore does the
same), so two writers of one version cannot both win and readers never see half a commit.

It also serves delta-spark's per-table Hadoop options, `DeltaTable.forPath(spark, path,
hadoopConf={...})` (`fs.*` / `dfs.*` keys): `HadoopFileSystemStorage(spark, options)` lays
them over the session's configuration for one table's log, `qualify_path` resolves a
scheme-less path against an `fs.defaultFS` among them, `check_table_options` refuses the keys
pydelta's own log clients (local files, GCS, Azure) could not apply. The options travel with
the table's storage (`table_hadoop_options`), so every snapshot loaded through it carries
them down to Spark's reads and writes of the table's data files as per-relation options:
the session's conf is never changed for them.

And S3 (`s3a://`): Spark's data path is hadoop-aws with the session's fs.s3a.* settings, the
log is pydelta's object-store client. So that both reach the same bucket with the same
endpoint, credentials and encryption from what users already give Spark, `install` registers
with the log core a provider of obstore options translated from the session's S3A settings
(`session_s3a_settings`, `s3a_storage_options`: the log core sees only plain obstore options;
explicit storage_options and AWS_* variables keep working), and a table's hadoopConf
fs.s3a.* options reach its log through `engine.SparkEngine`.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import quote, urlparse

from pydelta.errors import DeltaNotImplementedError
from pydelta.log.storage import (
    HADOOP_ONLY_SCHEMES,
    FileAlreadyExistsError,
    FileInfo,
    Storage,
    register_scheme,
    register_storage_options,
)
from pydelta.spark.base._typing import JavaObject, SparkSession
from pydelta.spark.base.jvm import gateway, java_session, jvm

# Hadoop file systems whose paths pydelta sends to the session's FileSystem.
HADOOP_SCHEMES = tuple(sorted(HADOOP_ONLY_SCHEMES))


def hadoop_conf(spark: SparkSession, options: Mapping[str, str] | None = None) -> JavaObject:
    """A new Hadoop `Configuration` of the session (its SQL confs included), `options` set over it."""
    conf = java_session(spark).sessionState().newHadoopConf()
    for key, value in (options or {}).items():
        conf.set(key, value)
    return conf


class HadoopFileSystemStorage:
    """`Storage` over `org.apache.hadoop.fs.FileSystem` of one Spark session.

    `options`: Hadoop settings laid over the session's configuration for this storage only
    (the `hadoopConf` of a DeltaTable).
    """

    def __init__(self, spark: SparkSession, options: Mapping[str, str] | None = None) -> None:
        self._jvm = jvm(spark)
        self._gateway = gateway(spark)
        self._conf = hadoop_conf(spark, options)
        self.hadoop_options: dict[str, str] = dict(options or {})

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
    """Serve `schemes` through this session's Hadoop FileSystem (options are Hadoop confs, unused),
    and give the log core's object-store clients the session's S3A settings (`S3A_SCHEMES`)."""

    def factory(path: str, options: Mapping[str, str] | None) -> HadoopFileSystemStorage:
        return HadoopFileSystemStorage(spark)

    for scheme in schemes:
        register_scheme(scheme, factory)
    install_s3a_options(spark)


def install_s3a_options(spark: SparkSession) -> None:
    """Give the log core's object-store clients the session's S3A settings (`S3A_SCHEMES`):
    classic and Spark Connect sessions alike (over Connect, the client commits the log)."""

    def s3_options(path: str) -> dict[str, str] | None:
        bucket = urlparse(path).netloc
        return s3a_storage_options(session_s3a_settings(spark, bucket=bucket), bucket)

    for scheme in S3A_SCHEMES:
        register_storage_options(scheme, s3_options)


# ---- the session's S3A settings for pydelta's own S3 client (the log core) ------------------

# The schemes Hadoop serves with S3AFileSystem (s3:// and s3n:// once fs.<scheme>.impl names it),
# whose fs.s3a.* settings pydelta's log core applies too.
S3A_SCHEMES = ("s3a", "s3", "s3n")
_S3A = "fs.s3a."
# S3A's credential providers that mean "do not sign" (anonymous access to a public bucket).
_ANONYMOUS_PROVIDERS = ("AnonymousAWSCredentialsProvider", "AnonymousCredentialsProvider")
# S3A credential providers (simple class names, AWS SDK v1 and v2) whose credentials obstore finds
# the same way: keys in the settings, AWS_* variables, instance/container roles, web identity.
_EMULATED_PROVIDERS = (
    "SimpleAWSCredentialsProvider", "TemporaryAWSCredentialsProvider", "EnvironmentVariableCredentialsProvider",
    "IAMInstanceCredentialsProvider", "InstanceProfileCredentialsProvider", "ContainerCredentialsProvider",
    "EC2ContainerCredentialsProviderWrapper", "WebIdentityTokenCredentialsProvider",
    "WebIdentityTokenFileCredentialsProvider", "DefaultAWSCredentialsProviderChain", "DefaultCredentialsProvider",
    *_ANONYMOUS_PROVIDERS)
# fs.s3a.encryption.algorithm -> obstore's server_side_encryption
_SSE = {"SSE-S3": "AES256", "SSE-KMS": "aws:kms", "DSSE-KMS": "aws:kms:dsse", "SSE-C": "sse-c"}
# Hadoop's time units (Configuration.getTimeDuration) -> humantime's, which obstore parses
_TIME_UNITS = {"ns": "ns", "us": "us", "ms": "ms", "s": "s", "m": "m", "h": "h", "d": "d"}
# An AWS S3 endpoint names its region (s3.eu-west-1.amazonaws.com, s3-fips.us-east-2...,
# s3.dualstack.ap-south-1...): the region the requests are signed for when none is given.
_AWS_REGION_IN_HOST = re.compile(
    r"(?:^|\.)s3(?:-fips)?[.-](?:dualstack\.)?([a-z]{2}(?:-[a-z]+)+-\d)\.amazonaws\.com(?:\.cn)?$")


_JSON_WRITERS: dict[int, JavaObject] = {}


def session_s3a_settings(spark: SparkSession, options: Mapping[str, str] | None = None,
                         bucket: str | None = None) -> dict[str, str]:
    """The session's fs.s3a.* Hadoop settings (defaults, spark.hadoop.*, SQL confs, `options` over them).

    One JVM round trip: Hadoop's own lookup (variable expansion included) serialized as JSON;
    where a Hadoop credential provider is configured (a JCEKS keystore...), the secrets of
    `bucket` are asked of it as S3A does (`_provider_secrets`). A Spark Connect session has no
    JVM on this side: `_connect_s3a_settings`.
    """
    from pydelta.spark.base.connect_session import is_connect

    if is_connect(spark):
        return _connect_s3a_settings(spark, options)
    conf = hadoop_conf(spark, options)
    found = conf.getValByRegex(r"^(fs\.s3a\.|hadoop\.security\.credential\.provider\.path$)")
    java = jvm(spark)
    mapper = _JSON_WRITERS.get(id(java))
    if mapper is None:  # making one costs more than the lookup: one per JVM gateway
        mapper = _JSON_WRITERS[id(java)] = java.com.fasterxml.jackson.databind.ObjectMapper()
    settings = {str(k): str(v) for k, v in json.loads(mapper.writeValueAsString(found)).items()}
    providers = [p for p in (settings.pop(_PROVIDER_PATH, ""),
                             settings.get(f"{_S3A}security.credential.provider.path", ""))
                 if p.strip()]
    if providers and bucket:
        settings.update(_provider_secrets(conf, ",".join(providers), bucket))
    return settings


# Hadoop's key naming its credential providers (keystores holding secrets under config key names).
_PROVIDER_PATH = "hadoop.security.credential.provider.path"
# The fs.s3a.* keys S3A reads through Configuration.getPassword: credential providers first.
_SECRET_KEYS = ("access.key", "secret.key", "session.token", "encryption.key", "server-side-encryption.key")


def _provider_secrets(conf: JavaObject, providers: str, bucket: str) -> dict[str, str]:
    """The secrets S3A would find for `bucket` in the credential providers `providers` (its own
    fs.s3a.security.credential.provider.path included), by Hadoop's getPassword."""
    conf.set(_PROVIDER_PATH, providers)  # `conf` is this lookup's own copy (hadoop_conf)
    out = {}
    for key in _SECRET_KEYS:
        for name in (f"{_S3A}{key}", f"{_S3A}bucket.{bucket}.{key}"):
            chars = conf.getPassword(name)
            if chars is not None:
                out[name] = "".join(str(c) for c in chars)
    return out


def _connect_s3a_settings(spark: SparkSession, options: Mapping[str, str] | None) -> dict[str, str]:
    """A Spark Connect session's fs.s3a.* settings as its server's Hadoop configuration holds them:
    `spark.hadoop.fs.s3a.*` (the server's Spark conf, which its session confs include), under
    `fs.s3a.*` session confs (Spark lays every session conf over the Hadoop configuration), under
    `options`. Hadoop's defaults are not seen here; `s3a_storage_options` applies S3A's own.
    Spark Connect never hands a client the server's secrets (access and secret keys, session
    tokens are left out of its confs): the client signs its log requests with its own
    credentials (AWS_* variables, its instance profile), as obstore finds them."""
    prefix = "spark.hadoop."
    confs = spark.conf.getAll  # one round trip to the server
    settings = {k[len(prefix):]: v for k, v in confs.items() if k.startswith(prefix + _S3A)}
    settings.update((k, v) for k, v in confs.items() if k.startswith(_S3A))
    settings.update((k, v) for k, v in (options or {}).items() if k.startswith(_S3A))
    return settings


def _duration(value: str) -> str | None:
    """A Hadoop duration ("30s", "200", "5m"; bare numbers are milliseconds, S3A's default unit)
    as obstore takes it, or None when it is not one (or zero: "no limit")."""
    m = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", value.lower())
    if not m or (m.group(2) and m.group(2) not in _TIME_UNITS) or int(m.group(1)) == 0:
        return None
    return f"{int(m.group(1))}{_TIME_UNITS[m.group(2) or 'ms']}"


def s3a_storage_options(settings: Mapping[str, str], bucket: str) -> dict[str, str]:
    """obstore options for `bucket` meaning what the S3A connector makes of these fs.s3a.* settings.

    So that pydelta's log (obstore) reaches the same bucket as Spark's data path (hadoop-aws),
    with the same endpoint, credentials and encryption, from the settings users already give
    Spark. Per-bucket keys `fs.s3a.bucket.<bucket>.<key>` win over `fs.s3a.<key>`, as in S3A.
    Translated: endpoint (+ connection.ssl.enabled, path.style.access), endpoint.region,
    access.key / secret.key / session.token, anonymous credential providers, encryption
    (SSE-S3, SSE-KMS, DSSE-KMS, SSE-C), requester.pays.enabled, proxy.host / proxy.port /
    proxy.secured, connection.establish.timeout and connection.request.timeout. Settings not
    given leave obstore's own sources (AWS_* environment variables, instance credentials).
    """
    per_bucket = f"{_S3A}bucket.{bucket}."
    eff = {k[len(_S3A):]: v.strip() for k, v in settings.items()
           if k.startswith(_S3A) and not k.startswith(f"{_S3A}bucket.")}
    eff.update({k[len(per_bucket):]: v.strip() for k, v in settings.items() if k.startswith(per_bucket)})
    eff = {k: v for k, v in eff.items() if v != ""}
    out: dict[str, str] = {}

    region = eff.get("endpoint.region")
    endpoint = eff.get("endpoint")
    if endpoint:
        ssl = eff.get("connection.ssl.enabled", "true").lower() != "false"
        url = urlparse(endpoint if "://" in endpoint else f"{'https' if ssl else 'http'}://{endpoint}")
        aws = _AWS_REGION_IN_HOST.search((url.hostname or "").lower())
        region = region or (aws.group(1) if aws else None)
        path_style = eff.get("path.style.access", "false").lower() == "true"
        netloc = url.netloc if path_style else f"{bucket}.{url.netloc}"  # S3A's default: virtual-hosted
        out["aws_endpoint"] = f"{url.scheme}://{netloc}{url.path.rstrip('/')}"
        out["aws_virtual_hosted_style_request"] = "false" if path_style else "true"
        if url.scheme == "http":
            out["allow_http"] = "true"
    if region:
        out["aws_region"] = region

    providers = [p.strip().rsplit(".", 1)[-1] for p in eff.get("aws.credentials.provider", "").split(",") if p.strip()]
    if any(p in _ANONYMOUS_PROVIDERS for p in providers):
        out["aws_skip_signature"] = "true"
    if providers and not any(p in _EMULATED_PROVIDERS for p in providers) and "access.key" not in eff and not (
            os.environ.get("AWS_ACCESS_KEY_ID") or os.environ.get("AWS_WEB_IDENTITY_TOKEN_FILE")):
        raise DeltaNotImplementedError(
            f"s3a://{bucket}: fs.s3a.aws.credentials.provider names {', '.join(providers)}, which pydelta's log "
            "client cannot use (it signs with keys, AWS_* variables, instance or container roles, or a web "
            "identity): give it credentials as fs.s3a.access.key / secret.key / session.token, AWS_* environment "
            "variables or storage_options")
    for key, option in (("access.key", "aws_access_key_id"), ("secret.key", "aws_secret_access_key"),
                        ("session.token", "aws_session_token")):
        if key in eff:
            out[option] = eff[key]

    algorithm = (eff.get("encryption.algorithm") or eff.get("server-side-encryption-algorithm") or "").upper()
    secret = eff.get("encryption.key") or eff.get("server-side-encryption.key")
    if algorithm.startswith("CSE"):
        raise DeltaNotImplementedError(
            f"s3a://{bucket}: fs.s3a.encryption.algorithm={algorithm} (client-side encryption) is not supported: "
            "pydelta's log client cannot encrypt or decrypt the log files the way S3A does")
    if algorithm in _SSE:
        out["aws_server_side_encryption"] = _SSE[algorithm]
        if secret and algorithm == "SSE-C":
            out["aws_sse_customer_key_base64"] = secret
        elif secret and algorithm != "SSE-S3":
            out["aws_sse_kms_key_id"] = secret
        if algorithm.endswith("KMS") and "encryption.bucket-key.enabled" in eff:
            out["aws_sse_bucket_key_enabled"] = eff["encryption.bucket-key.enabled"].lower()
    if eff.get("requester.pays.enabled", "").lower() == "true":
        out["aws_request_payer"] = "true"

    proxy = eff.get("proxy.host")
    if proxy:
        scheme = "https" if eff.get("proxy.secured", "").lower() == "true" else "http"
        port = eff.get("proxy.port", "")
        user, password = eff.get("proxy.username"), eff.get("proxy.password")
        auth = f"{quote(user, safe='')}:{quote(password or '', safe='')}@" if user else ""
        out["proxy_url"] = f"{scheme}://{auth}{proxy}" + (f":{port}" if port and port != "-1" else "")
    for name, option in (("connection.establish.timeout", "connect_timeout"),
                         ("connection.request.timeout", "timeout")):
        duration = _duration(eff[name]) if name in eff else None
        if duration:
            out[option] = duration
    return out


# ---- a DeltaTable's own Hadoop options (forPath's hadoopConf) ---------------------------------

_DEFAULT_FS_KEYS = ("fs.defaultFS", "fs.default.name")

# The Hadoop settings of the file system behind a scheme pydelta's log reaches without Hadoop:
# the local file system (Python file I/O) and the object stores (obstore). Beyond the generic
# fs.<scheme>.* and fs.AbstractFileSystem.<scheme>.*, each connector's own key family.
_CONNECTOR_KEY_FAMILIES: dict[str, tuple[str, ...]] = {
    "s3": ("fs.s3a.", "fs.s3.", "fs.s3n."),
    "s3a": ("fs.s3a.", "fs.s3.", "fs.s3n."),
    "gs": ("fs.gs.", "fs.gcs."),
    "gcs": ("fs.gs.", "fs.gcs."),
    "abfs": ("fs.azure.", "fs.abfs.", "fs.abfss."),
    "abfss": ("fs.azure.", "fs.abfs.", "fs.abfss."),
    "az": ("fs.azure.", "fs.abfs.", "fs.abfss."),
    "azure": ("fs.azure.", "fs.abfs.", "fs.abfss."),
    "adl": ("fs.adl.", "fs.azure."),
}


def _scheme(path: str) -> str:
    """The URI scheme of a table path, "file" for a local path (a drive letter is no scheme)."""
    scheme = urlparse(path).scheme.lower()
    return scheme if len(scheme) > 1 else "file"


def qualify_path(spark: SparkSession, path: str, options: Mapping[str, str]) -> str:
    """`path` resolved as delta-spark resolves it when `options` set `fs.defaultFS`.

    A path without a scheme then belongs to that default file system (Hadoop's
    `FileSystem.makeQualified`), e.g. `/data/t` with `fs.defaultFS=hdfs://nn:8020` is
    `hdfs://nn:8020/data/t`. A path that resolves to the local file system, and any path when
    `options` do not name a default file system, is returned as given.
    """
    if not any(key in options for key in _DEFAULT_FS_KEYS) or len(urlparse(path).scheme) > 1:
        return path
    jpath = jvm(spark).org.apache.hadoop.fs.Path(path)
    qualified = str(jpath.getFileSystem(hadoop_conf(spark, options)).makeQualified(jpath).toString())
    return path if _scheme(qualified) == "file" else qualified


def check_table_options(path: str, options: Mapping[str, str]) -> None:
    """Refuse the Hadoop options of a table at `path` that pydelta could not apply to all of its files.

    The log of a table at a Hadoop-only URI (`hdfs://`, `viewfs://`...) goes through the session's
    Hadoop FileSystem, so every option applies there; that of an S3 table (`s3a://`, `s3://`)
    goes through pydelta's object-store client with the fs.s3a.* options translated
    (`s3a_storage_options`, `engine.SparkEngine`), so they pass too. The log of a local table is
    read and committed with Python file I/O, and that of a GCS or Azure table (`gs://`,
    `abfss://`...) with the object-store client from its own settings: options for that file
    system would reach Spark's reads and writes of the data files but not the log, so they raise
    DeltaNotImplementedError naming them. Options for other file systems do not concern the
    table's own storage and pass.
    """
    scheme = _scheme(path)
    if scheme in HADOOP_ONLY_SCHEMES or scheme in S3A_SCHEMES:
        return
    families = (f"fs.{scheme}.", f"fs.AbstractFileSystem.{scheme}.", *_CONNECTOR_KEY_FAMILIES.get(scheme, ()))
    refused = sorted(key for key in options if key.startswith(families))
    if not refused:
        return
    keys = ", ".join(refused)
    if scheme == "file":
        raise DeltaNotImplementedError(
            f"DeltaTable.forPath: hadoopConf options for the local file system ({keys}) are not supported: "
            f"pydelta reads and commits the log of a local table ({path}) with Python file I/O, not with "
            "Hadoop's local FileSystem, so they would apply to the data files only. Leave them out, or set "
            "them on the session (spark.hadoop.*) if Spark's data access needs them.")
    raise DeltaNotImplementedError(
        f"DeltaTable.forPath: hadoopConf options for '{scheme}://' ({keys}) are not supported: pydelta reads "
        f"and commits the log of {path} with its own object-store client, not with Hadoop's connector, so "
        "they would apply to the data files only. Give the log its credentials and endpoint through the "
        "environment (GOOGLE_*, AZURE_* variables) and Spark its settings on the session "
        "(spark.hadoop.fs.* when building it); S3 tables (s3a://) take fs.s3a.* options here.")


class StorageWithHadoopOptions:
    """A table's log storage (pydelta's own client) carrying the table's Hadoop options down to
    Spark's access of its data files (an `s3a://` table opened with `hadoopConf`)."""

    def __init__(self, storage: Storage, options: Mapping[str, str]) -> None:
        self._storage = storage
        self.hadoop_options: dict[str, str] = dict(options)

    def list_from(self, path: str) -> Iterator[FileInfo]:
        return self._storage.list_from(path)

    def read(self, path: str) -> bytes:
        return self._storage.read(path)

    def put_if_absent(self, path: str, data: bytes) -> None:
        self._storage.put_if_absent(path, data)

    def put(self, path: str, data: bytes) -> None:
        self._storage.put(path, data)

    def delete(self, path: str) -> None:
        self._storage.delete(path)

    def exists(self, path: str) -> bool:
        return self._storage.exists(path)

    def is_directory(self, path: str) -> bool:
        return self._storage.is_directory(path)

    def __getattr__(self, name: str) -> Any:  # the client's own extras (list_recursive, open_input...)
        return getattr(self._storage, name)


def table_hadoop_options(storage: Storage) -> dict[str, str]:
    """The Hadoop options of the table `storage` serves (its `hadoopConf`), none for most tables.

    Spark's scans and writes of the table's data files take them as the relation's own options
    (Spark lays those over the session's Hadoop configuration for that relation alone).
    """
    return dict(getattr(storage, "hadoop_options", None) or {})


def staged_data_files(infos: Iterable[Any], relative: Callable[[str], str]) -> list[Any]:
    """The Parquet data files in a listing of a write's staging directory, sorted by path: names
    starting with `_` or `.` (Spark's markers, hidden files) are skipped at any depth, as in a
    local walk (write/data_files.py `_staged_files`). `relative` gives a listed path below the
    staging directory. Serves the JVM's listing here and the object-store client's over Connect."""
    found = [info for info in infos if info.path.endswith(".parquet")
             and not any(part.startswith(("_", ".")) for part in relative(info.path).split("/"))]
    return sorted(found, key=lambda f: f.path)


class HadoopDataFiles:
    """The data-file side of a write to a table only the cluster can reach (hdfs://, viewfs://...).

    Spark writes the files; the driver lists them, reads their footers (only the tail bytes,
    through the JVM) and moves them with the session's Hadoop FileSystem: nothing assumes
    that the driver shares a disk with the executors.
    """

    def __init__(self, spark: SparkSession, options: Mapping[str, str] | None = None) -> None:
        self.storage = HadoopFileSystemStorage(spark, options)
        self._jvm = jvm(spark)

    def list_staged(self, staging: str) -> list[FileInfo]:
        """The Parquet files under `staging`, recursively (hidden and `_` names skipped), sorted."""
        return staged_data_files(self.storage.list_recursive(staging), lambda path: self.relative(path, staging))

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


def _uri_path(path: str) -> str:
    """The path part of a Hadoop path string (`s3a://b/x #1/y` -> `/x #1/y`). Hadoop prints paths
    decoded, so a `#` or `?` in them is part of a name, never a fragment or query: no URL parser."""
    _, sep, rest = path.partition("://")
    if sep:
        return "/" + rest.partition("/")[2]
    return path[len("file:"):] if path.startswith("file:") else path


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
    from pydelta.spark.base.connect_session import is_connect

    scheme = urlparse(str(uri)).scheme.lower()
    if scheme not in CONNECTORS or is_connect(spark):  # a Connect client cannot see the server's classpath
        return
    default_class, artifact = CONNECTORS[scheme]
    conf = hadoop_conf(spark)
    fs_class = conf.get(f"fs.{scheme}.impl") or default_class
    try:
        conf.getClassByName(fs_class)
        return
    except Exception:  # noqa: BLE001 - py4j's ClassNotFoundException
        pass
    hadoop = str(jvm(spark).org.apache.hadoop.util.VersionInfo.getVersion())
    coordinates = artifact.format(hadoop=hadoop)
    raise MissingConnectorError(
        f"Spark cannot reach {uri}: the Hadoop FileSystem for '{scheme}://' ({fs_class}) is not on the "
        f"session's classpath. Add the connector jar {coordinates} (and its dependencies, e.g. the AWS SDK "
        f"bundle for hadoop-aws) with spark.jars / spark.jars.packages when building the session, or use "
        f"a cluster image that ships it. pydelta's log core reaches '{scheme}://' on its own, Spark's "
        "data path needs the connector."
    )
