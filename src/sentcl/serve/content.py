"""What the service reads a request body as: JSON, whatever its ``Content-Type`` says, and never compressed.

``curl -d '{"inputs": "a dog"}'`` sends ``Content-Type: application/x-www-form-urlencoded``; other clients send
``text/plain`` or nothing. Every body the service takes is a JSON object, so ``JsonBody`` reads each request's
body as JSON whatever its declared type (the type it came with is kept in ``scope["state"]``, and a body that is
not JSON is answered 400 naming it). A ``Content-Encoding`` other than ``identity`` (gzip, br, ...) is answered
415: the service does not inflate bodies, so a compressed JSON body is refused saying so, not read as bytes
that are not UTF-8.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from sentcl.serve.limits import ServiceError, send_json_error

JSON_TYPE = b"application/json"
#: the key in ``scope["state"]`` (``request.state``) holding the Content-Type a request came with
DECLARED_TYPE = "declared_content_type"


def declared_type_note(declared: str | None) -> str:
    """The words an error about a body's JSON adds when the client declared another Content-Type."""
    if not declared or declared.split(";")[0].strip().lower() == JSON_TYPE.decode():
        return ""
    return f" (it was sent as Content-Type: {declared}; every body is read as JSON, send application/json)"


class JsonBody:
    """ASGI middleware: every request body is read as JSON; compressed bodies are 415 (the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        headers = list(scope.get("headers", []))
        encoding = next((v for k, v in headers if k == b"content-encoding"), b"identity")
        if encoding.strip().lower() not in (b"", b"identity"):
            name = encoding.decode("latin-1")
            await send_json_error(
                send,
                ServiceError(
                    415,
                    "unsupported_media_type",
                    f"Content-Encoding {name!r} is not supported: send the JSON body uncompressed",
                ),
                scope,
            )
            return
        declared = next((v for k, v in headers if k == b"content-type"), None)
        scope.setdefault("state", {})[DECLARED_TYPE] = (
            None if declared is None else declared.decode("latin-1")
        )
        kept = [(k, v) for k, v in headers if k != b"content-type"]
        await self.app({**scope, "headers": [*kept, (b"content-type", JSON_TYPE)]}, receive, send)
