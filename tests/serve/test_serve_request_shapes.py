"""What the service reads a request as, through a real uvicorn and real clients (curl, httpx, the openai
client): a JSON body whatever its Content-Type, no compressed body, ``truncate`` honoured on /v1/embeddings,
strict numbers and booleans, token-id lists bounded by the room the special tokens leave, ``--port`` within
0-65535; and, over generated bodies, never a 500 and always the service's JSON error."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serve_helpers import error_of, running_server, unit

from sentcl.cli import main
from sentcl.serve.app import create_app
from sentcl.serve.index import load_search_index


@pytest.fixture(scope="module")
def served(tiny_encoder: Any, index_dir: Path) -> Any:
    index = load_search_index(index_dir, tiny_encoder.embedding_dim)
    with running_server(create_app(tiny_encoder, model_name="tiny", index=index)) as url:
        yield url


def _want(encoder: Any, texts: list[str]) -> np.ndarray:
    return unit(np.stack([encoder.encode([t])[0] for t in texts]))  # (N, D), each text alone


def test_json_body_sent_with_curls_default_form_content_type_is_read_as_json(
    served: str, tiny_encoder: Any
) -> None:
    """Reliability row SV_curl_form: ``curl -d '{...}'`` (application/x-www-form-urlencoded) got 422 'Input should
    be a valid dictionary'."""
    out = subprocess.run(
        ["curl", "-s", "-X", "POST", f"{served}/embed", "-d", '{"inputs": "a dog"}'],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    np.testing.assert_allclose(np.array(json.loads(out.stdout)), _want(tiny_encoder, ["a dog"]), atol=1e-5)


def test_json_body_sent_as_text_plain_is_read_as_json(served: str, tiny_encoder: Any) -> None:
    """Reliability row SV_ct_text."""
    resp = httpx.post(
        f"{served}/embed", content=b'{"inputs": ["a dog"]}', headers={"Content-Type": "text/plain"}
    )
    assert resp.status_code == 200
    np.testing.assert_allclose(np.array(resp.json()), _want(tiny_encoder, ["a dog"]), atol=1e-5)


def test_a_real_form_body_is_a_400_naming_the_content_type(served: str) -> None:
    resp = httpx.post(f"{served}/embed", data={"inputs": "a dog"})  # inputs=a+dog
    assert resp.status_code == 400
    assert "application/x-www-form-urlencoded" in resp.json()["error"]
    assert "send application/json" in resp.json()["error"]


def test_gzip_body_is_a_415_naming_content_encoding(served: str) -> None:
    """Reliability row SV_gzip_small: answered 'the request body is not UTF-8 text'."""
    body = gzip.compress(b'{"inputs": "a dog"}')
    resp = httpx.post(
        f"{served}/embed",
        content=body,
        headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    assert resp.status_code == 415
    assert resp.json()["error_type"] == "unsupported_media_type" and "Content-Encoding 'gzip'" in resp.text


def test_v1_embeddings_honours_truncate_as_its_422_advises(served: str, tiny_encoder: Any) -> None:
    """Reliability row SV_v1_long_text_trunc: "truncate": true was accepted and ignored."""
    long = " ".join(["word"] * (tiny_encoder.max_length + 40))
    refused = httpx.post(f"{served}/v1/embeddings", json={"input": long})
    assert refused.status_code == 422 and '"truncate": true' in error_of(refused)[0]
    client = openai.OpenAI(base_url=f"{served}/v1", api_key="none", max_retries=0, timeout=30)
    resp = client.embeddings.create(input=long, model="tiny", extra_body={"truncate": True})
    # the encoder's own truncation at its max_length is the reference
    np.testing.assert_allclose(resp.data[0].embedding, _want(tiny_encoder, [long])[0], atol=1e-5)


@pytest.mark.parametrize(
    ("route", "body", "field"),
    [
        ("/v1/embeddings", {"input": "a dog", "dimensions": True}, "dimensions"),  # SV_dimbool
        ("/v1/embeddings", {"input": "a dog", "dimensions": 2.0}, "dimensions"),
        ("/search", {"query": "a dog", "k": True}, "k"),
        ("/embed", {"inputs": "a dog", "normalize": 1}, "normalize"),
        ("/embed", {"inputs": "a dog", "truncate": "yes"}, "truncate"),
    ],
)
def test_a_boolean_is_no_number_and_a_number_no_boolean(
    served: str, route: str, body: dict[str, Any], field: str
) -> None:
    """Reliability row SV_dimbool: "dimensions": true returned a 1-d vector."""
    resp = httpx.post(f"{served}{route}", json=body)
    assert resp.status_code == 422 and error_of(resp)[0].startswith(f"body.{field}:")


def test_token_ids_filling_the_model_length_are_refused_as_ids(served: str, tiny_encoder: Any) -> None:
    """Reliability row SV_tok_exact_limit: max_length ids passed the id check, then failed as max_length + 2
    tokens once re-tokenised with [CLS] and [SEP]."""
    tok = tiny_encoder.tokenizer
    word = tok("dog", add_special_tokens=False)["input_ids"][0]
    room = tiny_encoder.max_length - len(tok("")["input_ids"])
    full = httpx.post(f"{served}/v1/embeddings", json={"input": [word] * tiny_encoder.max_length})
    assert full.status_code == 422
    assert f"has {tiny_encoder.max_length} token ids; the model takes {room} besides" in full.text
    fits = httpx.post(f"{served}/v1/embeddings", json={"input": [word] * room})
    assert fits.status_code == 200
    cut = httpx.post(
        f"{served}/v1/embeddings", json={"input": [word] * tiny_encoder.max_length, "truncate": True}
    )
    np.testing.assert_allclose(
        cut.json()["data"][0]["embedding"], fits.json()["data"][0]["embedding"], atol=1e-5
    )


def test_only_special_token_ids_say_so(served: str, tiny_encoder: Any) -> None:
    """Reliability row SV_tok_specials: [CLS] [SEP] was 'empty or holds only spaces'."""
    tok = tiny_encoder.tokenizer
    resp = httpx.post(f"{served}/v1/embeddings", json={"input": [tok.cls_token_id, tok.sep_token_id]})
    assert resp.status_code == 400 and "all special tokens" in error_of(resp)[0]


def test_token_ids_without_a_text_form_are_refused_naming_one(served: str, tiny_encoder: Any) -> None:
    """SV_tok_unused_inflate: 250 ids of [unused0] (text '[unused0]', 4 tokens again) were reported as 1,002
    tokens over the limit. Here a leading word piece ('##a' three times reads back as 5 tokens); ids of real
    text still embed as that text (checked against the encoder)."""
    tok = tiny_encoder.tokenizer
    piece = tok.convert_tokens_to_ids("##a")
    assert len(tok(tok.decode([piece] * 3), add_special_tokens=False)["input_ids"]) > 3  # the premise
    resp = httpx.post(f"{served}/v1/embeddings", json={"input": [piece] * 3})
    assert resp.status_code == 422, resp.text
    assert f"token id {piece} ('##a') has no text form of its own" in error_of(resp)[0]
    ids = tok("a man plays the guitar", add_special_tokens=False)["input_ids"]
    resp = httpx.post(f"{served}/v1/embeddings", json={"input": ids})
    assert resp.status_code == 200, resp.text
    got = np.array(resp.json()["data"][0]["embedding"])
    np.testing.assert_allclose(got, _want(tiny_encoder, ["a man plays the guitar"])[0], atol=1e-5)


@pytest.mark.parametrize("port", ["70000", "-1", "65536", "http"])
def test_serve_port_outside_0_to_65535_is_refused(
    port: str, tiny_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reliability row SO_port_70000: --port 70000 bound port 4464."""
    with pytest.raises(SystemExit) as exit_:
        main(["serve", str(tiny_bert), "--port", port])
    assert exit_.value.code == 2
    assert "--port" in capsys.readouterr().err


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
_fields = st.sampled_from(["inputs", "input", "query", "queries", "k", "dimensions", "truncate", "normalize"])
_bodies = st.dictionaries(_fields, _json_values, max_size=4)
_types = st.sampled_from(["application/json", "text/plain", "application/x-www-form-urlencoded", None])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    route=st.sampled_from(["/embed", "/similarity", "/v1/embeddings", "/search"]),
    body=_bodies | _json_values,
    content_type=_types,
)
def test_generated_bodies_get_an_answer_or_a_json_error_never_a_500(
    served: str, route: str, body: Any, content_type: str | None
) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    raw = json.dumps(body).encode()  # NaN and infinities as JSON's NaN extension, which the service refuses
    resp = httpx.post(f"{served}{route}", content=raw, headers=headers, timeout=30)
    assert resp.status_code < 500, resp.text
    if resp.status_code >= 400:
        error_of(resp)  # sentcl's error shape, OpenAI's under /v1/
