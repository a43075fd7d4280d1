"""sentcl_onnx.json tells what the graph computes: ``head`` and ``normalize`` are checked against the ONNX outputs
(run by onnxruntime directly) and hand-computed references; ``max_length`` is the inference truncation. The
exporter's own log is one line unless ``-v``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from sentcl.files.paths import resolve_model_path
from sentcl.interop.onnx import ONNX_CONFIG, ONNX_MODEL, export_onnx
from sentcl.modeling.encoder import SentenceEncoder

SENTENCES = ["a man is playing a guitar", "stock price falls", "the dog runs near the river", "a"]


def graph_rows(folder: Path, sentences: list[str]) -> np.ndarray:
    """The graph's output for ``sentences``, straight from onnxruntime (no sentcl code in between)."""
    tok = AutoTokenizer.from_pretrained(str(folder))
    batch = tok(sentences, padding=True, return_tensors="np")
    session = ort.InferenceSession(str(folder / ONNX_MODEL), providers=["CPUExecutionProvider"])
    feed = {k: batch[k].astype(np.int64) for k in ("input_ids", "attention_mask")}
    return session.run(["sentence_embedding"], feed)[0]


@pytest.mark.parametrize("mlp_only_train", [False, True])
def test_head_says_what_the_graph_applies(tiny_bert: Path, tmp_path: Path, mlp_only_train: bool) -> None:
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="cls", for_training=True)
    model.mlp_only_train = mlp_only_train
    model.save_pretrained(tmp_path / "saved")
    out = export_onnx(str(tmp_path / "saved"), tmp_path / "onnx")
    meta = json.loads((out / ONNX_CONFIG).read_text(encoding="utf-8"))
    rows = graph_rows(out, SENTENCES)
    # references by hand: [CLS] of the plain backbone, and tanh(W cls + b) with the saved head
    tok = AutoTokenizer.from_pretrained(str(tiny_bert))
    batch = tok(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        cls = AutoModel.from_pretrained(str(tiny_bert))(**batch).last_hidden_state[:, 0].numpy()
    w, b = model.head.dense.weight.detach().numpy(), model.head.dense.bias.detach().numpy()
    with_head = np.tanh(cls @ w.T + b)
    assert meta["head"] is (not mlp_only_train)
    np.testing.assert_allclose(rows, with_head if meta["head"] else cls, atol=1e-4)
    assert not np.allclose(rows, cls if meta["head"] else with_head, atol=1e-2)


def test_normalize_says_whether_rows_have_unit_length(tiny_bert: Path, tmp_path: Path) -> None:
    """MiniLM's folder ends in a Normalize module: its rows have unit length and the metadata says so; the tiny
    model's mean-pooled rows do not, and the metadata says that too. max_length is the inference length."""
    mini = Path(resolve_model_path("all-MiniLM-L6-v2"))
    st_config = json.loads((mini / "sentence_bert_config.json").read_text(encoding="utf-8"))
    for source, folder in ((str(mini), tmp_path / "mini"), (str(tiny_bert), tmp_path / "tiny")):
        export_onnx(source, folder, pooler="avg")
        meta = json.loads((folder / ONNX_CONFIG).read_text(encoding="utf-8"))
        norms = np.linalg.norm(graph_rows(folder, SENTENCES), axis=1)
        assert meta["normalize"] is bool(np.allclose(norms, 1.0, atol=1e-4)), (source, norms)
        assert meta["head"] is False
    assert json.loads((tmp_path / "mini" / ONNX_CONFIG).read_text())["normalize"] is True
    assert json.loads((tmp_path / "tiny" / ONNX_CONFIG).read_text())["normalize"] is False
    assert (
        json.loads((tmp_path / "mini" / ONNX_CONFIG).read_text())["max_length"] == st_config["max_seq_length"]
    )


def _export_lines(tiny_bert: Path, out: Path, *flags: str) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "sentcl.cli",
        *flags,
        "export",
        "--format",
        "onnx",
        str(tiny_bert),
        str(out),
        "--int8",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True)
    return (done.stdout + done.stderr).splitlines()


@pytest.mark.slow
def test_export_prints_one_line_unless_verbose(tiny_bert: Path, tmp_path: Path) -> None:
    quiet = _export_lines(tiny_bert, tmp_path / "quiet")
    quiet = [
        line for line in quiet if not line.startswith("INFO sentcl:")
    ]  # the loader's own note on the model
    assert len(quiet) == 1 and quiet[0].startswith(f"wrote {tmp_path / 'quiet' / ONNX_MODEL}"), quiet
    verbose = _export_lines(tiny_bert, tmp_path / "verbose", "-v")
    assert len(verbose) > 5 and any("fusion" in line.lower() or "quantiz" in line.lower() for line in verbose)
