"""A lean HTTP/1.1 load client for ``bench.serve_load``: keep-alive connections on asyncio streams, one request
in flight per connection, the answer read by its Content-Length (or its chunks) and its JSON checked.

Why not httpx: on the bench's two cores the clients run beside the service, and each request's client CPU
is taken from it. httpx's pure-Python stack costs about 1.8 ms of CPU a request there, this client a few
tenths of one (``bench.serve_load --client``: both are kept, and every round records the client's CPU).
A deployment's clients run elsewhere; the bench still counts this client's CPU in its per-CPU-second ratio.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import numpy as np
import orjson


class HttpError(Exception):
    """A connection that closed or answered what HTTP/1.1 does not allow."""


class Connection:
    """One keep-alive connection to ``host:port`` (opened on first use, reopened after the server closes it)."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post_json(self, path: str, payload: Any) -> tuple[int, bytes]:
        """POST ``payload`` as JSON: the status and the body."""
        body = orjson.dumps(payload)
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode("ascii")
        if self._streams is None:
            self._streams = await asyncio.open_connection(self.host, self.port)
        reader, writer = self._streams
        writer.write(head + body)
        try:
            return await asyncio.wait_for(self._answer(reader), self.timeout)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as err:
            await self.close()
            raise HttpError(f"a broken answer: {type(err).__name__}: {err}") from err
        except BaseException:
            await self.close()  # a half-read answer leaves the connection unusable
            raise

    async def _answer(self, reader: asyncio.StreamReader) -> tuple[int, bytes]:
        """The status and body; IncompleteReadError where the server hangs up, ValueError where a length or
        a chunk size is not a number, LimitOverrunError where the head is over the stream's limit."""
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise HttpError(f"not an HTTP/1.x status line: {lines[0]!r}")
        headers = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            body = await reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            body = await _chunks(reader)
        else:
            raise HttpError("an answer with neither Content-Length nor chunks")
        if headers.get("connection", "").lower() == "close":
            await self.close()
        return int(parts[1]), body

    async def close(self) -> None:
        if self._streams is not None:
            writer = self._streams[1]
            self._streams = None
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()


async def _chunks(reader: asyncio.StreamReader) -> bytes:
    out = bytearray()
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")  # no trailers are sent by the service
            return bytes(out)
        out += await reader.readexactly(size)
        await reader.readexactly(2)  # the chunk's CRLF


def check_embeddings(body: bytes, sentences: int) -> None:
    """HttpError unless ``body`` is an ``/embed`` answer, a JSON list of ``sentences`` vectors."""
    rows = orjson.loads(body)
    if not isinstance(rows, list) or len(rows) != sentences or not all(isinstance(r, list) for r in rows):
        raise HttpError(f"an /embed answer that is not a list of {sentences} vectors")


def latency_percentiles(latencies: list[float]) -> dict[str, float]:
    """The median and 99th percentile of answered requests' latencies, in ms (NaN when none was answered)."""
    lat = np.array(latencies or [np.nan])
    return {"p50_ms": float(np.percentile(lat, 50) * 1000), "p99_ms": float(np.percentile(lat, 99) * 1000)}
