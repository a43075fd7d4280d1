"""bench.http_load, the lean load client, against a raw asyncio server that writes the answers byte for byte
(Content-Length, chunks, Connection: close, a broken status line, a server that hangs up), and
bench.serve_load's CPU clock and bench.common's resident set of another process against that process's own
readings."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _bench_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


Answer = Callable[[bytes], bytes]  # the request's body -> the raw answer


async def _serve(answers: list[Answer], requests: int) -> tuple[list[tuple[int, bytes]], list[bytes], int]:
    """Start a server that answers its n-th request with ``answers[n]``, send ``requests`` POSTs through one
    ``Connection``; the (status, body) pairs, the request heads the server read and the connections it took."""
    from bench.http_load import Connection

    heads: list[bytes] = []
    connections = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(
                    next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:"))[15:]
                )
                body = await reader.readexactly(length)
                heads.append(head)
                raw = answers[len(heads) - 1](body)
                writer.write(raw)
                await writer.drain()
                if b"connection: close" in raw.lower() or not raw:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    conn = Connection("127.0.0.1", port, timeout=5)
    try:
        out = [await conn.post_json("/embed", {"inputs": [f"s{i}"]}) for i in range(requests)]
    finally:
        await conn.close()
        server.close()
        await server.wait_closed()
    return out, heads, connections


def _run(coro: Awaitable[object]) -> object:
    return asyncio.run(coro)  # type: ignore[arg-type]


def _length(body: bytes, status: int = 200, extra: str = "") -> bytes:
    return f"HTTP/1.1 {status} OK\r\ncontent-length: {len(body)}\r\n{extra}\r\n".encode() + body


def _chunked(body: bytes, sizes: list[int]) -> bytes:
    out, at = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"], 0
    for size in sizes:
        part = body[at : at + size]
        at += len(part)
        if part:
            out.append(f"{len(part):x}\r\n".encode() + part + b"\r\n")
    if at < len(body):
        out.append(f"{len(body) - at:X}\r\n".encode() + body[at:] + b"\r\n")
    return b"".join(out) + b"0\r\n\r\n"


def test_content_length_answers_on_one_kept_alive_connection() -> None:
    vectors = orjson.dumps([[0.5, -1.0]])
    out, heads, connections = _run(_serve([lambda b: _length(vectors)] * 3, 3))  # type: ignore[misc]
    assert out == [(200, vectors)] * 3 and connections == 1
    assert all(h.startswith(b"POST /embed HTTP/1.1\r\n") for h in heads)
    assert b"content-type: application/json" in heads[0].lower()


@settings(max_examples=40, deadline=None)
@given(
    body=st.binary(min_size=0, max_size=3000),
    sizes=st.lists(st.integers(min_value=1, max_value=700), max_size=8),
)
def test_chunked_answers_are_joined_whatever_the_chunk_sizes(body: bytes, sizes: list[int]) -> None:
    out, _, _ = _run(_serve([lambda _: _chunked(body, sizes), lambda _: _length(b"[]")], 2))  # type: ignore[misc]
    assert out == [(200, body), (200, b"[]")]  # the connection stays usable after the last chunk


def test_connection_close_is_followed_by_a_new_connection() -> None:
    answers = [lambda _: _length(b"[]", extra="Connection: close\r\n"), lambda _: _length(b"[[1]]", 429)]
    out, _, connections = _run(_serve(answers, 2))  # type: ignore[misc]
    assert out == [(200, b"[]"), (429, b"[[1]]")] and connections == 2


@pytest.mark.parametrize(
    "raw",
    [
        b"SPDY/3 200 OK\r\ncontent-length: 0\r\n\r\n",
        b"HTTP/1.1 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n\r\n",
        b"",
        b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\nConnection: close\r\n\r\n[[1]",
        b"HTTP/1.1 200 OK\r\ncontent-length: ten\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ],
    ids=["not-http", "no-status", "no-length", "hang-up", "cut-body", "bad-length", "bad-chunk"],
)
def test_a_broken_answer_is_an_error_not_a_hang(raw: bytes) -> None:
    from bench.http_load import HttpError

    with pytest.raises(HttpError):
        _run(_serve([lambda _: raw], 1))


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(min_value=0, max_value=6), asked=st.integers(min_value=0, max_value=6))
def test_check_embeddings_counts_the_vectors(rows: int, asked: int) -> None:
    from bench.http_load import HttpError, check_embeddings

    body = orjson.dumps([[0.25] * 3 for _ in range(rows)])
    if rows == asked:
        check_embeddings(body, asked)
    else:
        with pytest.raises(HttpError):
            check_embeddings(body, asked)
    with pytest.raises(HttpError):
        check_embeddings(orjson.dumps({"embeddings": [[0.25]] * asked}), asked)


def _child(code: str) -> subprocess.Popen[str]:
    """A Python process that runs ``code`` (which prints one line), then waits until its stdin closes."""
    return subprocess.Popen(
        [sys.executable, "-c", f"{code}\nimport sys\nsys.stdin.read()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_cpu_seconds_of_another_process_equals_its_own_clock() -> None:
    from bench.serve_load import cpu_seconds

    child = _child(
        "import sys, time\nwhile time.process_time() < 0.3: pass\nprint(time.process_time(), flush=True)"
    )
    try:
        own = float(child.stdout.readline())  # type: ignore[union-attr]
        time.sleep(0.05)  # the child now waits on stdin: its clock stands still
        seen = cpu_seconds(child.pid)
    finally:
        child.communicate("")
    assert own >= 0.3 and own <= seen <= own + 0.02  # the print and the read after it: a few ms at most


def test_rss_of_another_process_is_what_it_reads_of_itself() -> None:
    """bench.common.rss_mb(pid) (VmRSS of /proc/PID/status) against the child's own statm reading, taken while
    it holds 64 MiB of touched pages; a process that is gone raises, naming it."""
    from bench.common import rss_mb

    child = _child(
        "import os\nblock = bytearray(64 * 2**20)\nblock[:: 4096] = b'x' * (len(block) // 4096)\n"
        "print(int(open('/proc/self/statm').read().split()[1]) * os.sysconf('SC_PAGESIZE') / 2**20, flush=True)"
    )
    try:
        own = float(child.stdout.readline())  # type: ignore[union-attr]
        seen = rss_mb(child.pid)
    finally:
        child.communicate("")
    assert own > 64 and abs(seen - own) < 2  # MiB: the same pages, read through two files
    with pytest.raises(RuntimeError, match=f"process {child.pid}"):
        rss_mb(child.pid)  # reaped: no /proc entry
