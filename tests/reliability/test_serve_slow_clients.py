"""Slow, idle and oversized clients of the service, each against a real uvicorn running the
protocol ``sentcl serve`` runs (``serve.protocol.guarded_protocol``) with short timeouts, from real HTTP
clients and raw sockets."""

from __future__ import annotations

import copy
import logging
import socket
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "serve"))  # the service tests' helpers
from serve_helpers import error_of, running_server  # noqa: E402

from sentcl.serve.app import create_app  # noqa: E402
from sentcl.serve.hosts import HostPolicy  # noqa: E402
from sentcl.serve.index import load_search_index  # noqa: E402
from sentcl.serve.protocol import guarded_protocol  # noqa: E402
from sentcl.serve.text import char_budget  # noqa: E402

HEADER_TIMEOUT = BODY_TIMEOUT = 1.5
MAX_CONNECTIONS = 8


class Server:
    def __init__(self, url: str, app: Any) -> None:
        self.url, self.app = url, app
        self.port = int(url.rsplit(":", 1)[1])


@pytest.fixture(scope="module")
def server(tiny_encoder: Any, index_dir: Path) -> Iterator[Server]:
    index = load_search_index(index_dir, tiny_encoder.embedding_dim)
    app = create_app(tiny_encoder, model_name="tiny", index=index, hosts=HostPolicy("127.0.0.1", ["my.box"]))
    protocol = guarded_protocol(HEADER_TIMEOUT, BODY_TIMEOUT, MAX_CONNECTIONS)
    with running_server(app, http=protocol) as url:
        yield Server(url, app)


def assert_json_error(resp: httpx.Response, status: int, error_type: str, *phrases: str) -> None:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"] == "application/json"
    message, kind = error_of(resp)
    assert kind == error_type, resp.text
    for phrase in phrases:
        assert phrase in message, resp.text


# S56: DNS rebinding. A page whose name was rebound to 127.0.0.1 sends its own name in Host: refused, on
# every route, with or without a key; the names the service is known by are answered.
FORGED = [
    "evil.example:{port}",
    "evil.example",
    "EVIL.example.",
    "localhost.evil.example",
    "127.0.0.1.nip.io",
]
FORGED += ["10.0.0.7", "[::2]:{port}", "my.box.evil.example", "localhost@evil.example"]
ROUTES = [("POST", "/search", {"query": "a dog", "k": 2}), ("POST", "/embed", {"inputs": "a dog"})]
ROUTES += [("GET", "/info", None), ("GET", "/metrics", None), ("GET", "/", None), ("GET", "/health", None)]


@pytest.mark.parametrize("host", FORGED)
def test_s56_forged_host_is_refused(server: Server, host: str) -> None:
    with httpx.Client(base_url=server.url, headers={"Host": host.format(port=server.port)}) as client:
        for method, path, body in ROUTES:
            resp = client.request(method, path, json=body)
            assert_json_error(resp, 400, "host_not_allowed", "--allowed-hosts")


@pytest.mark.parametrize("host", ["localhost:{port}", "127.0.0.1", "[::1]:{port}", "LOCALHOST.", "my.box:80"])
def test_s56_known_hosts_are_answered(server: Server, host: str) -> None:
    resp = httpx.post(
        f"{server.url}/search",
        json={"query": "a dog", "k": 2},
        headers={"Host": host.format(port=server.port)},
    )
    assert resp.status_code == 200 and len(resp.json()) == 2


def test_s56_with_a_key_too_and_without_host(tiny_encoder: Any) -> None:
    app = create_app(tiny_encoder, api_key="k-1")
    with running_server(app) as url:
        auth = {"Authorization": "Bearer k-1"}
        forged = httpx.post(f"{url}/embed", json={"inputs": "a"}, headers={**auth, "Host": "evil.example"})
        assert_json_error(forged, 400, "host_not_allowed")
        assert httpx.post(f"{url}/embed", json={"inputs": "a"}, headers=auth).status_code == 200
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:  # HTTP/1.0 has no Host
            sock.sendall(b"GET /health HTTP/1.0\r\n\r\n")
            answer = read_all(sock)
        assert answer.startswith(b"HTTP/1.1 400") and b'"host_not_allowed"' in answer and b"no Host" in answer


# S15: a lone surrogate (a JSON \ud83d without its low half) in any text field of any route.
SURROGATE = "bad \\ud83d surrogate"
TEXT_FIELDS = [
    ("/embed", '{"inputs": ["ok", "%s"]}'),
    ("/embed", '{"inputs": "%s"}'),
    ("/similarity", '{"inputs": {"source_sentence": "%s", "sentences": ["ok"]}}'),
    ("/similarity", '{"inputs": {"source_sentence": "ok", "sentences": ["%s"]}}'),
    ("/v1/embeddings", '{"input": "%s", "model": "x"}'),
    ("/v1/embeddings", '{"input": ["ok", "%s"]}'),
    ("/search", '{"query": "%s"}'),
    ("/search", '{"queries": ["ok", "%s"]}'),
]


@pytest.mark.parametrize(("path", "template"), TEXT_FIELDS)
def test_s15_lone_surrogate_is_a_json_400(server: Server, path: str, template: str) -> None:
    body = (template % SURROGATE).encode()
    resp = httpx.post(server.url + path, content=body, headers={"content-type": "application/json"})
    assert_json_error(resp, 400, "invalid_text", "lone surrogate", "U+D83D")


@pytest.mark.parametrize("path", ["/embed", "/similarity", "/v1/embeddings", "/search"])
def test_s15_bytes_that_are_not_utf8_are_a_json_400(server: Server, path: str) -> None:
    resp = httpx.post(
        server.url + path, content=b'{"inputs": ["\xff\xfe"]}', headers={"content-type": "application/json"}
    )
    assert_json_error(resp, 400, "malformed_json", "not UTF-8")


# S09: inputs that show nothing (spaces and invisible characters) are refused, naming the input.
BLANKS = [" ", "   \u200b ", "\ufeff", "\u2060", "\u00a0\u3000", "\u180e", "\u3164", "\u2800", "\u00ad"]
BLANKS += ["\u200c\u200d", "\t\r\n\x0b", "\ufe0f", "\U000e0020", "\u115f\u1160", "\u202e\u2066"]


@pytest.mark.parametrize("blank", BLANKS, ids=[ascii(b) for b in BLANKS])
def test_s09_blank_input_is_refused_with_its_index(server: Server, blank: str) -> None:
    resp = httpx.post(f"{server.url}/embed", json={"inputs": ["ok", blank]})
    assert_json_error(resp, 400, "empty", "input 1")
    resp = httpx.post(f"{server.url}/v1/embeddings", json={"input": [blank, "ok"]})
    assert_json_error(resp, 400, "empty", "input 0")


def test_s09_nothing_the_model_reads_and_visible_text_kept(server: Server, tiny_encoder: Any) -> None:
    # a lone accent is visible but the (accent-stripping) tokenizer reads nothing in it
    assert_json_error(
        httpx.post(f"{server.url}/embed", json={"inputs": ["\u0301\u0301"]}), 400, "empty", "input 0"
    )
    got = httpx.post(f"{server.url}/embed", json={"inputs": ["a\u200bdog"], "normalize": False}).json()
    np.testing.assert_allclose(got[0], tiny_encoder.encode(["a\u200bdog"])[0], atol=1e-5)


# S50: slow clients. A client trickling header bytes, one saying nothing, one trickling its body: each is
# disconnected within its timeout, while others are served; a connection over the cap is answered 503.
def read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def held_seconds(port: int, trickle: bytes, every_s: float) -> tuple[float, bytes]:
    """Send ``trickle`` one byte every ``every_s`` seconds until the server closes; (seconds, answer)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    start = time.monotonic()
    answer = b""
    try:
        for byte in trickle:
            sock.sendall(bytes([byte]))
            sock.settimeout(every_s)
            try:
                answer = read_all(sock)
                break  # closed
            except TimeoutError:
                continue
        else:
            sock.settimeout(10)
            answer = read_all(sock)
    except (ConnectionResetError, BrokenPipeError):
        pass
    finally:
        sock.close()
    return time.monotonic() - start, answer


HEADERS = (
    b"POST /embed HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\ncontent-length: 40\r\n"
)


def test_s50_header_trickle_is_cut_at_the_timeout(server: Server) -> None:
    with ThreadPoolExecutor(1) as pool:
        held = pool.submit(held_seconds, server.port, HEADERS, 0.2)
        time.sleep(0.5)
        assert httpx.get(f"{server.url}/health", timeout=2).status_code == 200  # others are served
        seconds, answer = held.result(timeout=20)
    assert HEADER_TIMEOUT - 0.1 < seconds < HEADER_TIMEOUT + 1.5, seconds
    assert answer.startswith(b"HTTP/1.1 408") and b'"request_timeout"' in answer


def test_s50_header_trickle_on_a_kept_alive_connection(server: Server) -> None:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
    first = b""
    while b'"ok"}' not in first:  # the whole first answer
        first += sock.recv(65536)
    assert first.startswith(b"HTTP/1.1 200")
    seconds, answer = held_seconds_on(sock, HEADERS, 0.2)  # then the next request's headers, trickled
    assert HEADER_TIMEOUT - 0.1 < seconds < HEADER_TIMEOUT + 1.5, seconds
    assert answer.startswith(b"HTTP/1.1 408")


def test_s50_silent_connection_is_closed(server: Server) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        start = time.monotonic()
        answer = read_all(sock)
        seconds = time.monotonic() - start
    assert HEADER_TIMEOUT - 0.1 < seconds < HEADER_TIMEOUT + 1.5 and answer.startswith(b"HTTP/1.1 408")


def test_s50_body_trickle_is_cut_at_the_timeout(server: Server) -> None:
    headers = HEADERS + b"\r\n"
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.sendall(headers)  # the headers at once, then the body one byte every 0.2 s
    seconds, _ = held_seconds_on(sock, b'{"inputs": "a dog a dog a dog a dog"}   ', 0.2)
    assert BODY_TIMEOUT - 0.1 < seconds < BODY_TIMEOUT + 1.5, seconds


def held_seconds_on(sock: socket.socket, trickle: bytes, every_s: float) -> tuple[float, bytes]:
    start = time.monotonic()
    try:
        for byte in trickle:
            sock.sendall(bytes([byte]))
            sock.settimeout(every_s)
            try:
                return time.monotonic() - start, read_all(sock)
            except TimeoutError:
                continue
    except (ConnectionResetError, BrokenPipeError):
        return time.monotonic() - start, b""
    finally:
        sock.close()
    return float("inf"), b""


def test_s50_keep_alive_still_works(server: Server) -> None:
    with httpx.Client(base_url=server.url) as client:  # one connection, requests 2 s apart
        assert client.post("/embed", json={"inputs": "a dog"}).status_code == 200
        time.sleep(HEADER_TIMEOUT + 0.5)  # idle between requests: the keep-alive timeout (5 s) applies
        assert client.post("/embed", json={"inputs": "a cat"}).status_code == 200


def test_s50_connections_over_the_cap_get_503(server: Server) -> None:
    idle = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(MAX_CONNECTIONS)]
    try:
        time.sleep(0.2)
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as extra:
            answer = read_all(extra)
        assert answer.startswith(b"HTTP/1.1 503") and b'"overloaded"' in answer
    finally:
        for sock in idle:
            sock.close()
    time.sleep(0.2)
    assert httpx.get(f"{server.url}/health", timeout=5).status_code == 200


# S58: the key in argv. The command warns when the key is on its command line; from $SENTCL_API_KEY or
# --api-key-file it does not, and the key works.
@pytest.mark.parametrize("source", ["argv", "env", "file"])
def test_s58_key_sources(
    source: str, tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    import sentcl.cli.serve as serve_cli
    from sentcl.cli import main

    seen: dict[str, Any] = {}
    monkeypatch.setattr(serve_cli, "serve_on", lambda app, sock, config: seen.update(app=app))
    monkeypatch.delenv("SENTCL_API_KEY", raising=False)
    argv = ["serve", str(tiny_bert), "--port", "0", "--keep-malloc-threshold"]
    if source == "argv":
        argv += ["--api-key", "s3cret-key-123"]
    elif source == "env":
        monkeypatch.setenv("SENTCL_API_KEY", "s3cret-key-123")
    else:
        (tmp_path / "key").write_text("s3cret-key-123\n", encoding="utf-8")
        (tmp_path / "key").chmod(0o600)
        argv += ["--api-key-file", str(tmp_path / "key")]
    with caplog.at_level(logging.WARNING, logger="sentcl"):
        assert main(argv) == 0
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == (1 if source == "argv" else 0), warned
    assert all("process list" in w and "SENTCL_API_KEY" in w for w in warned)
    from fastapi.testclient import TestClient

    with TestClient(seen["app"], base_url="http://localhost") as c:
        assert c.post("/embed", json={"inputs": "a"}).status_code == 401
        ok = c.post("/embed", json={"inputs": "a"}, headers={"Authorization": "Bearer s3cret-key-123"})
        assert ok.status_code == 200


# S60: head-of-line blocking. Six concurrent ~1.9 MB inputs with truncate=true and one tiny request: no
# tokeniser call reads more than the character budget, so the tiny request is not held behind them, and
# each big answer equals the encoder's own truncation of the full text.
class RecordingTokenizer:
    """Delegates to a tokenizer; records the longest string any call was given (shared by its copies)."""

    def __init__(self, inner: Any, longest: list[int]) -> None:
        self.inner, self.longest = inner, longest

    def __call__(self, texts: Any, **kwargs: Any) -> Any:
        batch = [texts] if isinstance(texts, str) else texts
        self.longest[0] = max(self.longest[0], *(len(t) for t in batch))
        return self.inner(texts, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __len__(self) -> int:
        return len(self.inner)

    def __deepcopy__(self, memo: dict[int, Any]) -> RecordingTokenizer:
        return RecordingTokenizer(copy.deepcopy(self.inner, memo), self.longest)


class RecordingEncoder:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.longest = [0]
        self.tokenizer = RecordingTokenizer(inner.tokenizer, self.longest)
        self.max_length, self.embedding_dim = inner.max_length, inner.embedding_dim
        self.lock = threading.Lock()

    def encode(self, sentences: list[str], **kwargs: Any) -> np.ndarray:
        self.longest[0] = max(self.longest[0], *(len(s) for s in sentences))
        with self.lock:
            return self.inner.encode(sentences, **kwargs)


def test_s60_truncate_reads_a_bounded_prefix(tiny_encoder: Any) -> None:
    encoder = RecordingEncoder(tiny_encoder)
    words = "the dog runs in the garden and a man plays the guitar near the river".split()
    big = [" ".join(words[(i + j) % len(words)] for j in range(410_000)) for i in range(6)]  # ~1.9 MB each
    assert all(len(b.encode()) > 1_800_000 for b in big)
    app = create_app(encoder, limits=None)
    with running_server(app, http=guarded_protocol(10, 60, 100)) as url, ThreadPoolExecutor(8) as pool:
        posts = [
            pool.submit(
                httpx.post,
                f"{url}/embed",
                json={"inputs": b, "truncate": True, "normalize": False},
                timeout=120,
            )
            for b in big
        ]
        start = time.monotonic()
        tiny = httpx.post(f"{url}/embed", json={"inputs": "a dog"}, timeout=120)
        tiny_s = time.monotonic() - start
        answers = [p.result(timeout=120) for p in posts]
        refused = httpx.post(f"{url}/embed", json={"inputs": big[0]}, timeout=120)  # no truncate: refused
    budget = char_budget(tiny_encoder.max_length)
    assert tiny.status_code == 200 and tiny_s < 10, tiny_s
    assert 0 < encoder.longest[0] <= budget, encoder.longest[0]
    want = tiny_encoder.encode(big[:1], max_length=tiny_encoder.max_length)  # the full texts
    np.testing.assert_allclose([a.json()[0] for a in answers[:1]], want, atol=1e-5)
    more = f"more than {tiny_encoder.max_length} words"  # the input budget's cut (sentcl.files.budget)
    assert_json_error(refused, 422, "input_too_long", "input 0", more)
    print(f"S60: tiny request {tiny_s:.3f} s while six 1.9 MB inputs were truncated; longest read {budget}")


def test_s60_truncated_ids_equal_the_full_texts(tiny_encoder: Any) -> None:
    """The cut falls on whitespace: the kept prefix tokenises to the full text's first tokens."""
    from sentcl.serve.text import cut

    limit = tiny_encoder.max_length
    tok = tiny_encoder.tokenizer
    rng = np.random.default_rng(0)
    words = "a the man dog playing garden guitar river stock market".split()
    for _ in range(20):
        text = " ".join(rng.choice(words, size=3000))
        want = tok(text, truncation=True, max_length=limit)["input_ids"]
        got = tok(cut(text, char_budget(limit)), truncation=True, max_length=limit)["input_ids"]
        assert got == want


@pytest.mark.parametrize(
    ("content", "mode", "error"),
    [
        ("", 0o600, "is empty"),
        ("one\ntwo\n", 0o600, "several lines"),
        (b"\xff\xfe", 0o600, "not UTF-8"),
        (None, 0o600, "cannot read it"),
        ("k-1\n", 0o644, None),  # works, with a warning
    ],
)
def test_s58_key_file_mistakes(
    content: str | bytes | None, mode: int, error: str | None, tiny_bert: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: Any, caplog: Any,
) -> None:  # fmt: skip
    import sentcl.cli.serve as serve_cli
    from sentcl.cli import main

    monkeypatch.setattr(serve_cli, "serve_on", lambda app, sock, config: None)
    key = tmp_path / "key"
    if isinstance(content, bytes):
        key.write_bytes(content)
    elif content is not None:
        key.write_text(content, encoding="utf-8")
    if content is not None:
        key.chmod(mode)
    with caplog.at_level(logging.WARNING, logger="sentcl"):
        code = main(
            ["serve", str(tiny_bert), "--port", "0", "--keep-malloc-threshold", "--api-key-file", str(key)]
        )
    err = capsys.readouterr().err
    if error is None:
        assert code == 0 and any("chmod 600" in r.getMessage() for r in caplog.records)
    else:
        assert code == 2 and "Traceback" not in err
        assert err.strip().startswith(f"sentcl serve: error: --api-key-file {key}") and error in err, err
