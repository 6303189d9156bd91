"""moto's S3 server with atomic conditional writes, for the s3a tests: python -m tests.s3a.moto_server

moto's server checks `If-None-Match: *` (and `If-Match`) on a PUT and then stores the object
in two steps, with other request threads running in between, so two racing conditional PUTs of
one key can both succeed (seen here: two writers of one Delta version both "won", one commit
lost). S3 decides them atomically, and Delta commits rely on that. This runs moto's own
application and serializes the conditional writes only; everything else is moto's, threaded.
Behind tests/faults/s3_faults.py's middleware, which answers as moto does until a test asks it
(over HTTP) to fail, delay or hide requests.
Prints "Running on http://127.0.0.1:<port>" on stderr once it listens (a port it picked).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any


def atomic_conditional_writes(app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    """The WSGI app with PUT/POST requests carrying a precondition handled one at a time, whole."""
    lock = threading.Lock()

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        conditional = "HTTP_IF_NONE_MATCH" in environ or "HTTP_IF_MATCH" in environ
        if environ.get("REQUEST_METHOD") in ("PUT", "POST") and conditional:
            with lock:
                return list(app(environ, start_response))
        return app(environ, start_response)

    return guarded


def make_atomic_server() -> Any:
    """moto's threaded werkzeug server on 127.0.0.1 (a port it picks), conditional writes serialized."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    app = DomainDispatcherApplication(create_backend_app)
    return make_server("127.0.0.1", 0, atomic_conditional_writes(app), threaded=True,
                       request_handler=MotoRequestHandler)


def main() -> None:
    from tests.faults.s3_faults import faulty_server

    server, _ = faulty_server()  # no fault until a test asks for one (tests/faults/s3_faults.py)
    print(f"Running on http://127.0.0.1:{server.server_port}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
