"""The parts every local JSON endpoint of the tests shares (the one double the project allows:
a remote LLM / embeddings service, served for real on loopback): a quiet HTTP/1.1 handler that
answers JSON, and a server started on a free port and stopped after the test."""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator


class JSONHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:   # keep pytest output clean
        pass

    def body(self) -> dict:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

    def _send(self, status: int, payload: object) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler],
            server_cls: type[ThreadingHTTPServer] = ThreadingHTTPServer) -> Iterator:
    """``handler`` served on 127.0.0.1 at a free port for the block; yields the server."""
    srv = server_cls(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    # a short poll interval makes shutdown() quick (the default 0.5 s would add up over the suite)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
