"""The service's limits, its JSON errors and the request-body size cap.

An error is ``{"error": MESSAGE, "error_type": TYPE}``; under OpenAI's routes (``/v1/...``) it is OpenAI's shape
``{"error": {"message", "type", "param", "code"}}`` (``code``: the same TYPE), which OpenAI's clients show.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send


@dataclass(frozen=True)
class Limits:
    """What one request and the whole queue may ask for."""

    max_client_batch: int = 32  # inputs per request (413 above)
    max_batch_size: int = 128  # sentences per encode call at most (a pass holds min(this, encode_batch_size))
    encode_batch_size: int = 16  # sentences per forward pass (one pass per encode call)
    max_batch_tokens: int = 4096  # padded cells per pass: sentences × the longest one's tokens
    max_wait_ms: float = 5.0  # how long the oldest waiting sentence waits for a full pass
    workers: int = 1  # encode threads, each running its own passes
    max_queue: int = 1024  # sentences waiting to be encoded (429 above)
    max_body_bytes: int = 2_000_000  # request body (413 above)
    max_k: int = 100  # hits per search query
    auto_truncate: bool = False  # truncate inputs over the model's length when the request does not say

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not isinstance(value, bool) and value <= 0:
                raise ValueError(f"limit {name} must be positive, got {value}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class ServiceError(Exception):
    """A request the service refuses: HTTP status, a machine-readable type and a sentence for people."""

    def __init__(self, status: int, error_type: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message

    def body(self, openai: bool = False) -> dict[str, Any]:
        """sentcl's shape, or OpenAI's (``openai``: a /v1/ route, whose clients read ``error.message``)."""
        if openai:
            kind = "invalid_request_error" if self.status < 500 else "server_error"
            return {"error": {"message": self.message, "type": kind, "param": None, "code": self.error_type}}
        return {"error": self.message, "error_type": self.error_type}

    def headers(self) -> dict[str, str]:
        return {"x-error-type": self.error_type}  # metrics.ERROR_TYPE_HEADER


OPENAI_PREFIX = "/v1/"  # the routes whose errors take OpenAI's shape


def is_openai_path(path: str) -> bool:
    return path.startswith(OPENAI_PREFIX)


async def send_json_error(
    send: Send, err: ServiceError, scope: Scope, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    """Answer an ASGI request with ``err`` as JSON (for middlewares, which run outside FastAPI's handlers),
    in the shape of the request's route (``scope["path"]``)."""
    body = json.dumps(err.body(openai=is_openai_path(scope.get("path", "")))).encode()
    head = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"x-error-type", err.error_type.encode()),
        *(headers or []),
    ]
    await send({"type": "http.response.start", "status": err.status, "headers": head})
    await send({"type": "http.response.body", "body": body})


class BodySizeLimit:
    """ASGI middleware: a request body over ``max_bytes`` (declared or streamed) is answered 413."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_big = ServiceError(413, "payload_too_large", f"request body over {self.max_bytes} bytes")
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await send_json_error(send, too_big, scope)
            return
        # read the body (at most max_bytes + one chunk), then replay it to the app
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left (or timed out) before its body was in: nothing to answer
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
            if size > self.max_bytes:
                await send_json_error(send, too_big, scope)
                return
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
