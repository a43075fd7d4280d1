"""sentcl export --format openvino: OpenVINO's IR beside the ONNX graph, run by OpenVINO (read independently
here with openvino's own Core), against the PyTorch encoder; the folder opens with open_model and the CLI
writes it; --int8 is refused with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import openvino as ov
import pytest

from sentcl.cli import main
from sentcl.interop.onnx import ONNX_CONFIG, export_onnx
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.modeling.onnx_encoder import OPENVINO_MODEL
from sentcl.modeling.open import open_model

SENTENCES = [
    "a man is playing a guitar",
    "the dog runs near the river under the old tree",
    "stock price falls",
]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))  # (N,)


def test_openvino_export_matches_pytorch(tiny_bert: Path, tmp_path: Path) -> None:
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg")
    out = export_onnx(model, tmp_path / "ov", openvino=True)
    meta = json.loads((out / ONNX_CONFIG).read_text(encoding="utf-8"))
    assert meta["runtime"] == "openvino" and (out / OPENVINO_MODEL).is_file()
    assert (out / OPENVINO_MODEL).with_suffix(".bin").is_file()
    expected = model.encode(SENTENCES, batch_size=2)  # (3, 32)
    encoder = open_model(str(out), threads=1)
    assert encoder.backend == "openvino"
    got = encoder.encode(SENTENCES, batch_size=2)
    assert got.shape == expected.shape
    # OpenVINO's default precision (bf16 on a CPU with bf16 instructions): close, not equal
    assert cosines(got, expected).min() > 0.999
    # the IR itself, compiled here in f32 by OpenVINO's own API on the tokenizer's ids: PyTorch's values
    compiled = ov.Core().compile_model(str(out / OPENVINO_MODEL), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    ids = model.tokenizer(SENTENCES[0], return_tensors="np")
    feed = {
        "input_ids": ids["input_ids"].astype(np.int64),
        "attention_mask": ids["attention_mask"].astype(np.int64),
    }
    row = compiled(feed)[compiled.output("sentence_embedding")][0]  # (32,)
    np.testing.assert_allclose(row, expected[0], atol=1e-4)


def test_cli_writes_it_and_refuses_int8(
    tiny_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    assert (
        main(["export", "--format", "openvino", str(tiny_bert), str(tmp_path / "ov"), "--pooler", "avg"]) == 0
    )
    assert "openvino_model.xml" in capsys.readouterr().out and (tmp_path / "ov" / OPENVINO_MODEL).is_file()
    assert main(["export", "--format", "openvino", "--int8", str(tiny_bert), str(tmp_path / "ov8")]) == 2
    assert "--int8" in capsys.readouterr().err
    assert not (tmp_path / "ov8").exists()
