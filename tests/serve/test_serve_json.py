"""The service's JSON bodies: float32 vectors written as float32 read back bit for bit by Python's own json
reader (generated arrays, hypothesis), json.dumps' text for what orjson refuses, and /embed's body: the
service's vectors, written as float32."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sentcl.serve.app import create_app
from sentcl.serve.routes import json_body

finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@given(arrays(np.float32, st.tuples(st.integers(1, 6), st.integers(1, 40)), elements=finite32))
@settings(max_examples=200, deadline=None)
def test_float32_arrays_read_back_exactly(x: np.ndarray) -> None:
    body = json_body({"data": [{"embedding": row} for row in x], "matrix": x, "model": "m"})
    parsed = json.loads(body)  # Python's own reader: float64 values
    assert np.array_equal(np.array(parsed["matrix"], dtype=np.float64).astype(np.float32), x)
    rows = np.array([d["embedding"] for d in parsed["data"]], dtype=np.float64).astype(np.float32)
    assert np.array_equal(rows, x) and parsed["model"] == "m"
    assert len(json_body(x)) <= len(json.dumps(x.tolist()))  # float32's shortest text: never longer


def test_what_orjson_refuses_is_written_by_json_dumps() -> None:
    strided = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]  # (3, 2), not C-contiguous
    payload = {"name": "bad \udcff byte", "vectors": strided, "n": np.int64(3)}
    parsed = json.loads(json_body(payload))
    assert parsed == {"name": "bad \udcff byte", "vectors": strided.tolist(), "n": 3}


@pytest.fixture()
def client(tiny_encoder: Any) -> TestClient:
    with TestClient(create_app(tiny_encoder, model_name="tiny"), base_url="http://localhost") as c:
        yield c


def test_embed_body_is_the_encoders_float32_vectors(client: TestClient, tiny_encoder: Any) -> None:
    texts = ["a man plays the guitar", "the dog runs in the garden"]
    want = np.asarray(
        tiny_encoder.encode(texts, max_length=tiny_encoder.max_length, normalize=False), np.float32
    )
    resp = client.post("/embed", json={"inputs": texts, "normalize": False})
    got = np.array(resp.json(), np.float64).astype(np.float32)
    np.testing.assert_allclose(got, want, atol=1e-5)  # batching may differ in the last bits from one call
    # written as float32: reading back and writing again as float32 gives the same text, shorter than float64's
    assert json_body(got) == resp.content and len(resp.content) < len(json.dumps(got.tolist()))
