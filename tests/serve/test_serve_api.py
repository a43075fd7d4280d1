"""The service in process, through FastAPI's TestClient (httpx): every route against numpy references
computed from the encoder itself, every limit's JSON error, authentication and the metrics' text format."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from serve_helpers import error_of, unit

from sentcl.serve.app import create_app
from sentcl.serve.auth import API_KEY_ENV, resolve_api_key
from sentcl.serve.index import load_search_index
from sentcl.serve.limits import Limits

SENTENCES = ["a man plays the guitar", "the dog runs in the garden", "the bank said the price rises"]

LOCAL = "http://localhost"  # a Host the service answers (TestClient's default "testserver" is refused)


@pytest.fixture(scope="module")
def index(tiny_encoder: Any, index_dir: Path) -> Any:
    return load_search_index(index_dir, tiny_encoder.embedding_dim)


@pytest.fixture()
def client(tiny_encoder: Any, index: Any) -> TestClient:
    app = create_app(tiny_encoder, model_name="tiny", index=index, limits=Limits(max_client_batch=4))
    with TestClient(app, base_url=LOCAL) as c:
        yield c


def reference(encoder: Any, texts: list[str], max_length: int | None = None) -> np.ndarray:
    """Each sentence encoded alone (no batching, no padding), the independent reference."""
    limit = max_length or encoder.max_length
    return np.stack([encoder.encode([t], max_length=limit)[0] for t in texts])  # (N, D)


def assert_error(resp: Any, status: int, error_type: str) -> None:
    assert resp.status_code == status, resp.text
    assert error_of(resp)[1] == error_type, resp.text


def test_embed_matches_encoding_each_sentence_alone(client: TestClient, tiny_encoder: Any) -> None:
    ref = reference(tiny_encoder, SENTENCES)
    raw = client.post("/embed", json={"inputs": SENTENCES, "normalize": False})
    assert raw.status_code == 200
    np.testing.assert_allclose(np.array(raw.json()), ref, atol=1e-5)
    normed = np.array(client.post("/embed", json={"inputs": SENTENCES}).json())  # normalize defaults to true
    np.testing.assert_allclose(normed, unit(ref), atol=1e-5)
    single = client.post("/embed", json={"inputs": SENTENCES[1]}).json()
    assert len(single) == 1 and np.allclose(single[0], unit(ref[1]), atol=1e-5)


def test_similarity_is_the_cosine(client: TestClient, tiny_encoder: Any) -> None:
    ref = reference(tiny_encoder, SENTENCES)
    body = {"inputs": {"source_sentence": SENTENCES[0], "sentences": SENTENCES[1:]}}
    got = client.post("/similarity", json=body).json()
    want = [float(ref[0] @ r / (np.linalg.norm(ref[0]) * np.linalg.norm(r))) for r in ref[1:]]
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_openai_route_in_process(client: TestClient, tiny_encoder: Any) -> None:
    ref = unit(reference(tiny_encoder, SENTENCES[:2]))
    resp = client.post("/v1/embeddings", json={"input": SENTENCES[:2], "model": "anything"}).json()
    assert resp["model"] == "tiny" and [d["index"] for d in resp["data"]] == [0, 1]
    np.testing.assert_allclose([d["embedding"] for d in resp["data"]], ref, atol=1e-5)
    tokens = sum(len(tiny_encoder.tokenizer(s)["input_ids"]) for s in SENTENCES[:2])
    assert resp["usage"] == {"prompt_tokens": tokens, "total_tokens": tokens}
    b64 = client.post("/v1/embeddings", json={"input": SENTENCES[0], "encoding_format": "base64"}).json()
    decoded = np.frombuffer(base64.b64decode(b64["data"][0]["embedding"]), dtype="<f4")
    np.testing.assert_allclose(decoded, ref[0], atol=1e-6)
    short = client.post("/v1/embeddings", json={"input": SENTENCES[0], "dimensions": 8}).json()
    np.testing.assert_allclose(short["data"][0]["embedding"], unit(ref[0][:8]), atol=1e-5)
    ids = tiny_encoder.tokenizer(SENTENCES[:2])["input_ids"]  # token-id input: decoded, then embedded
    by_ids = client.post("/v1/embeddings", json={"input": ids}).json()
    np.testing.assert_allclose([d["embedding"] for d in by_ids["data"]], ref, atol=1e-5)
    assert_error(client.post("/v1/embeddings", json={"input": [[1, 2, 10**6]]}), 400, "invalid_token_id")
    assert_error(client.post("/v1/embeddings", json={"input": [True, False]}), 422, "validation")  # not ids
    assert_error(client.post("/v1/embeddings", json={"input": "x", "dimensions": 999}), 422, "validation")


def test_search_ranks_like_a_brute_force_cosine(client: TestClient, tiny_encoder: Any, index: Any) -> None:
    corpus = reference(tiny_encoder, index.texts)  # (N, D)
    queries = ["a dog in the garden", "the market price"]
    q = reference(tiny_encoder, queries)  # (Q, D)
    scores = unit(q) @ unit(corpus).T  # (Q, N)
    hits = client.post("/search", json={"queries": queries, "k": 3}).json()
    for row, got in zip(scores, hits, strict=True):
        want = np.argsort(-row, kind="stable")[:3]
        assert [h["id"] for h in got] == want.tolist()
        assert [h["text"] for h in got] == [index.texts[i] for i in want]
        np.testing.assert_allclose([h["score"] for h in got], row[want], atol=1e-5)
    one = client.post("/search", json={"query": queries[0], "k": 2}).json()
    assert [h["id"] for h in one] == [h["id"] for h in hits[0][:2]]
    assert_error(client.post("/search", json={"query": "a", "k": 101}), 422, "validation")
    assert_error(client.post("/search", json={"query": "a", "queries": ["b"]}), 422, "validation")


def test_search_without_an_index_is_404(tiny_encoder: Any) -> None:
    with TestClient(create_app(tiny_encoder), base_url=LOCAL) as c:
        assert_error(c.post("/search", json={"query": "a dog"}), 404, "no_index")
        assert c.get("/info").json()["index"] is None


def test_limits_answer_clear_json_errors(client: TestClient, tiny_encoder: Any) -> None:
    assert_error(client.post("/embed", json={"inputs": ["a"] * 5}), 413, "too_many_inputs")
    assert_error(client.post("/embed", json={"inputs": []}), 400, "empty")
    assert_error(client.post("/embed", json={"inputs": ["a dog", "  "]}), 400, "empty")
    assert_error(client.post("/embed", json={"inputs": ""}), 400, "empty")
    long_text = " ".join(["dog"] * 100)  # 102 tokens; the tiny model takes 64
    assert_error(client.post("/embed", json={"inputs": long_text}), 422, "input_too_long")
    cut = client.post("/embed", json={"inputs": long_text, "truncate": True, "normalize": False})
    np.testing.assert_allclose(cut.json()[0], tiny_encoder.encode([long_text], max_length=64)[0], atol=1e-5)
    bad = client.post("/embed", content=b'{"inputs": ["a"', headers={"content-type": "application/json"})
    assert_error(bad, 400, "malformed_json")
    assert_error(client.post("/embed", json={"inputs": 3}), 422, "validation")
    assert_error(client.post("/embed", json=["a"]), 422, "validation")
    assert_error(client.get("/nowhere"), 404, "not_found")
    assert_error(client.get("/embed"), 405, "method_not_allowed")


def test_request_body_cap(tiny_encoder: Any) -> None:
    app = create_app(tiny_encoder, limits=Limits(max_body_bytes=200))
    with TestClient(app, base_url=LOCAL) as c:
        assert c.post("/embed", json={"inputs": "a dog"}).status_code == 200
        assert_error(c.post("/embed", json={"inputs": "dog " * 100}), 413, "payload_too_large")

        def chunks():  # no content-length: the cap holds on the streamed body too
            yield b'{"inputs": "'
            for _ in range(10):
                yield b"dog " * 10
            yield b'"}'

        assert_error(c.post("/embed", content=chunks()), 413, "payload_too_large")


def test_api_key(tiny_encoder: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    with TestClient(create_app(tiny_encoder, api_key="s3cret"), base_url=LOCAL) as c:
        assert_error(c.post("/embed", json={"inputs": "a"}), 401, "unauthorized")
        wrong = c.post("/embed", json={"inputs": "a"}, headers={"Authorization": "Bearer nope"})
        assert_error(wrong, 401, "unauthorized")
        assert wrong.headers["www-authenticate"] == "Bearer"
        ok = c.post("/embed", json={"inputs": "a"}, headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200
        assert_error(c.get("/metrics"), 401, "unauthorized")
        assert c.get("/health").status_code == 200 and c.get("/").status_code == 200  # public
    monkeypatch.setenv(API_KEY_ENV, "from-env")
    assert resolve_api_key(None) == "from-env" and resolve_api_key("cli") == "cli"
    monkeypatch.delenv(API_KEY_ENV)
    assert resolve_api_key(None) is None
    for given in ("", " "):  # a key given but empty turns nothing off without a word, whichever way it came
        monkeypatch.setenv(API_KEY_ENV, given)
        with pytest.raises(ValueError, match=r"\$SENTCL_API_KEY is (empty|blank)"):
            resolve_api_key(None)
        with pytest.raises(ValueError, match="--api-key is (empty|blank)"):
            resolve_api_key(given)


def test_info_and_page(client: TestClient, tiny_encoder: Any, index: Any) -> None:
    info = client.get("/info").json()
    assert info["dimension"] == tiny_encoder.embedding_dim == 32
    assert (info["model"], info["pooler"], info["backend"], info["max_length"]) == (
        "tiny",
        "avg",
        "torch",
        64,
    )
    assert info["limits"]["max_client_batch"] == 4 and info["index"]["size"] == len(index)
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert 'id="query"' in page.text and 'id="sentence-a"' in page.text
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page.text), (
        "the page must not load remote files"
    )


def test_health_is_503_until_the_model_has_loaded(tiny_encoder: Any) -> None:
    import threading

    from serve_helpers import wait_for

    release = threading.Event()

    def load() -> Any:
        assert release.wait(10)
        return tiny_encoder

    with TestClient(create_app(load=load), base_url=LOCAL) as c:
        assert_error(c.get("/health"), 503, "unavailable")
        assert_error(c.post("/embed", json={"inputs": "a"}), 503, "unavailable")
        release.set()
        wait_for(lambda: c.get("/health").status_code == 200, 10, "/health to turn 200")
        assert c.post("/embed", json={"inputs": "a"}).status_code == 200


METRIC_LINE = re.compile(r'^([a-z_]+)(\{([a-z_]+="[^"]*")(,[a-z_]+="[^"]*")*\})? (-?[0-9.e+-]+|\+Inf)$')


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text format, checked line by line: ``name{labels} value`` keyed by ``name{labels}``."""
    values = {}
    for line in text.strip().splitlines():
        if line.startswith("# "):
            assert re.match(r"^# (HELP|TYPE) [a-z_]+ ", line), line
            continue
        match = METRIC_LINE.match(line)
        assert match, f"not a Prometheus sample line: {line!r}"
        key, value = line.rsplit(" ", 1)
        values[key] = float(value)
    return values


def test_metrics_count_requests_errors_batches(client: TestClient) -> None:
    for _ in range(3):
        client.post("/embed", json={"inputs": ["a dog", "a cat"]})
    client.post("/embed", json={"inputs": ["a"] * 5})  # 413
    m = parse_metrics(client.get("/metrics").text)
    assert m['sentcl_requests_total{route="/embed",status="200"}'] == 3
    assert m['sentcl_requests_total{route="/embed",status="413"}'] == 1
    assert m['sentcl_errors_total{error_type="too_many_inputs",route="/embed"}'] == 1
    assert m['sentcl_request_seconds_count{route="/embed"}'] == 4
    assert m["sentcl_batch_sentences_count"] == 3 and m["sentcl_batch_sentences_sum"] == 6
    assert m['sentcl_batch_sentences_bucket{le="1"}'] == 0 and m['sentcl_batch_sentences_bucket{le="2"}'] == 3
    buckets = [v for k, v in m.items() if k.startswith('sentcl_request_seconds_bucket{route="/embed"')]
    assert buckets == sorted(buckets) and buckets[-1] == 4  # cumulative, +Inf = count
    assert m["sentcl_queue_sentences"] == 0


class CountingEncoder:
    """Not a PyTorch module: only the interface the service relies on (an ONNX encoder has the same)."""

    embedding_dim = 3
    max_length = 64

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def encode(self, sentences: list[str], batch_size: int, max_length: int, normalize: bool) -> np.ndarray:
        assert max_length == 64 and not normalize and batch_size > 0
        return np.array([[len(s), s.count("a"), 1.0] for s in sentences], dtype=np.float32)


def test_any_encoder_with_the_interface(tiny_encoder: Any) -> None:
    with TestClient(
        create_app(CountingEncoder(tiny_encoder.tokenizer), model_name="counting"), base_url=LOCAL
    ) as c:
        got = c.post("/embed", json={"inputs": ["a cat", "dog"], "normalize": False}).json()
        assert got == [[5.0, 2.0, 1.0], [3.0, 0.0, 1.0]]
        info = c.get("/info").json()
        assert (info["backend"], info["dimension"], info["max_length"]) == ("CountingEncoder", 3, 64)


def test_token_ids_over_the_length(tiny_encoder: Any) -> None:
    """Ids past the model's 64: 422 by default; with --auto-truncate the first 64 are decoded and embedded,
    like the text they decode to; an id past the vocabulary is looked at only where it is kept."""
    tok = tiny_encoder.tokenizer
    ids = tok(" ".join(["dog"] * 100), add_special_tokens=False)["input_ids"]  # 100 ids
    with TestClient(create_app(tiny_encoder), base_url=LOCAL) as c:
        assert_error(c.post("/v1/embeddings", json={"input": ids}), 422, "input_too_long")
    with TestClient(create_app(tiny_encoder, limits=Limits(auto_truncate=True)), base_url=LOCAL) as c:
        got = c.post("/v1/embeddings", json={"input": [*ids, 10**9]}).json()["data"][0]["embedding"]
    want = tiny_encoder.encode([tok.decode(ids[:64])], max_length=64)[0]
    np.testing.assert_allclose(got, unit(want), atol=1e-5)


def test_a_fault_of_the_service_is_a_json_500(tiny_encoder: Any) -> None:
    class BrokenIndex:
        texts = ["a"]

        def __len__(self) -> int:
            return 1

        def search(self, queries: np.ndarray, k: int) -> Any:
            raise RuntimeError("disk gone")

    app = create_app(tiny_encoder, index=BrokenIndex())
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as c:
        resp = c.post("/search", json={"query": "a dog", "k": 1})
    assert_error(resp, 500, "internal")
    assert resp.headers["content-type"] == "application/json" and "RuntimeError" in resp.json()["error"]


def test_counting_an_input_over_the_models_length_warns_nothing(
    tiny_encoder: Any, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service counts every token of an input to refuse one over the model's length (422): transformers'
    "Token indices sequence length is longer than ... (821 > 512)" warning repeated that in the log."""
    key = "sequence-length-is-longer-than-the-specified-maximum"  # transformers' once-a-tokenizer flag
    # the tiny tokenizer declares no maximum: give it the model's, as a real tokenizer (512) does
    monkeypatch.setattr(tiny_encoder.tokenizer, "model_max_length", tiny_encoder.max_length)
    app = create_app(tiny_encoder, model_name="tiny")
    service = app.state.service
    tokenizers = [t for t in (service._count_tokenizer, service._loop_tokenizer, tiny_encoder.tokenizer) if t]
    for tok in tokenizers:
        tok.deprecation_warnings.pop(key, None)
    long = " ".join(["word"] * (tiny_encoder.max_length + 10))
    with TestClient(app, base_url=LOCAL) as c:
        assert_error(c.post("/embed", json={"inputs": [long]}), 422, "input_too_long")
    assert not [t for t in tokenizers if t.deprecation_warnings.get(key)]
    assert "Token indices sequence length" not in capfd.readouterr().err


def test_a_static_model_counts_the_tokens_it_reads(tiny_bert: Path, tmp_path: Path) -> None:
    """A static model reads its text's tokens alone, no [CLS]/[SEP]: an input of exactly its limit in tokens
    is embedded (as the model embeds it directly), one more is refused naming the count, and token ids count
    the same way."""
    from transformers import AutoTokenizer

    from sentcl.modeling.open import open_model
    from sentcl.modeling.static import STATIC_MAX_TOKENS, save_static

    rust = AutoTokenizer.from_pretrained(str(tiny_bert)).backend_tokenizer
    table = np.random.default_rng(5).normal(size=(rust.get_vocab_size(), 6)).astype(np.float32)
    save_static(tmp_path / "static", rust, table, normalize=True)
    model = open_model(str(tmp_path / "static"))
    word = next(
        w for w in ("dog", "cat", "the", "a") if len(rust.encode(w, add_special_tokens=False).ids) == 1
    )
    limit = STATIC_MAX_TOKENS
    with TestClient(create_app(model, model_name="static"), base_url=LOCAL) as c:
        for n in (limit - 1, limit):
            resp = c.post("/embed", json={"inputs": [" ".join([word] * n)]})
            assert resp.status_code == 200, resp.text
            np.testing.assert_allclose(
                unit(np.asarray(resp.json())), unit(model.encode([" ".join([word] * n)])), atol=1e-6
            )
        over = c.post("/embed", json={"inputs": [" ".join([word] * (limit + 1))]})
        assert over.status_code == 422 and str(limit) in over.json()["error"]
        ids = rust.encode(word, add_special_tokens=False).ids * limit
        usage = c.post("/v1/embeddings", json={"input": ids, "model": "static"})
        assert usage.status_code == 200, usage.text
        assert usage.json()["usage"]["prompt_tokens"] == limit
        assert c.post("/v1/embeddings", json={"input": ids + ids[:1], "model": "static"}).status_code == 422
