"""A student folder is an ordinary sentcl folder: layers [0, 2] of a 4-layer sentence-transformers model plus a
PCA Dense layer, saved, then loaded by sentence-transformers (equal embeddings), exported by ``sentcl export``
to ONNX fp32 and int8 (onnxruntime's embeddings against PyTorch's), and served by a real uvicorn answering
``/v1/embeddings`` (an HTTP client) with the same vectors."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import numpy as np
import pytest
from helpers.data import write_corpus
from helpers.tiny_bert import build_tiny_bert
from modeling.modeling_folders import st_encode, st_folder
from serve.serve_helpers import running_server

from sentcl.cli import main
from sentcl.config import ModelConfig
from sentcl.modeling import SentenceEncoder
from sentcl.modeling.build import build_encoder
from sentcl.modeling.open import open_model
from sentcl.serve.app import create_app

SENTENCES = ["a man plays the guitar", "the dog runs in the garden", "the bank said the price rises", "a"]


@pytest.fixture(scope="module")
def student(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Layers [0, 2] of a 4-layer mean-pooling + Normalize model, then ``sentcl postprocess pca --dim 8``."""
    root = tmp_path_factory.mktemp("student_roundtrip")
    teacher = st_folder(root / "teacher", build_tiny_bert(root / "bert4", seed=7, layers=4), "mean", [], True)
    cut = build_encoder(ModelConfig(name_or_path=str(teacher), student_layers=[0, 2]))
    assert isinstance(cut, SentenceEncoder)
    cut.save_pretrained(root / "cut")
    fit = write_corpus(root / "fit.txt", 80, seed=3)
    argv = ["postprocess", "pca", "--model", str(root / "cut"), "--fit-file", str(fit), "--dim", "8"]
    assert main([*argv, "--output", str(root / "student")]) == 0
    return root / "student"


def test_student_loads_in_sentence_transformers(student: Path) -> None:
    assert json.loads((student / "config.json").read_text())["num_hidden_layers"] == 2
    ours = SentenceEncoder.from_pretrained(str(student)).encode(SENTENCES)
    assert ours.shape == (4, 8)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-6)  # Normalize after the PCA
    np.testing.assert_allclose(st_encode(student, SENTENCES), ours, atol=1e-5)


@pytest.mark.parametrize(("int8", "atol"), [(False, 1e-5), (True, 0.1)])
def test_student_exports_to_onnx(student: Path, tmp_path: Path, int8: bool, atol: float) -> None:
    import onnxruntime as ort
    from transformers import AutoTokenizer

    out = tmp_path / "onnx"
    assert main(["export", "--format", "onnx", str(student), str(out), *(["--int8"] if int8 else [])]) == 0
    tokenizer = AutoTokenizer.from_pretrained(str(out))
    batch = tokenizer(SENTENCES, padding=True, return_tensors="np")
    session = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])
    feeds = {i.name: batch[i.name].astype(np.int64) for i in session.get_inputs()}
    (got,) = session.run(None, feeds)  # (N, 8), the raw onnxruntime session
    want = SentenceEncoder.from_pretrained(str(student)).encode(SENTENCES)
    got = got / np.linalg.norm(got, axis=1, keepdims=True)
    np.testing.assert_allclose(got, want, atol=atol)
    if int8:
        assert float((got * want).sum(axis=1).min()) > 0.99


def test_student_is_served(student: Path) -> None:
    encoder = open_model(str(student))
    want = SentenceEncoder.from_pretrained(str(student)).encode(SENTENCES)
    with running_server(create_app(encoder, model_name="student")) as url:
        resp = httpx.post(f"{url}/v1/embeddings", json={"input": SENTENCES, "model": "student"}, timeout=20)
    assert resp.status_code == 200
    data = resp.json()["data"]
    assert [d["index"] for d in data] == [0, 1, 2, 3]
    np.testing.assert_allclose([d["embedding"] for d in data], want, atol=1e-5)
