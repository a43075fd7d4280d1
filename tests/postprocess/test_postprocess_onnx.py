"""The ONNX export traces the whole encoder, so a whitened or flow model exports with its post-processing:
onnxruntime's embeddings equal PyTorch's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.data import write_corpus

from sentcl.interop.onnx import OnnxEncoder, export_onnx
from sentcl.modeling import SentenceEncoder
from sentcl.postprocess.fit import PostprocessSettings, postprocess_model

SENTENCES = [
    "a man is playing a guitar",
    "the stock price falls",
    "a",
    "the dog runs in the garden near the tree",
]


@pytest.mark.parametrize(
    "settings",
    [
        PostprocessSettings("whitening", dim=12),
        PostprocessSettings("flow", steps=3, levels=2, depth=2, width=8),
    ],
)
def test_onnx_export_applies_the_postprocessing(
    tiny_bert: Path, tmp_path: Path, settings: PostprocessSettings
) -> None:
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg")
    plain = model.encode(SENTENCES)
    postprocess_model(model, settings, [write_corpus(tmp_path / "fit.txt", 60, seed=2)])
    expected = model.encode(SENTENCES, batch_size=2)
    assert not np.allclose(expected[:, :12], plain[:, :12], atol=1e-2)  # the post-processing changed them
    got = OnnxEncoder(export_onnx(model, tmp_path / "onnx")).encode(SENTENCES, batch_size=2)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0)
