"""The service through a real uvicorn on a free 127.0.0.1 port: the official ``openai`` client, and
concurrent clients gathered into one encode call while /health keeps answering and a full queue says 429."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import openai
import pytest
from serve_helpers import GatedEncoder, running_server, unit, wait_for

from sentcl.serve.app import create_app
from sentcl.serve.index import load_search_index
from sentcl.serve.limits import Limits

SENTENCES = ["a man plays the guitar", "the dog runs in the garden", "the bank said the price rises"]


def test_openai_client_against_uvicorn(tiny_encoder: Any, index_dir: Path) -> None:
    index = load_search_index(index_dir, tiny_encoder.embedding_dim)
    app = create_app(tiny_encoder, model_name="tiny-bert", index=index, api_key="k-123")
    want = unit(np.stack([tiny_encoder.encode([s])[0] for s in SENTENCES]))  # (3, D), each alone
    with running_server(app) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="k-123", max_retries=0, timeout=20)
        resp = client.embeddings.create(input=SENTENCES, model="tiny-bert")  # the client's default format
        assert resp.model == "tiny-bert" and [d.index for d in resp.data] == [0, 1, 2]
        np.testing.assert_allclose([d.embedding for d in resp.data], want, atol=1e-5)
        assert resp.usage.prompt_tokens == resp.usage.total_tokens > 0
        floats = client.embeddings.create(input=SENTENCES[0], model="x", encoding_format="float")
        np.testing.assert_allclose(floats.data[0].embedding, want[0], atol=1e-5)
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=f"{url}/v1", api_key="wrong", max_retries=0).embeddings.create(
                input="a", model="x"
            )
        with pytest.raises(openai.BadRequestError) as empty:  # 400 in OpenAI's error shape
            client.embeddings.create(input="", model="x")
        # the client shows the message (not only "Error code: 400") and reads type and code
        assert str(empty.value).startswith("Error code: 400 - ") and "input 0" in str(empty.value)
        assert (empty.value.type, empty.value.code) == ("invalid_request_error", "empty")
        hits = httpx.post(
            f"{url}/search", json={"query": "a dog", "k": 2}, headers={"Authorization": "Bearer k-123"}
        )
        assert hits.status_code == 200 and len(hits.json()) == 2


def test_concurrent_requests_share_one_encode_call(tiny_encoder: Any) -> None:
    """Request 1 holds the encoder; requests 2-6 arrive meanwhile and are encoded in ONE call once it frees;
    /health answers while the batch is held; every answer equals encoding that request alone."""
    gated = GatedEncoder(tiny_encoder)
    app = create_app(gated, limits=Limits(max_wait_ms=1, max_queue=10))
    requests = [
        [f"the dog {w}", "a cat"][: 1 + i % 2] for i, w in enumerate("runs sits eats reads walks".split())
    ]
    with running_server(app) as url, httpx.Client(base_url=url, timeout=20) as http:
        gated.gate.clear()
        with ThreadPoolExecutor(8) as pool:
            first = pool.submit(http.post, "/embed", json={"inputs": ["a man plays"]})
            assert gated.entered.wait(10), "the first request never reached the encoder"
            rest = [pool.submit(http.post, "/embed", json={"inputs": r}) for r in requests]
            service = app.state.service
            wait_for(lambda: service.batcher.depth == sum(map(len, requests)), 10, "the requests to queue")
            health = http.get("/health", timeout=2)  # the event loop is free while encode blocks
            assert health.status_code == 200
            overflow = http.post("/embed", json={"inputs": ["a", "b", "c", "d", "e"]})  # 7 + 5 > 10 waiting
            assert overflow.status_code == 429 and overflow.json()["error_type"] == "overloaded"
            gated.gate.set()
            answers = [f.result(timeout=20) for f in [first, *rest]]
    assert [a.status_code for a in answers] == [200] * 6
    assert len(gated.calls) == 2 and gated.calls[0] == ["a man plays"]  # 2 encode calls for 6 requests
    assert sorted(gated.calls[1]) == sorted(s for r in requests for s in r)  # in arrival order
    for r, a in zip(requests, answers[1:], strict=True):
        want = unit(np.stack([tiny_encoder.encode([s])[0] for s in r]))
        np.testing.assert_allclose(np.array(a.json()), want, atol=1e-5)


def test_openai_token_arrays_and_models(tiny_encoder: Any) -> None:
    """Token arrays sent the way LangChain's OpenAIEmbeddings sends them by default (a list of lists of ints,
    via client.embeddings.create), and a single list; /v1/models and /v1/models/{id} through the client."""
    app = create_app(tiny_encoder, model_name="org/tiny-bert")
    tok = tiny_encoder.tokenizer
    arrays = [tok(s, add_special_tokens=False)["input_ids"] for s in SENTENCES]  # a client's own tokenising
    want = unit(np.stack([tiny_encoder.encode([s])[0] for s in SENTENCES]))  # (3, D), the texts, each alone
    with running_server(app) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0, timeout=20)
        resp = client.embeddings.create(input=arrays, model="org/tiny-bert")
        np.testing.assert_allclose([d.embedding for d in resp.data], want, atol=1e-5)
        with_specials = tok(SENTENCES[1])["input_ids"]  # [CLS] ... [SEP]: dropped, then added back once
        one = client.embeddings.create(input=with_specials, model="org/tiny-bert")
        assert len(one.data) == 1
        np.testing.assert_allclose(one.data[0].embedding, want[1], atol=1e-5)
        with pytest.raises(openai.BadRequestError) as bad:
            client.embeddings.create(input=[[5, 100_277]], model="x")  # a tiktoken id
        assert "outside the model's vocabulary" in str(bad.value) and bad.value.code == "invalid_token_id"
        listed = client.models.list()
        assert [m.id for m in listed.data] == ["org/tiny-bert"]
        model = client.models.retrieve("org/tiny-bert")
        assert (model.id, model.object, model.owned_by) == ("org/tiny-bert", "model", "sentcl")
        assert abs(model.created - time.time()) < 600
        with pytest.raises(openai.NotFoundError) as err:
            client.models.retrieve("gpt-4")
        assert err.value.code == "model_not_found" and "gpt-4" in err.value.message
        raw = httpx.get(f"{url}/v1/models").json()
        assert set(raw) == {"object", "data"} and raw["object"] == "list"
        assert set(raw["data"][0]) == {"id", "object", "created", "owned_by"}


def test_head_wherever_get_and_allow_on_every_405(tiny_encoder: Any, index_dir: Path) -> None:
    """RFC 9110 through the real server: HEAD answers every GET route with GET's status and headers and no
    body; a method a route does not answer is a 405 whose Allow header names the methods it does."""
    index = load_search_index(index_dir, tiny_encoder.embedding_dim)
    app = create_app(tiny_encoder, model_name="tiny-bert", index=index)
    from sentcl.serve.routes import ROUTES

    with running_server(app) as url, httpx.Client(base_url=url, timeout=20) as client:
        for path in sorted(ROUTES) + ["/v1/models/tiny-bert"]:
            get = client.get(path)
            if get.status_code == 405:  # a POST route: every method it does not answer says what it does
                for method in ("GET", "HEAD", "PUT", "DELETE", "PATCH"):
                    refused = client.request(method, path)
                    assert refused.status_code == 405, (method, path)
                    assert refused.headers["allow"] == "POST", (method, path)
                continue
            head = client.head(path)
            assert (head.status_code, head.content) == (get.status_code, b""), path
            assert head.headers["content-type"] == get.headers["content-type"], path
            if path != "/metrics":  # its counters moved on with the GET
                assert head.headers["content-length"] == str(len(get.content)), path
            refused = client.post(path) if path not in ("/health",) else client.delete(path)
            assert refused.status_code == 405 and set(refused.headers["allow"].split(", ")) == {"GET", "HEAD"}
