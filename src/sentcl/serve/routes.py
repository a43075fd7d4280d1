"""The routes: /health, /info, /embed, /similarity, /v1/embeddings, /search, /metrics and the page at /."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from importlib import resources
from typing import Any

import numpy as np
import orjson
from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response

from sentcl.data.shard_input import InputChangedError
from sentcl.serve.limits import ServiceError
from sentcl.serve.schemas import EmbedRequest, OpenAIEmbeddingRequest, SearchRequest, SimilarityRequest
from sentcl.serve.service import Service
from sentcl.similarity import unit_rows

ROUTES = frozenset(
    {
        "/",
        "/health",
        "/info",
        "/embed",
        "/similarity",
        "/v1/embeddings",
        "/v1/models",
        "/search",
        "/index/reload",
        "/metrics",
    }
)
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


def _plain(value: Any) -> Any:
    """json.dumps' fallback for numpy values: arrays as lists, scalars as Python numbers."""
    if isinstance(value, np.ndarray | np.generic):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def json_body(payload: Any) -> bytes:
    """``payload`` as JSON; float32 arrays in it are written as float32, in the shortest text that reads back
    to the same float32 (about half the bytes of Python's float64 text of the same values, and several times
    faster to write: docs/guides/development.md, profiling the service). Whatever orjson refuses (a lone
    surrogate in a string, a non-contiguous array) is written by json.dumps instead."""
    try:
        return orjson.dumps(payload, option=orjson.OPT_SERIALIZE_NUMPY)
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(payload, default=_plain).encode()


def _json(payload: Any) -> Response:
    # not FastAPI's jsonable_encoder, which walks every float of a large embedding list
    return Response(json_body(payload), media_type="application/json")


NO_INDEX_NOTE = (
    '<p class="meta" id="no-index">This service has no index, so there is nothing to search here. Start it '
    "with <code>--index DIR</code> (a folder from <code>sentcl index build</code>, or the cache of "
    "<code>sentcl search --index</code>) to search; comparing two sentences below works without one.</p>"
)


def page(searchable: bool = True) -> str:
    """The page; without an index (``searchable`` False) its search form is replaced by a sentence saying
    why there is none and how to get one."""
    html = resources.files("sentcl.serve").joinpath("static/index.html").read_text(encoding="utf-8")
    if searchable:
        return html
    head, _, rest = html.partition("<!--search-->")
    _, _, tail = rest.partition("<!--/search-->")
    return head + NO_INDEX_NOTE + tail


def _as_list(inputs: str | list[str]) -> list[str]:
    return [inputs] if isinstance(inputs, str) else list(inputs)


def token_id_rows(inputs: str | list[str] | list[int] | list[list[int]]) -> list[list[int]] | None:
    """OpenAI's token-id input as a list of id lists (one per input); None for text input."""
    if isinstance(inputs, str) or not inputs or isinstance(inputs[0], str):
        return None
    return [list(row) for row in inputs] if isinstance(inputs[0], list) else [list(inputs)]  # type: ignore[arg-type]


def model_card(service: Service, created: int) -> dict[str, Any]:
    """The served model in OpenAI's ``model`` object shape."""
    return {"id": service.info["model"], "object": "model", "created": created, "owned_by": "sentcl"}


def openai_error(status: int, message: str, code: str) -> Response:
    """OpenAI's error shape, which its clients read (``error.message``, ``error.code``)."""
    body = ServiceError(status, code, message).body(openai=True)
    return Response(
        json.dumps(body), status_code=status, media_type="application/json", headers={"x-error-type": code}
    )


def _hits(index: Any, emb: np.ndarray, k: int) -> list[list[dict[str, Any]]]:
    """Top-k hits of each query (an ANN search may fill fewer than k); an index that can no longer be read (a
    store's version removed under the service) is a 503 naming it."""
    try:
        scores, ids = index.search(emb, k)  # (Q, k), (Q, k)
        found = [int(i) for i in ids[ids >= 0]]  # every hit's row, read back in one call where it can be
        many = getattr(index.texts, "many", None)
        texts = dict(zip(found, many(found) if many else [index.texts[i] for i in found], strict=True))
        return [
            [
                {"id": int(i), "text": texts[int(i)], "score": float(s)}
                for s, i in zip(srow, irow, strict=True)
                if i >= 0
            ]
            for srow, irow in zip(scores, ids, strict=True)
        ]
    except InputChangedError as err:  # the corpus changed under the running service: say so, plainly
        raise ServiceError(
            409,
            "index_stale",
            f"the index this service opened is stale: {err.fact}, so its hits' texts cannot be read; rebuild "
            "the index (sentcl index build ... --overwrite), then POST /index/reload, or restart the service",
        ) from None
    except (OSError, ValueError) as err:
        raise ServiceError(503, "index_unavailable", str(err)) from None


def add_routes(app: FastAPI, service: Service) -> None:
    @app.get("/", include_in_schema=False)
    async def index_page() -> HTMLResponse:
        return HTMLResponse(page(searchable=service.index is not None))

    def index_info(index: Any) -> dict[str, Any]:
        """Size and backend; for a `sentcl index build` folder also type, setting, measured recall."""
        return {
            "size": len(index),
            "backend": getattr(index, "backend", None),
            **getattr(index, "summary", dict)(),
        }

    @app.get("/health")
    async def health() -> Response:
        if service.encoder is None:
            raise ServiceError(503, "unavailable", service.load_error or "the model is loading")
        return _json({"status": "ok"})

    @app.get("/info")
    async def info() -> Response:
        loaded = service.encoder is not None
        index = service.index
        return _json(
            {
                **service.info,
                "ready": loaded,
                "dimension": int(service.encoder.embedding_dim) if loaded else None,
                "max_length": service.max_length if loaded else service.max_length_override,
                "limits": service.limits.as_dict(),
                "index": index_info(index) if index else None,
            }
        )

    @app.post("/embed")
    async def embed(body: EmbedRequest) -> Response:
        emb, _ = await service.embed(_as_list(body.inputs), body.truncate)  # (N, D)
        return _json(unit_rows(emb) if body.normalize else emb)  # (N, D) float32

    @app.post("/similarity")
    async def similarity(body: SimilarityRequest) -> Response:
        """Cosine of the source sentence with each of the sentences."""
        if not body.inputs.sentences:
            raise ServiceError(400, "empty", "no sentence to compare the source sentence with")
        texts = [body.inputs.source_sentence, *body.inputs.sentences]
        emb = unit_rows((await service.embed(texts, body.truncate))[0])  # (1 + S, D)
        return _json(emb[1:] @ emb[0])  # (S,) float32

    @app.post("/search")
    async def search(body: SearchRequest) -> Response:
        """Top-k index entries by cosine: a list of hits for ``query``, a list of lists for ``queries``."""
        index = service.index
        if index is None:
            raise ServiceError(404, "no_index", "no index is loaded: start the service with --index DIR")
        if (body.query is None) == (body.queries is None):
            raise ServiceError(422, "validation", 'send exactly one of "query" and "queries"')
        if body.k > service.limits.max_k:
            raise ServiceError(422, "validation", f"k = {body.k} is over the limit {service.limits.max_k}")
        queries = [body.query] if body.query is not None else list(body.queries or [])
        emb, _ = await service.embed(queries, body.truncate)  # (Q, D)
        hits = await asyncio.to_thread(_hits, index, emb, body.k)
        return _json(hits[0] if body.query is not None else hits)

    @app.post("/index/reload")
    async def reload_index() -> Response:
        """Open the index again where it lives (a store: its newest published version); the one in use keeps
        answering until the new one is checked, and keeps answering if it fails."""
        index = service.index
        if index is None:
            raise ServiceError(404, "no_index", "no index is loaded: start the service with --index DIR")
        try:
            new = await asyncio.to_thread(index.reload)
        except (OSError, ValueError) as err:
            raise ServiceError(409, "reload_failed", f"the index was not reloaded: {err}") from None
        service.index = new
        return _json({"previous": index_info(index), "index": index_info(new)})

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(service.metrics.render(), media_type=PROMETHEUS_TEXT)

    add_openai_routes(app, service)
    answer_head_where_get(app)


def answer_head_where_get(app: FastAPI) -> None:
    """HEAD on every route that answers GET (RFC 9110: a load balancer's probe is often HEAD /health): the
    GET's status and headers, no body (the server drops it); a 405 names the methods in ``Allow``."""
    for route in app.router.routes:
        methods = getattr(route, "methods", None)
        if isinstance(methods, set) and "GET" in methods:
            methods.add("HEAD")


def add_openai_routes(app: FastAPI, service: Service) -> None:
    """OpenAI's /v1/embeddings (text or token ids), /v1/models and /v1/models/{id}."""
    created = int(time.time())  # the service's start: OpenAI's "created" of the served model

    @app.post("/v1/embeddings")
    async def openai_embeddings(body: OpenAIEmbeddingRequest) -> Response:
        """OpenAI's embeddings API; ``dimensions`` < the model's keeps the first values, re-normalised."""
        dim = int(service.encoder.embedding_dim) if service.encoder is not None else None
        if body.dimensions is not None and dim is not None and body.dimensions > dim:
            raise ServiceError(422, "validation", f"dimensions {body.dimensions} > the model's {dim}")
        ids = token_id_rows(body.input)
        given = _as_list(body.input) if ids is None else await service.decode(ids, body.truncate)  # type: ignore[arg-type]
        emb, tokens = await service.embed(given, body.truncate)
        emb = unit_rows(emb[:, : body.dimensions] if body.dimensions else emb)  # (N, d)
        if body.encoding_format == "base64":
            vectors: list[Any] = [base64.b64encode(row.astype("<f4").tobytes()).decode() for row in emb]
        else:
            vectors = list(np.ascontiguousarray(emb, dtype=np.float32))  # N rows (d,) float32
        return _json(
            {
                "object": "list",
                "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
                "model": service.info["model"],
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    @app.get("/v1/models")
    async def openai_models() -> Response:
        return _json({"object": "list", "data": [model_card(service, created)]})

    @app.get("/v1/models/{model_id:path}")
    async def openai_model(model_id: str) -> Response:
        if model_id != service.info["model"]:
            return openai_error(404, f"The model '{model_id}' does not exist", "model_not_found")
        return _json(model_card(service, created))
