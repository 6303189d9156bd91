"""HTTP client of Unity Catalog's REST API: the Delta REST API (`/delta/v1`) for catalog-managed
tables, and the few catalog and schema calls an administrator needs.

Unity Catalog OSS 0.5+ (its `api/delta.yaml`) and olai-uc-server serve the same `/delta/v1`
endpoints; their JSON is kebab-case, the older `/api/2.1/unity-catalog` calls are snake_case.
Errors become pydelta errors: a commit version already taken is a CommitOwnerConflictError, an
unreachable server a CommitOwnerUnavailableError (the commit may or may not have landed), a
missing table a DeltaTableNotFoundError. The bearer token goes into the Authorization header
and nowhere else: never into a message, a repr or a log line.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from pydelta.errors import (
    CommitOwnerConflictError,
    CommitOwnerError,
    CommitOwnerUnavailableError,
    DeltaIllegalArgumentError,
    DeltaTableNotFoundError,
    TableAlreadyExistsError,
)

TOKEN_ENV = "UC_TOKEN"
API_PREFIX = "/api/2.1/unity-catalog"
TIMEOUT_S = 30.0
# How long a request that cannot reach the server (refused connection) is retried: a catalog restart.
UNREACHABLE_RETRY_S = 30.0
# The Delta REST API versions this client speaks (getConfig's `protocol-versions`).
PROTOCOL_VERSIONS = "1.0"


@dataclass(frozen=True)
class StagingTable:
    """A reservation for a new managed table: where to write version 0, and what it must contain."""

    table_id: str
    location: str
    required_protocol: dict[str, Any]
    required_properties: dict[str, str]


@dataclass(frozen=True)
class LoadedTable:
    """A table as the catalog describes it: location, uuid, and its ratified, unpublished commits."""

    table_id: str
    location: str
    table_type: str
    properties: dict[str, str]
    commits: list[dict[str, Any]]  # ascending by version (servers differ in the order they send)
    latest_table_version: int
    etag: str | None = None
    column_names: tuple[str, ...] = ()  # the catalog's copy (the Delta log's schema is the one of record)


@dataclass
class UnityCatalogRestClient:
    """One Unity Catalog server: `uri` is its root (`http://host:port`), `token` a bearer token
    (default: the UC_TOKEN environment variable; none for a server without authentication)."""

    uri: str
    token: str | None = field(default=None, repr=False)
    timeout_s: float = TIMEOUT_S
    unreachable_retry_s: float = UNREACHABLE_RETRY_S

    def __post_init__(self) -> None:
        if not isinstance(self.uri, str) or not self.uri.startswith(("http://", "https://")):
            raise DeltaIllegalArgumentError(f"a Unity Catalog uri must be http:// or https://, got {self.uri!r}")
        self.uri = self.uri.rstrip("/")
        if self.uri.endswith(API_PREFIX):
            self.uri = self.uri[: -len(API_PREFIX)]
        if self.token is None:
            self.token = os.environ.get(TOKEN_ENV) or None
        import requests

        self._http = requests.Session()

    # ---- transport -------------------------------------------------------------------------
    def _call(self, method: str, path: str, body: Any = None, params: dict[str, str] | None = None) -> Any:
        import requests

        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        url = f"{self.uri}{API_PREFIX}{path}"
        deadline = time.monotonic() + self.unreachable_retry_s
        pause = 0.1
        while True:
            try:
                response = self._http.request(method, url, json=body, params=params, headers=headers,
                                              timeout=self.timeout_s)
                break
            except requests.RequestException as e:
                # A request that never reached the server (connection refused: a catalog restarting)
                # is sent again, even a commit; one that may have reached it only if it changes nothing.
                again = method == "GET" or _never_sent(e)
                if not again or time.monotonic() + pause > deadline:
                    raise CommitOwnerUnavailableError(
                        f"Unity Catalog at {self.uri} did not answer {method} {path}: {type(e).__name__}") from None
                time.sleep(pause)
                pause = min(pause * 2, 2.0)
        if response.status_code >= 400:
            raise _error(method, path, response.status_code, _payload(response))
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    def close(self) -> None:
        self._http.close()

    # ---- catalogs and schemas (administration, snake_case) -----------------------------------
    def create_catalog(self, name: str, comment: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"name": name}
        if comment:
            body["comment"] = comment
        return dict(self._call("POST", "/catalogs", body))

    def create_schema(self, catalog: str, name: str) -> dict[str, Any]:
        return dict(self._call("POST", "/schemas", {"name": name, "catalog_name": catalog}))

    def delete_catalog(self, name: str) -> None:
        self._call("DELETE", f"/catalogs/{_seg(name)}", params={"force": "true"})

    # ---- the Delta REST API (kebab-case) -------------------------------------------------------
    def config(self, catalog: str) -> dict[str, Any]:
        """The server's Delta REST API endpoints and version for `catalog` (raises when it has none we speak)."""
        return dict(self._call("GET", "/delta/v1/config",
                               params={"catalog": catalog, "protocol-versions": PROTOCOL_VERSIONS}))

    def create_staging_table(self, catalog: str, schema: str, name: str) -> StagingTable:
        out = self._call("POST", f"{_schema_path(catalog, schema)}/staging-tables", {"name": name})
        return StagingTable(
            table_id=str(out["table-id"]),
            location=str(out["location"]),
            required_protocol=dict(out.get("required-protocol") or {}),
            required_properties={k: str(v) for k, v in (out.get("required-properties") or {}).items()
                                 if v is not None},
        )

    def create_table(self, catalog: str, schema: str, request: dict[str, Any]) -> LoadedTable:
        return _loaded(self._call("POST", f"{_schema_path(catalog, schema)}/tables", request))

    def load_table(self, catalog: str, schema: str, name: str) -> LoadedTable:
        return _loaded(self._call("GET", _table_path(catalog, schema, name)))

    def update_table(self, catalog: str, schema: str, name: str, table_id: str,
                     updates: list[dict[str, Any]]) -> LoadedTable:
        body = {"requirements": [{"type": "assert-table-uuid", "uuid": table_id}], "updates": updates}
        return _loaded(self._call("POST", _table_path(catalog, schema, name), body))

    def delete_table(self, catalog: str, schema: str, name: str) -> None:
        self._call("DELETE", _table_path(catalog, schema, name))


class UnityCatalogError(CommitOwnerError):
    """Unity Catalog refused a request; `status` is the HTTP status, `error_type` the server's type."""

    def __init__(self, message: str, status: int, error_type: str | None) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type


def _never_sent(error: Exception) -> bool:
    """Did the request fail before any byte reached the server (refused or unresolvable connection)?"""
    import requests
    from urllib3.exceptions import NameResolutionError, NewConnectionError

    if isinstance(error, requests.ConnectTimeout):
        return True
    reason = getattr(error.args[0], "reason", None) if error.args else None
    return isinstance(error, requests.ConnectionError) and isinstance(reason, NewConnectionError | NameResolutionError)


def _seg(name: str) -> str:
    return quote(name, safe="")


def _schema_path(catalog: str, schema: str) -> str:
    return f"/delta/v1/catalogs/{_seg(catalog)}/schemas/{_seg(schema)}"


def _table_path(catalog: str, schema: str, name: str) -> str:
    return f"{_schema_path(catalog, schema)}/tables/{_seg(name)}"


def _payload(response: Any) -> tuple[str | None, str]:
    """(error type, message) of an error answer: the Delta API's {"error": {...}}, the older
    API's {"errorCode", "message"}, or plain text."""
    try:
        data = response.json()
    except ValueError:
        return None, response.text.strip()[:500]
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        err = data["error"]
        return err.get("type"), str(err.get("message", ""))
    if isinstance(data, dict):
        return data.get("errorCode") or data.get("error_code"), str(data.get("message", data))
    return None, str(data)[:500]


def _error(method: str, path: str, status: int, payload: tuple[str | None, str]) -> Exception:
    error_type, message = payload
    text = f"Unity Catalog refused {method} {path} ({status} {error_type or ''}): {message}".replace(" )", ")")
    if status == 409 and error_type == "CommitVersionConflictException":
        return CommitOwnerConflictError(text, -1)
    if status == 409 and error_type in ("AlreadyExistsException", "RESOURCE_ALREADY_EXISTS", "TABLE_ALREADY_EXISTS"):
        return TableAlreadyExistsError(text)
    if status == 404:
        return DeltaTableNotFoundError(text)
    if status >= 500:
        return CommitOwnerUnavailableError(text)
    return UnityCatalogError(text, status, error_type)


def _loaded(out: dict[str, Any]) -> LoadedTable:
    meta = out.get("metadata") or {}
    commits = sorted((dict(c) for c in out.get("commits") or []), key=lambda c: int(c["version"]))
    latest = out.get("latest-table-version")
    return LoadedTable(
        table_id=str(meta.get("table-uuid", "")),
        location=str(meta.get("location", "")),
        table_type=str(meta.get("table-type", "")),
        properties={k: str(v) for k, v in (meta.get("properties") or {}).items() if v is not None},
        commits=commits,
        latest_table_version=int(latest) if latest is not None else -1,
        etag=meta.get("etag"),
        column_names=tuple(str(f.get("name")) for f in (meta.get("columns") or {}).get("fields") or []),
    )
