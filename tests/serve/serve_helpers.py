"""Helpers of the service's tests: a gated encoder, bounded waiting, a real uvicorn in a thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np


def error_of(resp: Any) -> tuple[str, str]:
    """(message, type) of an error answer, checking its shape: OpenAI's ``{"error": {"message", "type", "param",
    "code"}}`` (``code``: sentcl's type) under /v1/, else sentcl's ``{"error", "error_type"}``."""
    body = resp.json()
    if resp.request.url.path.startswith("/v1/"):
        assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}, body
        error = body["error"]
        assert error["type"] == ("server_error" if resp.status_code >= 500 else "invalid_request_error"), body
        assert isinstance(error["message"], str) and error["message"], body
        return error["message"], error["code"]
    assert set(body) == {"error", "error_type"}, body
    assert isinstance(body["error"], str) and body["error"], body
    return body["error"], body["error_type"]


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


class GatedEncoder:
    """Wraps an encoder: records every encode call's sentences; while ``gate`` is clear, encode blocks
    (at most ``timeout_s``), so that tests can hold a batch in flight."""

    def __init__(self, inner: Any, timeout_s: float = 10.0) -> None:
        self.inner = inner
        self.tokenizer = inner.tokenizer
        self.max_length = inner.max_length
        self.embedding_dim = inner.embedding_dim
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()
        self.calls: list[list[str]] = []
        self.timeout_s = timeout_s

    def encode(self, sentences: list[str], **kwargs: Any) -> np.ndarray:
        self.calls.append(list(sentences))
        self.entered.set()
        assert self.gate.wait(self.timeout_s), "the test never opened the gate"
        return self.inner.encode(sentences, **kwargs)


def wait_for(predicate: Callable[[], bool], timeout_s: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.01)


@contextmanager
def running_server(app: Any, **config: Any) -> Iterator[str]:
    """Serve ``app`` with a real uvicorn on 127.0.0.1 and a free port (``config``: more of uvicorn.Config's
    settings, e.g. ``http=guarded_protocol(...)``, the protocol ``sentcl serve`` runs); yields its base URL."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", **config))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started, 20.0, "uvicorn to start")
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


class SteppedEncoder:
    """Wraps an encoder: every encode call records its sentences, then waits for the test to ``step()`` it
    (at most ``timeout_s``), so that a test decides when each pass finishes. A call holding a sentence that
    contains ``fail_on`` raises once released."""

    def __init__(self, inner: Any, fail_on: str = "\0", timeout_s: float = 10.0) -> None:
        self.inner = inner
        self.tokenizer = inner.tokenizer
        self.max_length = inner.max_length
        self.embedding_dim = inner.embedding_dim
        self.calls: list[list[str]] = []
        self.permits = threading.Semaphore(0)
        self.fail_on = fail_on
        self.timeout_s = timeout_s

    def encode(self, sentences: list[str], **kwargs: Any) -> np.ndarray:
        self.calls.append(list(sentences))
        assert self.permits.acquire(timeout=self.timeout_s), "the test never stepped this call"
        if any(self.fail_on in s for s in sentences):
            raise RuntimeError(f"cannot encode {self.fail_on!r}")
        return self.inner.encode(sentences, **kwargs)

    def step(self, calls: int = 1) -> None:
        for _ in range(calls):
            self.permits.release()
