"""A faulty S3 for the fault tests (issue 44): moto's S3 application behind a WSGI middleware
that fails, delays or hides requests by rule, served on 127.0.0.1.

Nothing of pydelta is mocked: its object-store client (obstore) speaks real HTTP to this server
and meets what a real store's failures look like on the wire:

- `error`: an S3 error answer (503 SlowDown, 503 ServiceUnavailable, 500 InternalError...)
  instead of the request's, the request not applied;
- `applied_then_lost`: the request applied by the store, its answer held for `seconds` (longer
  than the client's timeout), so the client cannot tell whether its write happened;
- `delay`: the request answered `seconds` late (a slow LIST);
- `hide_new`: a LIST that leaves out objects written less than `seconds` ago (a listing that
  does not show a just-written commit yet).

A rule matches a method (`LIST` is a GET of the bucket with `list-type`) and a regular
expression searched in the object key (in the `prefix` of a LIST), and affects its next `times`
matching requests (-1: all); a `hide_new` rule hides each object written after it was put in
place whose key it matches, for `seconds` after the write. `hits` counts what each rule did, so
a test can show the fault really happened. A server in another process is steered over HTTP:
POST `/_faults` with `{"faults": [...]}` adds rules, DELETE `/_faults` removes them, GET
`/_faults` returns them.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import parse_qs, unquote

CONTROL_PATH = "/_faults"
_REASONS = {500: "Internal Server Error", 503: "Service Unavailable", 429: "Too Many Requests"}
_CONTENTS = re.compile(rb"<Contents>.*?</Contents>", re.S)
_KEY = re.compile(rb"<Key>(.*?)</Key>", re.S)


@dataclass
class Fault:
    kind: str  # "error", "applied_then_lost", "delay" or "hide_new"
    method: str  # "PUT", "GET", "HEAD", "DELETE", "POST" or "LIST"
    key: str = ""  # a regular expression searched in the object key (a LIST's prefix)
    status: int = 503
    code: str = "SlowDown"
    seconds: float = 0.0
    times: int = 1  # how many matching requests it affects; -1: every one
    hits: int = 0
    added: float = 0.0  # when it was put in place (time.monotonic), set by `add`

    def wants(self, method: str, key: str) -> bool:
        left = self.times < 0 or self.hits < self.times
        return self.method == method and left and re.search(self.key, key) is not None


def _request(environ: dict[str, Any]) -> tuple[str, str]:
    """(method, key) of an S3 request in path style: `LIST` and its prefix for a bucket listing."""
    method = environ["REQUEST_METHOD"]
    path = unquote(environ.get("PATH_INFO", ""))
    _, _, key = path.lstrip("/").partition("/")
    query = parse_qs(environ.get("QUERY_STRING", ""))
    if method == "GET" and not key and "list-type" in query:
        return "LIST", query.get("prefix", [""])[0]
    return method, key


def _error_body(code: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
            f"<Message>injected by the fault tests</Message><RequestId>fault</RequestId></Error>").encode()


class FaultInjector:
    """The WSGI middleware: `app` (moto's S3) with the faults added by `add` applied."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.faults: list[Fault] = []
        self._written: dict[str, float] = {}  # key -> when a PUT of it was answered
        self._lock = threading.Lock()

    def add(self, *faults: Fault) -> list[Fault]:
        with self._lock:
            for fault in faults:
                fault.added = time.monotonic()
            self.faults.extend(faults)
        return list(faults)

    def clear(self) -> None:
        with self._lock:
            self.faults.clear()

    def _take(self, method: str, key: str) -> Fault | None:
        with self._lock:
            fault = next((f for f in self.faults if f.kind != "hide_new" and f.wants(method, key)), None)
            if fault is not None:
                fault.hits += 1
            return fault

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == CONTROL_PATH:
            return self._control(environ, start_response)
        method, key = _request(environ)
        fault = self._take(method, key)
        if fault is not None and fault.kind == "error":
            body = _error_body(fault.code)
            start_response(f"{fault.status} {_REASONS.get(fault.status, 'Error')}",
                           [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))])
            return [body]
        if fault is not None and fault.kind == "delay":
            time.sleep(fault.seconds)
        answer: dict[str, Any] = {}

        def keep(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            answer["status"], answer["headers"] = status, headers
            return lambda data: None

        body = b"".join(self.app(environ, keep))
        headers = answer["headers"]
        if method == "PUT" and answer["status"].startswith("200"):
            with self._lock:
                self._written[key] = time.monotonic()
        if method == "LIST":
            shown = self._hide_new(body)
            if shown != body:  # (a HEAD's Content-Length is the object's: only a changed body gets a new one)
                body = shown
                headers = [*(h for h in headers if h[0].lower() != "content-length"),
                           ("Content-Length", str(len(body)))]
        if fault is not None and fault.kind == "applied_then_lost":
            time.sleep(fault.seconds)  # the client has given up by now
        start_response(answer["status"], headers)
        return [body]

    def _hide_new(self, body: bytes) -> bytes:
        """The listing without the objects a `hide_new` rule hides (written too recently)."""
        now = time.monotonic()
        with self._lock:
            rules = [f for f in self.faults if f.kind == "hide_new"]
            written = dict(self._written)

        def hidden(match: re.Match[bytes]) -> bytes:
            found = _KEY.search(match.group(0))
            key = found.group(1).decode() if found else ""
            for rule in rules:
                when = written.get(key, -1e9)
                if re.search(rule.key, key) and when >= rule.added and now - when < rule.seconds:
                    rule.hits += 1
                    return b""
            return match.group(0)

        return _CONTENTS.sub(hidden, body) if rules else body

    def _control(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        if method == "POST":
            length = int(environ.get("CONTENT_LENGTH") or 0)
            spec = json.loads(environ["wsgi.input"].read(length) or b"{}")
            self.add(*(Fault(**{k: v for k, v in f.items() if k not in ("hits", "added")})
                       for f in spec.get("faults", [])))
        elif method == "DELETE":
            self.clear()
        with self._lock:
            body = json.dumps({"faults": [asdict(f) for f in self.faults]}).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]


def faulty_server() -> tuple[Any, FaultInjector]:
    """moto's S3 server (conditional writes atomic, tests/s3a/moto_server.py) behind a
    FaultInjector, on 127.0.0.1 at a port it picks; serve it with `serve_forever`."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    from tests.s3a.moto_server import atomic_conditional_writes

    injector = FaultInjector(atomic_conditional_writes(DomainDispatcherApplication(create_backend_app)))
    server = make_server("127.0.0.1", 0, injector, threaded=True, request_handler=MotoRequestHandler)
    return server, injector


class RemoteFaults:
    """The faults of a server in another process (tests/s3a/moto_server.py), over HTTP."""

    def __init__(self, endpoint: str) -> None:
        self.url = endpoint.rstrip("/") + CONTROL_PATH

    def _call(self, method: str, body: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        import urllib.request

        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            faults: list[dict[str, Any]] = json.loads(answer.read())["faults"]
            return faults

    def add(self, *faults: Fault) -> None:
        self._call("POST", {"faults": [asdict(f) for f in faults]})

    def clear(self) -> None:
        self._call("DELETE")

    def hits(self) -> list[int]:
        """What each rule in place did, in the order they were added."""
        return [f["hits"] for f in self._call("GET")]
