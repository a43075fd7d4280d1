"""Optional Bearer-token authentication: with an API key set, every route but the page and /health needs
``Authorization: Bearer KEY`` (401 otherwise). The key comes from ``$SENTCL_API_KEY``, ``--api-key-file`` or
``--api-key`` (the last is visible in the process list: the command warns)."""

from __future__ import annotations

import hmac
import os
from pathlib import Path

from starlette.types import ASGIApp, Receive, Scope, Send

from sentcl.files.secret import check_secret, read_secret_file
from sentcl.serve.limits import ServiceError, send_json_error

API_KEY_ENV = "SENTCL_API_KEY"
PUBLIC_PATHS = frozenset({"/", "/health"})  # the page holds no data; /health is for load balancers


def read_key_file(path: Path) -> str:
    """The key in ``path``: its one line, surrounding whitespace removed (``sentcl.files.secret``: a regular
    file or a pipe that answers in time, a small bound read; ValueError naming the file)."""
    return read_secret_file(path, "--api-key-file")


def resolve_api_key(cli_value: str | None, key_file: Path | None = None) -> str | None:
    """The command line's key, else the key file's, else the environment's; None when none is given. A key
    given but empty or blank is refused, whichever way it came (``check_secret``)."""
    if cli_value is not None and key_file is not None:
        raise ValueError("give the key once: --api-key or --api-key-file, not both")
    if key_file is not None:
        return read_key_file(key_file)
    if cli_value is not None:
        return check_secret(cli_value, "--api-key")
    env = os.environ.get(API_KEY_ENV)
    return None if env is None else check_secret(env, f"${API_KEY_ENV}")


class BearerAuth:
    """ASGI middleware comparing the Bearer token with the key in constant time."""

    def __init__(self, app: ASGIApp, api_key: str) -> None:
        self.app = app
        self.expected = api_key.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        header = dict(scope.get("headers", [])).get(b"authorization", b"")
        scheme, _, token = header.partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), self.expected):
            await self.app(scope, receive, send)
            return
        message = "missing or wrong API key: send the header 'Authorization: Bearer KEY'"
        await send_json_error(
            send, ServiceError(401, "unauthorized", message), scope, [(b"www-authenticate", b"Bearer")]
        )
