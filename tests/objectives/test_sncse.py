"""SNCSE's loss against its formula written out by hand."""

from __future__ import annotations

import math

import pytest
import torch

from sentcl.methods.sncse.loss import SNCSE
from sentcl.methods.sncse.options import SNCSEOptions


def cos(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a)) / math.sqrt(sum(y * y for y in b))


def test_sncse_matches_hand_formula() -> None:
    torch.manual_seed(0)
    z = torch.randn(5, 3, 4, dtype=torch.float64)  # (B, V=3, D)
    tau, alpha, beta, weight = 0.05, 0.1, 0.3, 1e-3
    out = SNCSE(tau, alpha, beta, weight)(z)
    h, pos, neg = z[:, 0].tolist(), z[:, 1].tolist(), z[:, 2].tolist()
    nce = bml = 0.0
    for i in range(5):
        logits = [cos(h[i], pos[j]) / tau for j in range(5)]
        nce += -logits[i] + math.log(sum(math.exp(x) for x in logits))
        delta = cos(h[i], neg[i]) - cos(h[i], pos[i])
        bml += max(0.0, delta + alpha) + max(0.0, -delta - beta)
    nce, bml = nce / 5, bml / 5
    assert float(out["infonce"]) == pytest.approx(nce, rel=1e-9)
    assert float(out["bml"]) == pytest.approx(bml, rel=1e-9)
    assert float(out["loss"]) == pytest.approx(nce + weight * bml, rel=1e-9)


def test_bml_is_zero_inside_the_band_and_linear_outside() -> None:
    h = torch.tensor([[1.0, 0.0]])
    pos = torch.tensor([[1.0, 0.0]])  # cos(h, h+) = 1
    for cos_neg, expected in ((0.8, 0.0), (0.95, 0.05), (0.5, 0.2)):  # Δ = -0.2, -0.05, -0.5
        neg = torch.tensor([[cos_neg, math.sqrt(1 - cos_neg**2)]])
        z = torch.stack([h, pos, neg], dim=1)  # (1, 3, 2)
        assert float(SNCSE()(z)["bml"]) == pytest.approx(expected, abs=1e-6)
    with pytest.raises(ValueError, match="alpha <= beta"):
        SNCSEOptions(bml_alpha=0.5, bml_beta=0.3)  # checked once, by the options class
