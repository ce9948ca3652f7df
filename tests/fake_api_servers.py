"""Servers that play an API server gone wrong, on loopback, for tests that need no cluster."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def answering_version_then_holding() -> Iterator[tuple[str, threading.Event]]:
    """An API server that answers ``GET /version`` (a client's first contact succeeds) and then holds every
    other request unanswered until the context ends: one that answered once and went quiet. Yields its URL
    (plain HTTP) and an event set when the first request is held."""
    released = threading.Event()
    held = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/version"):
                body = b'{"major":"1","minor":"36","gitVersion":"v1.36.3"}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            held.set()
            released.wait(120)

        def do_POST(self) -> None:  # an access review, an eviction: held like the rest
            held.set()
            released.wait(120)

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", held
    finally:
        released.set()
        server.shutdown()
        server.server_close()
