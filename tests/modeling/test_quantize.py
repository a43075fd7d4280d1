"""The int8 inference mode: which layers are quantised, the original untouched, embeddings close to fp32,
and a quantised Linear against its definition computed by hand in numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from sentcl.cli import main
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.modeling.quantize import default_selection, quantize_int8

SENTENCES = ["a man is playing a guitar", "the dog runs near the river", "stock price falls", "hello there"]


def linear_names(module: nn.Module) -> set[str]:
    return {n for n, m in module.named_modules() if type(m) is nn.Linear}


def test_selected_layers_are_int8_and_the_original_is_untouched(tiny_bert: Path) -> None:
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    fp32_linears = linear_names(model)
    int8 = quantize_int8(model)
    assert linear_names(model) == fp32_linears and all(
        torch.equal(before[k], v) for k, v in model.state_dict().items()
    )
    still_fp32 = linear_names(int8)
    expected_fp32 = {n for n in fp32_linears if not default_selection(n)}
    assert still_fp32 == expected_fp32
    assert any(n.endswith("intermediate.dense") for n in fp32_linears - still_fp32)
    assert all(n.endswith("output.dense") or "pooler" in n for n in still_fp32)


def test_int8_embeddings_stay_close_to_fp32(tiny_bert: Path) -> None:
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg")
    fp32 = model.encode(SENTENCES, normalize=True)
    int8 = quantize_int8(model).encode(SENTENCES, normalize=True)
    cosines = (fp32 * int8).sum(axis=1)
    assert cosines.min() > 0.99, cosines
    assert not np.array_equal(fp32, int8), "the quantised model computes something else than fp32"


def test_quantised_linear_stays_within_its_rounding_bound() -> None:
    """Per-channel int8 weights (step s_w[c] = max|W_c| / 127) times activations quantised per tensor (step
    s_x = range / 127 at worst, with fbgemm's reduced range): each product's rounding errors give the bound
    |y_c − ŷ_c| ≤ Σ_k (|x_k| · s_w[c] / 2 + |W_ck| · s_x / 2 + s_w[c] · s_x / 4), computed here in numpy."""
    torch.manual_seed(0)
    layer = nn.Sequential(nn.Linear(64, 32))  # quantize_int8 takes any module; "0" names the Linear
    x = torch.randn(8, 64)
    got = quantize_int8(layer, lambda n: n == "0")(x).detach().numpy()  # type: ignore[arg-type]
    w, b, xs = layer[0].weight.detach().numpy(), layer[0].bias.detach().numpy(), x.numpy()
    exact = xs @ w.T + b  # (8, 32)
    s_w = np.abs(w).max(axis=1) / 127.0  # (32,)
    s_x = (max(xs.max(), 0.0) - min(xs.min(), 0.0)) / 127.0
    bound = (
        np.abs(xs).sum(axis=1, keepdims=True) * s_w / 2 + np.abs(w).sum(axis=1) * s_x / 2 + 64 * s_w * s_x / 4
    )
    error = np.abs(got - exact)
    assert error.max() > 1e-4, "the layer really is quantised"
    assert (error <= bound).all(), float((error / bound).max())


def test_nothing_selected_is_an_error(tiny_bert: Path) -> None:
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg")
    with pytest.raises(ValueError, match="no nn.Linear layer selected"):
        quantize_int8(model, lambda name: False)


def test_encode_cli_int8(tiny_bert: Path, tmp_path: Path) -> None:
    text = tmp_path / "s.txt"
    text.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    for flag, name in (([], "fp32.npy"), (["--int8"], "int8.npy")):
        args = ["encode", "--model", str(tiny_bert), "--pooler", "avg", "--input", str(text), "--normalize"]
        assert main([*args, "--output", str(tmp_path / name), *flag]) == 0
    fp32, int8 = np.load(tmp_path / "fp32.npy"), np.load(tmp_path / "int8.npy")
    assert fp32.shape == int8.shape == (len(SENTENCES), fp32.shape[1])
    assert (fp32 * int8).sum(axis=1).min() > 0.99 and not np.array_equal(fp32, int8)
