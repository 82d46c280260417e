"""A download server on the loopback for the data and vision tests: routes serve bytes, an
HTTP error status, or a body cut off after some bytes (a dropped connection)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest


class _Handler(BaseHTTPRequestHandler):
    """Serves ``server.routes``: bytes (200), an int status, or ("cut", body, n_sent)."""

    server: LocalServer

    def do_GET(self) -> None:
        self.server.requests.append(self.path)
        route = self.server.routes.get(self.path, 404)
        if isinstance(route, int):
            self.send_error(route)
            return
        if isinstance(route, tuple):
            _, body, sent = route
        else:
            body, sent = route, len(route)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[:sent])
        self.wfile.flush()
        if sent < len(body):
            self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        pass


class LocalServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.routes: dict[str, bytes | int | tuple[str, bytes, int]] = {}
        self.requests: list[str] = []
        self.url = f"http://127.0.0.1:{self.server_address[1]}"

    def serve_dataset(self, prefix: str, files: dict[str, bytes]) -> dict[str, str]:
        """Serve ``files`` under ``prefix``; return their MD5 checksums by file name."""
        for name, body in files.items():
            self.routes[f"{prefix}/{name}"] = body
        return {name: hashlib.md5(body).hexdigest() for name, body in files.items()}

    def serve_files(self, prefix: str, directory: Path) -> list[tuple[str, str]]:
        """Serve the files of ``directory`` under ``prefix``; their (name, MD5) pairs."""
        resources = []
        for path in sorted(directory.iterdir()):
            body = path.read_bytes()
            self.routes[f"{prefix}/{path.name}"] = body
            resources.append((path.name, hashlib.md5(body).hexdigest()))
        return resources


@pytest.fixture
def http_server() -> Iterator[LocalServer]:
    """A :class:`LocalServer` on 127.0.0.1, shut down after the test."""
    server = LocalServer()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
