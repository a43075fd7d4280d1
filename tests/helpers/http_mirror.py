"""A download mirror on 127.0.0.1 for the download tests (a real ThreadingHTTPServer, loopback only)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODES = ("plain", "norange", "emptyrange", "cutnolen")


@dataclass
class Mirror:
    """Files by name, served in one ``mode``:

    - plain: Content-Length, Range honoured (206; a range past the end: 206 with an empty body);
    - emptyrange: the same, named for the tests of that answer;
    - norange: Range ignored (200 and the whole body);
    - cutnolen: no Content-Length, the connection closed after half the body.

    ``drop_after[name]`` = n: the next GET of it sends n bytes of the body, then hangs up. ``ranges``: the
    Range header of each request, in order.
    """

    base: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    mode: str = "plain"
    drop_after: dict[str, int] = field(default_factory=dict)
    ranges: list[str | None] = field(default_factory=list)


def _hang_up(handler: BaseHTTPRequestHandler) -> None:
    handler.wfile.flush()
    handler.close_connection = True
    handler.connection.shutdown(socket.SHUT_RDWR)


def _handler(mirror: Mirror) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep pytest output clean
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            name = self.path.lstrip("/")
            asked = self.headers.get("Range")
            mirror.ranges.append(asked)
            body = mirror.files.get(name)
            if body is None:
                self.send_error(404)
                return
            if mirror.mode == "cutnolen":
                self.send_response(200)
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body[: len(body) // 2])
                _hang_up(self)
                return
            start = 0
            if asked and mirror.mode in ("plain", "emptyrange"):
                start = int(asked.removeprefix("bytes=").split("-")[0])
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            else:
                self.send_response(200)
            self.send_header("Content-Length", str(max(len(body) - start, 0)))
            self.end_headers()
            cut = mirror.drop_after.pop(name, None)
            self.wfile.write(body[start:] if cut is None else body[start : start + cut])
            if cut is not None:
                _hang_up(self)

    return Handler


@contextlib.contextmanager
def serving() -> Iterator[Mirror]:
    """A Mirror served on a free loopback port for the duration of the block."""
    mirror = Mirror()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(mirror))
    mirror.base = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield mirror
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
