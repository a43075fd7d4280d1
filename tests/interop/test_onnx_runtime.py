"""How sentcl runs an exported graph: the passes ``OnnxEncoder`` cuts (at most ``ORT_MAX_CELLS`` padded cells,
checked against the pass rule read directly, ``helpers.passes.brute_force``) give each sentence's vector as
PyTorch encodes it alone; the session leaves onnxruntime's ``SLOW_FUSIONS`` out of the graph it runs (read back
with onnx), and with them in, the same graph gets them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from helpers.passes import brute_force
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sentcl.interop.onnx import ONNX_MODEL, OnnxEncoder, export_onnx
from sentcl.modeling.batching import MAX_PADDING
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.modeling.onnx_encoder import ORT_MAX_CELLS, SLOW_FUSIONS, _session

WORDS = ["the", "a", "man", "dog", "plays", "guitar", "river", "market", "fell", "runs", "quickly", "music"]


@pytest.fixture(scope="module")
def exported(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[SentenceEncoder, Path, Path]:
    """The tiny BERT (mean pooling), its fp32 export and its int8 export."""
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg").eval()
    work = tmp_path_factory.mktemp("onnx_runtime")
    return model, export_onnx(model, work / "fp32"), export_onnx(model, work / "int8", int8=True)


class _Spy:
    """The encoder's real session, recording the shape of every pass it is fed."""

    def __init__(self, session: Any) -> None:
        self.session, self.shapes = session, []

    def run(self, names: list[str], feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        self.shapes.append(feed["input_ids"].shape)
        return self.session.run(names, feed)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=60), min_size=1, max_size=40))
@example([WORDS * 6, ["a"]])  # a sentence past the model's max length: cut there, as the encoder does
def test_passes_keep_the_cell_budget(
    exported: tuple[SentenceEncoder, Path, Path], words: list[list[str]]
) -> None:
    model, fp32, _ = exported
    sentences = [" ".join(w) for w in words]
    encoder = OnnxEncoder(fp32)
    spy = _Spy(encoder.session)
    encoder.session = spy
    got = encoder.encode(sentences)  # (N, D)
    # cut at the model's length, as the encoder does
    ids = model.tokenizer(sentences, truncation=True, max_length=model.max_length)["input_ids"]
    lengths = sorted((len(x) for x in ids), reverse=True)
    spans = brute_force(lengths, 128, ORT_MAX_CELLS, MAX_PADDING)
    assert spy.shapes == [(end - start, lengths[start]) for start, end in spans]
    alone = np.stack([model.encode([s])[0] for s in sentences])  # (N, D), PyTorch, one sentence a pass
    np.testing.assert_allclose(got, alone, atol=1e-4, rtol=0)


def test_named_example_of_the_budget(exported: tuple[SentenceEncoder, Path, Path]) -> None:
    """Forty sentences of 4 + 2 tokens: 85 of them fit 512 cells (85 × 6 = 510), so forty make one pass; forty
    of 20 + 2 tokens make two, 23 (506 cells) and 17."""
    _, fp32, _ = exported
    encoder = OnnxEncoder(fp32)
    spy = _Spy(encoder.session)
    encoder.session = spy
    encoder.encode(["the man plays guitar"] * 40)
    encoder.encode([" ".join(["dog"] * 20)] * 40)
    assert spy.shapes == [(40, 6), (23, 22), (17, 22)]


def session_ops(graph: Path, tmp_path: Path, disabled: tuple[str, ...]) -> list[str]:
    """The operators of the graph an onnxruntime session of sentcl runs, read back with onnx."""
    written = tmp_path / f"optimized-{len(disabled)}.onnx"
    _session(graph, 1, disabled, optimized_to=written)
    return [node.op_type for node in onnx.load(str(written)).graph.node]


@pytest.mark.parametrize("which", [1, 2])
def test_session_leaves_the_slow_fusions_out(
    exported: tuple[SentenceEncoder, Path, Path], tmp_path: Path, which: int
) -> None:
    """The fp32 and the int8 export: sentcl's session keeps each residual Add and LayerNormalization apart; with
    every fusion of onnxruntime on, the same file runs SkipLayerNormalization (so the check can fail)."""
    graph = exported[which] / ONNX_MODEL
    assert SLOW_FUSIONS == ("SkipLayerNormFusion",)
    ours = session_ops(graph, tmp_path, SLOW_FUSIONS)
    everything = session_ops(graph, tmp_path, ())
    assert "SkipLayerNormalization" not in ours and ours.count("LayerNormalization") >= 2 * 2  # two a layer
    assert everything.count("SkipLayerNormalization") >= 2  # two layers, at least one fused in each
