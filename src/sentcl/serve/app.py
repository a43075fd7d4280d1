"""The FastAPI application: the service (``serve/service.py``) with its routes, guards and JSON errors, over an
encoder (any backend with ``.encode``, ``.tokenizer``, ``.max_length``, ``.embedding_dim``) and an optional
search index."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException

from sentcl.serve.auth import BearerAuth
from sentcl.serve.content import DECLARED_TYPE, JsonBody, declared_type_note
from sentcl.serve.hosts import HostCheck, HostPolicy
from sentcl.serve.limits import BodySizeLimit, Limits, ServiceError, is_openai_path
from sentcl.serve.metrics import MetricsMiddleware
from sentcl.serve.routes import ROUTES, add_routes
from sentcl.serve.service import Service, backend_name


def _validation_error(request: Request, err: Exception) -> Response:
    errors = err.errors() if isinstance(err, RequestValidationError) else []
    note = declared_type_note(getattr(request.state, DECLARED_TYPE, None))
    if any(e.get("type") == "json_invalid" for e in errors):
        return _error(
            ServiceError(400, "malformed_json", f"the request body is not valid JSON{note}"), request
        )
    parts = [f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}" for e in errors[:3]]
    return _error(ServiceError(422, "validation", "; ".join(parts) or "invalid request"), request)


def _error(err: ServiceError, request: Request) -> Response:
    """``err`` as JSON in the shape of the request's route (OpenAI's under /v1/)."""
    # json.dumps escapes to ASCII: a message quoting a client's lone surrogate cannot fail to encode
    body = json.dumps(err.body(openai=is_openai_path(request.url.path)))
    return Response(body, status_code=err.status, media_type="application/json", headers=err.headers())


def _http_error(request: Request, err: Exception) -> Response:
    assert isinstance(err, HTTPException)
    if err.status_code == 400 and isinstance(err.__cause__, UnicodeDecodeError):  # FastAPI's body parsing
        note = declared_type_note(getattr(request.state, DECLARED_TYPE, None))
        return _error(
            ServiceError(400, "malformed_json", f"the request body is not UTF-8 text{note}"), request
        )
    kind = {404: "not_found", 405: "method_not_allowed"}.get(err.status_code, "http_error")
    answer = _error(ServiceError(err.status_code, kind, str(err.detail)), request)
    answer.headers.update(err.headers or {})  # a 405's Allow: the methods the route answers (RFC 9110)
    return answer


def _internal_error(request: Request, err: Exception) -> Response:
    # a fault of the service, not of the request: JSON like every other answer (the traceback is logged)
    return _error(
        ServiceError(500, "internal", f"internal error ({type(err).__name__}); see the server log"), request
    )


def create_app(
    encoder: Any = None,
    *,
    load: Callable[[], Any] | None = None,
    model_name: str = "model",
    index: Any = None,
    limits: Limits | None = None,
    max_length: int | None = None,
    api_key: str | None = None,
    backend: str | None = None,
    hosts: HostPolicy | None = None,
    after_pass: Callable[[], object] | None = None,
) -> FastAPI:
    """The service around ``encoder`` (or the one ``load()`` returns, loaded in a thread at start-up:
    /health answers 503 until then). ``index``: ``serve.index.load_search_index``'s, for /search.
    ``hosts``: the ``Host`` names answered (default: localhost, 127.0.0.1 and ::1 only). ``after_pass``: called
    in the encode thread after every forward pass (``sentcl serve``: ``training.allocator.PeriodicRelease``)."""
    if (encoder is None) == (load is None):
        raise ValueError("give exactly one of encoder and load")
    limits = limits or Limits()
    info = {"model": model_name, "backend": backend, "pooler": None}
    service = Service(limits, index, info, max_length, after_pass)

    def finish_loading(enc: Any) -> None:
        info["pooler"] = getattr(enc, "pooler", None) or getattr(getattr(enc, "f", None), "pooler", None)
        info["backend"] = backend or backend_name(enc)
        service.set_encoder(enc)

    def load_in_thread() -> None:
        try:
            finish_loading(load())  # type: ignore[misc]
        except Exception as err:  # noqa: BLE001 - reported by /health
            service.load_error = f"the model failed to load: {type(err).__name__}: {err}"

    if encoder is not None:
        finish_loading(encoder)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if load is not None:
            threading.Thread(target=load_in_thread, name="sentcl-load", daemon=True).start()
        yield
        await service.batcher.close()
        service._count_executor.shutdown(wait=False, cancel_futures=True)

    app = FastAPI(title="sentcl serve", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.service = service
    app.add_exception_handler(ServiceError, lambda request, e: _error(e, request))  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _internal_error)
    app.add_middleware(JsonBody)  # innermost: every body is read as JSON
    app.add_middleware(BodySizeLimit, max_bytes=limits.max_body_bytes)
    if api_key:
        app.add_middleware(BearerAuth, api_key=api_key)
    app.add_middleware(HostCheck, policy=hosts or HostPolicy())
    app.add_middleware(MetricsMiddleware, metrics=service.metrics, routes=ROUTES)  # outermost
    add_routes(app, service)
    return app
