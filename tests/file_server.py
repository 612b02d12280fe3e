"""A static file server for tests (``http.server`` in a thread, HTTP/1.1 keep-alive): HEAD and GET
with ``Range``, an ``ETag`` from the content (so a rewrite is visible), per-path 302 redirects, and a
log of requests. Restartable on the same port, to take a source away and bring it back. Binds
127.0.0.1 unless told otherwise (127.0.0.2 plays "another host": Linux routes all of 127/8 to lo)."""

from __future__ import annotations

import hashlib
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FileServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _file(self) -> Path | None:
        rel = unquote(self.path.split("?", 1)[0]).lstrip("/")
        path = (self.server.root / rel).resolve()
        if not path.is_relative_to(self.server.root.resolve()) or not path.is_file():
            return None
        return path

    def _bare(self, status: int, headers: dict[str, str], body: bool) -> None:
        payload = f"status {status}\n".encode()
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if body:
            self.wfile.write(payload)

    def _answer(self, body: bool) -> None:
        with self.server.lock:
            self.server.requests.append((self.command, self.path))
        redirect = self.server.redirects.get(self.path.split("?", 1)[0])
        if redirect is not None:
            return self._bare(302, redirect, body)
        path = self._file()
        if path is None:
            return self._bare(404, {}, body)
        data = path.read_bytes()
        etag = '"' + hashlib.sha1(data, usedforsecurity=False).hexdigest() + '"'
        start, end, status = 0, len(data), 200
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if match and int(match.group(1)) < len(data):
            start = int(match.group(1))
            end = min(int(match.group(2)) + 1 if match.group(2) else len(data), len(data))
            status = 206
        self.send_response(status)
        self.send_header("Content-Length", str(end - start))
        self.send_header("ETag", etag)
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
        self.end_headers()
        if body:
            try:
                self.wfile.write(data[start:end])
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)


class FileServer(ThreadingHTTPServer):
    """Serves files under ``root``; ``redirects`` maps a path to the headers of a 302 answer."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, root: Path, port: int = 0, host: str = "127.0.0.1") -> None:
        super().__init__((host, port), _Handler)
        self.root = root
        self.lock = threading.Lock()
        self.requests: list[tuple[str, str]] = []
        self.redirects: dict[str, dict[str, str]] = {}
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://{self.server_address[0]}:{self.server_address[1]}"

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
